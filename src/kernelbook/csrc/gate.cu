// A gate that holds a stream until the host has queued everything it wants timed.
//
// Why: a start event recorded on a stream fires as soon as the GPU reaches it.
// If the host is still busy launching the op (dynamo's guards, a Python wrapper,
// a garbage-collection pause), the GPU sits idle between the start event and the
// op's first kernel, and that idle time is read as kernel time. With the gate
// queued first, the GPU waits here until the host writes the awaited ticket into
// pinned host memory, which it does only after queuing the start event, the op
// and the end event: the timed region then runs back to back whatever the host's
// launch time. (NVIDIA's nvbench uses the same idea, a "blocking kernel".)
//
// The wait gives up after timeout_ns and records that it did, so an op that
// waits on the host itself (a synchronizing call) can not deadlock the timer.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// state[0]: the ticket the host has released up to; state[1]: set to 1 on a timeout.
__global__ void gate_wait_kernel(volatile int* state, int ticket, uint64_t timeout_ns) {
  const uint64_t start = global_ns();
  while (state[0] < ticket) {
    if (global_ns() - start > timeout_ns) {
      state[1] = 1;
      return;
    }
    __nanosleep(256);
  }
}

}  // namespace

// `state` is a device pointer to two ints of pinned, mapped host memory.
cudaError_t gate_wait_forward(int* state, int ticket, int64_t timeout_ns, cudaStream_t stream) {
  gate_wait_kernel<<<1, 1, 0, stream>>>(state, ticket, static_cast<uint64_t>(timeout_ns));
  return cudaGetLastError();
}
