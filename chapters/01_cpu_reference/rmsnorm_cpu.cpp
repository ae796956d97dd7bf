// Chapter 01 — CPU reference: RMSNorm, LayerNorm and GELU as plain C++ loops.
//
// What this stage is: the definition every GPU chapter must reproduce, written
// the obvious way, one row at a time on one CPU thread, accumulating in fp32 the
// way the GPU kernels will (the float64 references in kernelbook.reference are
// the ground truth; this file shows what fp32 accumulation costs in accuracy).
//
//   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * weight
//   LayerNorm: y = (x - mean) / sqrt(var + eps) * weight + bias   (biased var,
//              two passes: the mean first, then the variance of x - mean)
//   GELU:      erf form  0.5 x (1 + erf(x / sqrt 2))
//              tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//
// Limits: one thread, no SIMD pragmas; the sums are sequential, so their
// rounding error grows with the row length (the notebook measures it).
// All pointers are contiguous float32 arrays; sizes are 64-bit.
//
// Build alone:   g++ -std=c++17 -O2 -c rmsnorm_cpu.cpp

#include <cmath>
#include <cstdint>

void rmsnorm_cpu(const float* x, const float* weight, float* y,
                 int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
    for (int64_t i = 0; i < cols; ++i) sum += xr[i] * xr[i];
    const float inv_rms = 1.0f / std::sqrt(sum / static_cast<float>(cols) + eps);
    for (int64_t i = 0; i < cols; ++i) yr[i] = xr[i] * inv_rms * weight[i];
  }
}

void layernorm_cpu(const float* x, const float* weight, const float* bias, float* y,
                   int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
    for (int64_t i = 0; i < cols; ++i) sum += xr[i];
    const float mean = sum / static_cast<float>(cols);
    float sq = 0.0f;  // variance of the centred values: no cancellation of E[x^2] - mean^2
    for (int64_t i = 0; i < cols; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const float inv_std = 1.0f / std::sqrt(sq / static_cast<float>(cols) + eps);
    for (int64_t i = 0; i < cols; ++i) yr[i] = (xr[i] - mean) * inv_std * weight[i] + bias[i];
  }
}

void gelu_erf_cpu(const float* x, float* y, int64_t n) {
  const float inv_sqrt2 = 0.70710678118654752f;
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

void gelu_tanh_cpu(const float* x, float* y, int64_t n) {
  const float k = 0.79788456080286536f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    // std::tanh saturates to +-1 for large |v|, so the result stays finite.
    y[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}
