// Chapter 04 — warp shuffle (fp32 RMSNorm)
//
//   y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * weight[i]
//
// What this stage adds over chapter 03: the block reduction. Chapter 03 adds the
// 256 partial sums with a shared-memory tree: 8 levels, a barrier after each, and
// fewer active threads every level. Here each warp first adds its 32 values in
// registers with __shfl_xor_sync (5 steps, no shared memory, no barrier); lane 0
// of each warp writes one value to shared memory; one barrier; then every warp
// adds the 8 warp sums, again with shuffles. One barrier per row instead of 10.
//
// The butterfly (xor) pattern leaves the total in every lane, so no broadcast
// through shared memory is needed. The 8 warp sums live in one of two slots
// chosen by the row's parity: a fast warp can start the next row while slow
// warps still read this row's slot.
//
// The row is still cached in dynamic shared memory as in chapter 03 (same limit,
// same fallback for rows that do not fit: x is then read twice).
//
// Works for any number of rows (0, 1, more than 65,535) and any row length >= 1;
// offsets are 64-bit. x, weight and y must be contiguous; y must not alias x.
//
// Build alone:   nvcc -std=c++17 -arch=sm_90 -c rmsnorm_warp.cu
// Measured:      % of the copy of x in the same rounds (kernelbook.bench), fp32, 256 MiB
//                moved, rows of 1,024 / 4,096 / 8,192 / 16,384 floats (2026-11-23,
//                book/results/ladder*.json): NVIDIA H200 84%, 95%, 89%, 70%;
//                NVIDIA H100 97%, 97%, 95%, 79%.

#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;  // every lane holds the warp's total
}

template <bool kCacheRow>
__global__ void __launch_bounds__(kThreads)
rmsnorm_warp_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                    float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
  __shared__ float warp_sums[2][kWarps];
  extern __shared__ float row_cache[];  // cols floats (only when kCacheRow)
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;

  int parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += kThreads) {
      const float v = xr[i];
      if (kCacheRow) row_cache[i] = v;
      sum += v * v;
    }
    sum = warp_sum(sum);
    if (lane == 0) warp_sums[parity][warp] = sum;
    __syncthreads();  // the only barrier per row
    sum = warp_sum(lane < kWarps ? warp_sums[parity][lane] : 0.0f);
    const float inv_rms = rsqrtf(sum / static_cast<float>(cols) + eps);

    for (int64_t i = threadIdx.x; i < cols; i += kThreads) {
      const float v = kCacheRow ? row_cache[i] : xr[i];
      yr[i] = v * inv_rms * weight[i];
    }
  }
}

}  // namespace

cudaError_t rmsnorm_warp_forward(const float* x, const float* weight, float* y,
                                 int64_t rows, int64_t cols, float eps,
                                 cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  int device = 0, max_smem = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return err;

  const int64_t max_blocks = 1 << 20;
  const unsigned grid = static_cast<unsigned>(rows < max_blocks ? rows : max_blocks);
  const int64_t static_bytes = 2 * kWarps * sizeof(float);
  const int64_t cache_bytes = cols * static_cast<int64_t>(sizeof(float));
  if (cache_bytes + static_bytes <= max_smem) {
    const int bytes = static_cast<int>(cache_bytes);
    if (bytes > 48 * 1024 - static_bytes) {  // above 48 KiB in all a kernel must opt in
      err = cudaFuncSetAttribute(rmsnorm_warp_kernel<true>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
      if (err != cudaSuccess) return err;
    }
    rmsnorm_warp_kernel<true><<<grid, kThreads, bytes, stream>>>(x, weight, y, rows, cols, eps);
  } else {  // the row does not fit: read x twice, as in chapter 02
    rmsnorm_warp_kernel<false><<<grid, kThreads, 0, stream>>>(x, weight, y, rows, cols, eps);
  }
  return cudaGetLastError();
}
