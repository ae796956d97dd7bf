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
// A copy whose bytes moved fit in the L2 (the CUDA-graph cases) takes two packs a
// thread in blocks of 128 instead, as chapter 06's pack kernel does there: with
// one pack, that kernel ran 4% faster than the copy at 16 MiB moved. H200, CUDA
// graph, 40 rounds, one pack (256 threads) -> two (128 threads): 16 MiB 6.18-6.23
// -> 5.96-5.97 us (four packs: 5.91-5.99), 1 MiB 2.09 -> 2.06. At 256 MiB two
// packs were 1% slower.
//
// The last 1-15 bytes go to thread 0 of the same launch: a second launch for
// them cost about 2 us, which let ops of odd sizes "beat" the copy.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

// Block b copies packs [b * K * THREADS, (b + 1) * K * THREADS): thread t takes
// packs t, t + THREADS, ..., all K loads before the first store. Thread 0 then
// copies the tail bytes.
template <int K, int THREADS>
__global__ void __launch_bounds__(THREADS)
copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, int64_t n16, int tail_bytes) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * (K * THREADS) + threadIdx.x;
  uint4 v[K];
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (first + k * THREADS < n16) v[k] = src[first + k * THREADS];
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (first + k * THREADS < n16) dst[first + k * THREADS] = v[k];
  if (static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x == 0 && tail_bytes > 0) {
    const auto* s = reinterpret_cast<const unsigned char*>(src + n16);
    auto* d = reinterpret_cast<unsigned char*>(dst + n16);
    for (int b = 0; b < tail_bytes; ++b) d[b] = s[b];
  }
}

template <int K, int THREADS>
cudaError_t launch_copy(const void* src, void* dst, int64_t nbytes, cudaStream_t stream) {
  const int64_t n16 = nbytes / 16;
  const int64_t per_block = static_cast<int64_t>(K) * THREADS;
  int64_t blocks = (n16 + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;  // the tail alone
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  copy_kernel<K, THREADS><<<static_cast<unsigned>(blocks), THREADS, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), n16, static_cast<int>(nbytes % 16));
  return cudaGetLastError();
}

int64_t l2_bytes() {
  int device = 0, l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;  // unknown: one pack a thread
  }
  return l2;
}

}  // namespace

// Copies nbytes; src and dst must be 16-byte aligned.
cudaError_t copy_bytes_forward(const void* src, void* dst, int64_t nbytes, cudaStream_t stream) {
  if (nbytes <= 0) return cudaSuccess;
  static const int64_t l2 = l2_bytes();  // once per process, which uses one kind of GPU
  if (2 * nbytes <= l2) return launch_copy<2, 128>(src, dst, nbytes, stream);
  return launch_copy<1, 256>(src, dst, nbytes, stream);
}
