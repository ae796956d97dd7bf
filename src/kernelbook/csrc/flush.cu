// The L2 flush before every timing (kernelbook.bench.L2Flush): the buffer is
// written three times, so that nothing an earlier op read is still in the L2.
//
// Why not one plain write: lines loaded with an L2 evict_last policy (as
// torch.compile's LayerNorm loads x) outlive plain writes of twice the L2's size,
// and the next op that reads the same data finds part of it cached. On an H100
// (…1683, 2026-11-25, one input set, 20 rounds) an op timed after a kernel that
// read x with that policy, and a plain flush, ran 2-4% faster than after a copy
// of x: the copy 93.3-93.7 -> 90.3-90.5 us and chapter 07's LayerNorm 94.2-94.3
// -> 90.9-91.1 at 4,096 x 16,384 fp16, and the LayerNorm 105.7 -> 100.1 us after
// torch.compile's at 1,024 x 65,536 (117.7 after evict_last reads of x alone).
// With the three passes below every such prior op left the same times (within
// 0.5%).
//   1. 16-byte stores with an evict_last policy: the buffer's lines take the place
//      of every evict_last line left behind (the buffer is twice the L2's size);
//   2. each 128-byte line of the buffer back to normal priority;
//   3. a plain write, which leaves the L2 full of dirty lines of normal priority,
//      as a kernel inside a model finds it (see L2Flush).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kBlocks = 2048;

// Cache policies and applypriority need sm_80; older GPUs get the plain write alone.
__global__ void __launch_bounds__(kThreads) write_evict_last(float4* buf, int64_t n16) {
#if __CUDA_ARCH__ >= 800
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n16;
       i += static_cast<int64_t>(kBlocks) * kThreads)
    asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %1, %1, %1}, %2;" ::"l"(buf + i), "f"(1.0f),
                 "l"(policy)
                 : "memory");
#endif
}

__global__ void __launch_bounds__(kThreads) demote_lines(float4* buf, int64_t lines) {
#if __CUDA_ARCH__ >= 800
  for (int64_t l = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; l < lines;
       l += static_cast<int64_t>(kBlocks) * kThreads)
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(buf + 8 * l) : "memory");
#endif
}

__global__ void __launch_bounds__(kThreads) write_plain(float4* buf, int64_t n16) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n16;
       i += static_cast<int64_t>(kBlocks) * kThreads)
    buf[i] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
}

}  // namespace

// buf: 128-byte aligned, nbytes a multiple of 128.
cudaError_t l2_flush_forward(void* buf, int64_t nbytes, cudaStream_t stream) {
  auto* p = static_cast<float4*>(buf);
  write_evict_last<<<kBlocks, kThreads, 0, stream>>>(p, nbytes / 16);
  demote_lines<<<kBlocks, kThreads, 0, stream>>>(p, nbytes / 128);
  write_plain<<<kBlocks, kThreads, 0, stream>>>(p, nbytes / 16);
  return cudaGetLastError();
}
