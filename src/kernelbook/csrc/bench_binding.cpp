// Torch binding for the benchmark's own kernels: the speed-of-light copy (copy.cu),
// the stream gate (gate.cu) and the L2 flush (flush.cu). kernelbook.build defines
// KERNELBOOK_NS; the ops are torch.ops.<KERNELBOOK_NS>.copy, .gate_wait and .flush_l2.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "checks.h"
#include "library.h"

cudaError_t copy_bytes_forward(const void* src, void* dst, int64_t nbytes, cudaStream_t stream);
cudaError_t gate_wait_forward(int* state, int ticket, int64_t timeout_ns, cudaStream_t stream);
cudaError_t l2_flush_forward(void* buf, int64_t nbytes, cudaStream_t stream);

namespace {

at::Tensor& copy(const at::Tensor& src, at::Tensor& dst) {
  using namespace kernelbook;
  TORCH_CHECK_VALUE(src.is_cuda(), "src must be a CUDA tensor, got device ", src.device().str());
  check_contiguous(src, "src");
  check_out(dst, src, "dst", "src");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(src.data_ptr()) % 16 == 0 &&
                        reinterpret_cast<std::uintptr_t>(dst.data_ptr()) % 16 == 0,
                    "copy needs 16-byte aligned src and dst");
  c10::cuda::CUDAGuard guard(src.device());
  const cudaError_t err = copy_bytes_forward(src.data_ptr(), dst.data_ptr(), static_cast<int64_t>(src.nbytes()),
                                             c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "copy launch failed: ", cudaGetErrorString(err));
  return dst;
}

// Queue a wait on the current stream until state[0] >= ticket (written by the host).
void gate_wait(const at::Tensor& state, int64_t ticket, int64_t timeout_ns) {
  TORCH_CHECK_VALUE(state.device().is_cpu() && state.is_pinned() && state.scalar_type() == at::kInt &&
                        state.numel() == 2 && state.is_contiguous(),
                    "gate state must be a pinned CPU int32 tensor of 2 elements");
  void* device_ptr = nullptr;
  cudaError_t err = cudaHostGetDevicePointer(&device_ptr, state.data_ptr(), 0);
  TORCH_CHECK(err == cudaSuccess, "gate state is not mapped into the GPU's address space: ",
              cudaGetErrorString(err));
  err = gate_wait_forward(static_cast<int*>(device_ptr), static_cast<int>(ticket), timeout_ns,
                          c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "gate launch failed: ", cudaGetErrorString(err));
}

// Write `buf` so that the L2 keeps nothing read before (see flush.cu).
void flush_l2(at::Tensor& buf) {
  TORCH_CHECK_VALUE(buf.is_cuda() && buf.is_contiguous(), "flush buffer must be a contiguous CUDA tensor");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(buf.data_ptr()) % 128 == 0 && buf.nbytes() % 128 == 0,
                    "flush buffer must be 128-byte aligned and a multiple of 128 bytes");
  c10::cuda::CUDAGuard guard(buf.device());
  const cudaError_t err = l2_flush_forward(buf.data_ptr(), static_cast<int64_t>(buf.nbytes()),
                                           c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "flush launch failed: ", cudaGetErrorString(err));
}

}  // namespace

KERNELBOOK_LIBRARY(m) {
  m.def("copy(Tensor src, Tensor(a!) dst) -> Tensor(a!)", &copy);
  m.def("gate_wait(Tensor state, int ticket, int timeout_ns) -> ()", &gate_wait);
  m.def("flush_l2(Tensor(a!) buf) -> ()", &flush_l2);
}
