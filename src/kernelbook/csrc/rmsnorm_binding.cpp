// Torch binding for the RMSNorm stages (chapters 02-05 and 08). The stage's .cu
// file stays free of torch headers and builds in about a second; this file is
// compiled beside it. kernelbook.build defines
//   KERNELBOOK_LAUNCHER  the stage's launcher, e.g. rmsnorm_naive_forward, with one
//                        overload per element type the stage supports
//   KERNELBOOK_DTYPE_*   those element types (see stage_dtypes.h)
//   KERNELBOOK_NS        a unique op namespace, e.g. kb02_1a2b3c4d
// and the ops appear as torch.ops.<KERNELBOOK_NS>.rms_norm / rms_norm_out.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "checks.h"
#include "library.h"
#include "output.h"
#include "stage_dtypes.h"

#ifdef KERNELBOOK_DTYPE_F32
cudaError_t KERNELBOOK_LAUNCHER(const float* x, const float* weight, float* y, int64_t rows, int64_t cols,
                                float eps, cudaStream_t stream);
#endif
#ifdef KERNELBOOK_DTYPE_F16
cudaError_t KERNELBOOK_LAUNCHER(const __half* x, const __half* weight, __half* y, int64_t rows, int64_t cols,
                                float eps, cudaStream_t stream);
#endif
#ifdef KERNELBOOK_DTYPE_BF16
cudaError_t KERNELBOOK_LAUNCHER(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y,
                                int64_t rows, int64_t cols, float eps, cudaStream_t stream);
#endif

namespace {

at::Tensor& rms_norm_out(const at::Tensor& x, const at::Tensor& weight, double eps, at::Tensor& out) {
  using namespace kernelbook;
  check_rows(x);
  check_stage_dtype(x);
  TORCH_CHECK_VALUE(x.is_cuda(), "x must be a CUDA tensor, got device ", x.device().str());
  check_contiguous(x, "x");
  check_param(weight, "weight", x);
  check_out(out, x);
  check_eps(eps);
  const int64_t cols = x.size(-1);
  if (x.numel() == 0) return out;
  c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const cudaError_t err = dispatch(x, [&](auto* t) {
    return KERNELBOOK_LAUNCHER(ptr(x, t), ptr(weight, t), mut_ptr(out, t), x.numel() / cols, cols,
                               static_cast<float>(eps), stream);
  });
  TORCH_CHECK(err == cudaSuccess, "RMSNorm launch failed: ", cudaGetErrorString(err));
  return out;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor out = kernelbook::empty_output_like(x);
  rms_norm_out(x, weight, eps, out);
  return out;
}

}  // namespace

KERNELBOOK_LIBRARY(m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor", &rms_norm);
  m.def("rms_norm_out(Tensor x, Tensor weight, float eps, Tensor(a!) out) -> Tensor(a!)", &rms_norm_out);
}
