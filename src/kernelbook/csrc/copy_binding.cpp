// Torch binding for the speed-of-light copy kernel (copy.cu).
// kernelbook.build defines KERNELBOOK_NS; the op is torch.ops.<KERNELBOOK_NS>.copy.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/library.h>

#include "checks.h"

cudaError_t copy_float4_forward(const float* src, float* dst, int64_t n, cudaStream_t stream);

namespace {

at::Tensor& copy(const at::Tensor& src, at::Tensor& dst) {
  using namespace kernelbook;
  check_float32(src, "src");
  TORCH_CHECK_VALUE(src.is_cuda(), "src must be a CUDA tensor, got device ", src.device().str());
  check_contiguous(src, "src");
  check_out(dst, src, "dst", "src");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(src.data_ptr()) % 16 == 0 &&
                        reinterpret_cast<std::uintptr_t>(dst.data_ptr()) % 16 == 0,
                    "copy needs 16-byte aligned src and dst");
  c10::cuda::CUDAGuard guard(src.device());
  const cudaError_t err = copy_float4_forward(src.data_ptr<float>(), dst.data_ptr<float>(), src.numel(),
                                              c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "copy launch failed: ", cudaGetErrorString(err));
  return dst;
}

}  // namespace

#define KERNELBOOK_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)  // expands KERNELBOOK_NS first
KERNELBOOK_LIBRARY(KERNELBOOK_NS, m) {
  m.def("copy(Tensor src, Tensor(a!) dst) -> Tensor(a!)", &copy);
}
