// The speed-of-light reference: a device-to-device copy with 16-byte loads and
// stores. A memory-bound op can not beat a copy of the same number of bytes, so
// every benchmark reports its bandwidth as a percentage of this kernel's,
// measured in the same run on the same byte count.
//
// Each thread moves kUnroll float4 values spaced one block apart (the warp's
// accesses stay coalesced) and issues all its loads before its first store, so
// several 16-byte requests are in flight per thread.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

__global__ void __launch_bounds__(kThreads)
copy_float4_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n4) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
  float4 v[kUnroll];
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const int64_t i = base + static_cast<int64_t>(k) * kThreads;
    if (i < n4) v[k] = src[i];
  }
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const int64_t i = base + static_cast<int64_t>(k) * kThreads;
    if (i < n4) dst[i] = v[k];
  }
}

__global__ void copy_tail_kernel(const float* __restrict__ src, float* __restrict__ dst, int64_t begin, int64_t n) {
  const int64_t i = begin + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

}  // namespace

// Copies n floats; src and dst must be 16-byte aligned.
cudaError_t copy_float4_forward(const float* src, float* dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int64_t n4 = n / 4;
  if (n4 > 0) {
    const int64_t per_block = static_cast<int64_t>(kThreads) * kUnroll;
    const int64_t blocks = (n4 + per_block - 1) / per_block;
    if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
    copy_float4_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
  }
  if (n % 4 != 0) copy_tail_kernel<<<1, 4, 0, stream>>>(src, dst, n4 * 4, n);
  return cudaGetLastError();
}
