// The speed-of-light reference: a device-to-device copy with 16-byte loads and
// stores. A memory-bound op can not beat a copy of the same number of bytes, so
// every benchmark reports its bandwidth as a percentage of this kernel's,
// measured in the same run, on the op's own input copied into a fresh output
// (kernelbook.bench says why the addresses matter).
//
// One 16-byte pack per thread, 256 threads per block, one block per 4 KiB. On an
// H200 (2026-11-22, medians of 5 rounds after an L2 flush) this plain form beat 2,
// 4 or 8 packs per thread, 1024-thread blocks, a grid-stride loop and streaming
// cache hints; on an H100 (2026-11-23, 40 rounds, 256 MiB moved) 2, 4 and 8 packs
// per thread and a grid-stride loop were 0.4-3% slower, and it tied with
// cudaMemcpyAsync (torch's copy_).
//
// The last 1-15 bytes go to one spare thread of the same launch: a second
// launch for them cost about 2 us, which let ops of odd sizes "beat" the copy.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, int64_t n16, int tail_bytes) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n16) {
    dst[i] = src[i];
  } else if (i == n16) {
    const auto* s = reinterpret_cast<const unsigned char*>(src + n16);
    auto* d = reinterpret_cast<unsigned char*>(dst + n16);
    for (int b = 0; b < tail_bytes; ++b) d[b] = s[b];
  }
}

}  // namespace

// Copies nbytes; src and dst must be 16-byte aligned.
cudaError_t copy_bytes_forward(const void* src, void* dst, int64_t nbytes, cudaStream_t stream) {
  if (nbytes <= 0) return cudaSuccess;
  const int64_t n16 = nbytes / 16;
  const int tail_bytes = static_cast<int>(nbytes % 16);
  const int64_t blocks = (n16 + (tail_bytes ? 1 : 0) + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  copy_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), n16, tail_bytes);
  return cudaGetLastError();
}
