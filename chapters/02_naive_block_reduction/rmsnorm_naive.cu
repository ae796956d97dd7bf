// Chapter 02 — naive block reduction (fp32 RMSNorm)
//
//   y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * weight[i]
//
// What this stage adds over chapter 01 (one CPU thread per row): one thread
// block per row. Each thread sums the squares of a strided slice of the row,
// the block adds the partial sums with a tree reduction in shared memory, and
// then every thread normalizes its slice.
//
// Limits, on purpose (the next chapters remove them): x is read from device
// memory twice (once to reduce, once to normalize), the tree reduction needs a
// barrier per level, and loads are 4 bytes wide.
//
// Works for any number of rows (0, 1, more than 65,535: blocks stride over
// rows) and any row length >= 1; offsets are 64-bit, so tensors past 2^31
// elements are fine. x, weight and y must be contiguous; y must not alias x.
//
// Build alone:   nvcc -std=c++17 -arch=sm_90 -c rmsnorm_naive.cu
// Measured:      % of the copy of x in the same rounds (kernelbook.bench), fp32, 256 MiB
//                moved, rows of 1,024 / 4,096 / 8,192 / 16,384 floats (2026-11-23,
//                book/results/ladder*.json): NVIDIA H200 82%, 84%, 68%, 64%;
//                NVIDIA H100 94%, 71%, 68%, 65%.

#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;  // a power of two: the tree halves it each level

__global__ void __launch_bounds__(kThreads)
rmsnorm_naive_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                     float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
  __shared__ float partial[kThreads];

  // A grid-stride loop over rows: the grid is capped, so any row count works.
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    // 1. Each thread: sum of squares over columns tid, tid + 256, ...
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += kThreads) {
      const float v = xr[i];
      sum += v * v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();

    // 2. Tree reduction: halve the active threads each step, one barrier per level.
    for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
      if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
      __syncthreads();
    }
    const float inv_rms = rsqrtf(partial[0] / static_cast<float>(cols) + eps);
    __syncthreads();  // everyone has read partial[0] before the next row reuses it

    // 3. Normalize: reads x from device memory a second time.
    for (int64_t i = threadIdx.x; i < cols; i += kThreads) {
      yr[i] = xr[i] * inv_rms * weight[i];
    }
  }
}

}  // namespace

// Launcher: raw pointers, sizes and a stream. Returns the launch status;
// nothing is launched for an empty tensor.
cudaError_t rmsnorm_naive_forward(const float* x, const float* weight, float* y,
                                  int64_t rows, int64_t cols, float eps,
                                  cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t max_blocks = 1 << 20;  // plenty to fill any GPU; rows beyond loop
  const unsigned grid = static_cast<unsigned>(rows < max_blocks ? rows : max_blocks);
  rmsnorm_naive_kernel<<<grid, kThreads, 0, stream>>>(x, weight, y, rows, cols, eps);
  return cudaGetLastError();
}
