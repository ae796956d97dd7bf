// Chapter 05 — float4 vectorization (fp32 RMSNorm)
//
//   y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * weight[i]
//
// What this stage adds over chapter 04: 16-byte loads and stores. Each thread
// moves float4 values (one LDG.E.128 instead of four LDG.E), so a warp issues a
// quarter of the memory instructions for the same bytes. Because every thread now
// owns a fixed, compile-time number of float4 slots (VPT per row), its slice of
// the row stays in registers between the reduction and the normalize pass: the
// shared-memory row cache of chapters 03-04, its occupancy limit and its
// load-to-store round trip are gone.
//
// Paths, picked per launch:
//   * float4 path: x, weight and y 16-byte aligned and cols % 4 == 0 (every row
//     then starts 16-byte aligned). Slots past the row's end are bounds-checked.
//   * scalar path: anything else (odd row lengths, a tensor starting at an odd
//     offset). Same kernel with 4-byte accesses; still one read of x.
//   * streaming fallback: rows longer than 512 threads x 16 float4 = 32,768
//     floats (16,384 on the scalar path) do not fit in registers; x is then
//     read twice (float4 when aligned).
// Block size: up to 512 threads, fewer for short rows, so each thread keeps
// about four vectors in flight (a 1,024-float row: 64 threads x 4 float4; a
// 16,384-float row: 512 threads x 8 float4, 64 registers, two blocks per SM).
//
// Works for any number of rows (0, 1, more than 65,535) and any row length >= 1;
// offsets are 64-bit. x, weight and y must be contiguous; y must not alias x.
//
// Build alone:   nvcc -std=c++17 -arch=sm_90 -c rmsnorm_float4.cu
// Measured:      % of the copy of x in the same rounds (kernelbook.bench), fp32, 256 MiB
//                moved, rows of 1,024 / 4,096 / 8,192 / 16,384 floats (2026-11-23,
//                book/results/ladder*.json): NVIDIA H200 100%, 98%, 97%, 95%;
//                NVIDIA H100 101%, 100%, 100%, 99%.

#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kMaxThreads = 512;
constexpr int kMaxWarps = kMaxThreads / 32;

template <int VEC> struct Vec;
template <> struct Vec<4> { using type = float4; };
template <> struct Vec<1> { using type = float; };

__device__ __forceinline__ float sum_squares(float4 v) { return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w; }
__device__ __forceinline__ float sum_squares(float v) { return v * v; }
__device__ __forceinline__ float4 scale(float4 v, float s, float4 w) {
  return make_float4(v.x * s * w.x, v.y * s * w.y, v.z * s * w.z, v.w * s * w.w);
}
__device__ __forceinline__ float scale(float v, float s, float w) { return v * s * w; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Block-wide sum that every thread receives; one barrier. `slots` alternates
// between rows so a fast warp can not overwrite sums a slow warp still reads.
__device__ __forceinline__ float block_sum(float v, float (*slots)[kMaxWarps], int parity) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) slots[parity][warp] = v;
  __syncthreads();
  return warp_sum(lane < static_cast<int>(blockDim.x / 32) ? slots[parity][lane] : 0.0f);
}

// The row lives in registers: VPT vectors of VEC floats per thread. Rows that
// take this path are short (<= 32,768 floats), so in-row indices are 32-bit.
template <int VEC, int VPT>
__global__ void __launch_bounds__(kMaxThreads)
rmsnorm_registers_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                         float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
  using V = typename Vec<VEC>::type;
  __shared__ float slots[2][kMaxWarps];
  const int nvec = static_cast<int>(cols / VEC);
  const V* w = reinterpret_cast<const V*>(weight);

  int parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
    const V* xr = reinterpret_cast<const V*>(x + row * cols);
    V* yr = reinterpret_cast<V*>(y + row * cols);

    V v[VPT];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {  // all loads issued before the reduction needs them
      const int i = threadIdx.x + k * blockDim.x;
      if (i < nvec) {
        v[k] = xr[i];
        sum += sum_squares(v[k]);
      }
    }
    const float inv_rms = rsqrtf(block_sum(sum, slots, parity) / static_cast<float>(cols) + eps);
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i < nvec) yr[i] = scale(v[k], inv_rms, w[i]);
    }
  }
}

// Rows too long for registers: read x twice, VEC floats at a time.
template <int VEC>
__global__ void __launch_bounds__(kMaxThreads)
rmsnorm_streaming_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                         float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
  using V = typename Vec<VEC>::type;
  __shared__ float slots[2][kMaxWarps];
  const int64_t nvec = cols / VEC;
  const V* w = reinterpret_cast<const V*>(weight);

  int parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
    const V* xr = reinterpret_cast<const V*>(x + row * cols);
    V* yr = reinterpret_cast<V*>(y + row * cols);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) sum += sum_squares(xr[i]);
    const float inv_rms = rsqrtf(block_sum(sum, slots, parity) / static_cast<float>(cols) + eps);
    for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) yr[i] = scale(xr[i], inv_rms, w[i]);
  }
}

template <int VEC>
cudaError_t launch(const float* x, const float* weight, float* y, int64_t rows, int64_t cols,
                   float eps, cudaStream_t stream) {
  const int64_t nvec = cols / VEC;
  // About four vectors per thread: fewer threads for short rows, 512 at most.
  int threads = 32;
  while (threads < kMaxThreads && threads * 4 < nvec) threads *= 2;
  int vpt = 1;  // vectors per thread, a power of two
  while (static_cast<int64_t>(vpt) * threads < nvec) vpt *= 2;

  const int64_t max_blocks = 1 << 20;
  const unsigned grid = static_cast<unsigned>(rows < max_blocks ? rows : max_blocks);
  // Register budget for the cached slice: 16 float4 or 32 floats per thread
  // (ptxas: about 110 registers either way; 64 floats would spill).
  constexpr int kMaxVpt = VEC == 4 ? 16 : 32;
  switch (vpt <= kMaxVpt ? vpt : 0) {
    case 1:  rmsnorm_registers_kernel<VEC, 1><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
    case 2:  rmsnorm_registers_kernel<VEC, 2><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
    case 4:  rmsnorm_registers_kernel<VEC, 4><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
    case 8:  rmsnorm_registers_kernel<VEC, 8><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
    case 16: rmsnorm_registers_kernel<VEC, 16><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
    case 32: rmsnorm_registers_kernel<VEC, (kMaxVpt >= 32 ? 32 : 1)><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
    default: rmsnorm_streaming_kernel<VEC><<<grid, threads, 0, stream>>>(x, weight, y, rows, cols, eps); break;
  }
  return cudaGetLastError();
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t rmsnorm_float4_forward(const float* x, const float* weight, float* y,
                                   int64_t rows, int64_t cols, float eps,
                                   cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 4 == 0 && aligned16(x) && aligned16(weight) && aligned16(y))
    return launch<4>(x, weight, y, rows, cols, eps, stream);
  return launch<1>(x, weight, y, rows, cols, eps, stream);
}
