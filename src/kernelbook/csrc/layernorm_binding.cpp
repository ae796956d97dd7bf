// Torch binding for the LayerNorm stage (chapter 07). kernelbook.build defines
// KERNELBOOK_LAUNCHER (one overload per element type), KERNELBOOK_DTYPE_* and
// KERNELBOOK_NS; the ops appear as torch.ops.<KERNELBOOK_NS>.layer_norm(x, weight,
// bias, eps, method) and layer_norm_out(..., out). weight and bias may be None.
// method: 0 Welford + Chan merge (the stage), 1 two-pass, 2 one-pass E[x^2]-E[x]^2.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <optional>

#include "checks.h"
#include "library.h"
#include "output.h"
#include "stage_dtypes.h"

#ifdef KERNELBOOK_DTYPE_F32
cudaError_t KERNELBOOK_LAUNCHER(const float* x, const float* weight, const float* bias, float* y, int64_t rows,
                                int64_t cols, float eps, int method, cudaStream_t stream);
#endif
#ifdef KERNELBOOK_DTYPE_F16
cudaError_t KERNELBOOK_LAUNCHER(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t rows,
                                int64_t cols, float eps, int method, cudaStream_t stream);
#endif
#ifdef KERNELBOOK_DTYPE_BF16
cudaError_t KERNELBOOK_LAUNCHER(const __nv_bfloat16* x, const __nv_bfloat16* weight, const __nv_bfloat16* bias,
                                __nv_bfloat16* y, int64_t rows, int64_t cols, float eps, int method,
                                cudaStream_t stream);
#endif

namespace {

template <class T>
const T* optional_ptr(const std::optional<at::Tensor>& p, const T* t) {
  return p.has_value() ? kernelbook::ptr(*p, t) : nullptr;
}

at::Tensor& layer_norm_out(const at::Tensor& x, const std::optional<at::Tensor>& weight,
                           const std::optional<at::Tensor>& bias, double eps, int64_t method, at::Tensor& out) {
  using namespace kernelbook;
  check_rows(x);
  check_stage_dtype(x);
  TORCH_CHECK_VALUE(x.is_cuda(), "x must be a CUDA tensor, got device ", x.device().str());
  check_contiguous(x, "x");
  if (weight.has_value()) check_param(*weight, "weight", x);
  if (bias.has_value()) check_param(*bias, "bias", x);
  check_eps(eps);
  TORCH_CHECK_VALUE(method >= 0 && method <= 2, "method must be 0 (Welford), 1 (two-pass) or 2 (one-pass), got ",
                    fmt(method));
  check_out(out, x);
  const int64_t cols = x.size(-1);
  if (x.numel() == 0) return out;
  c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const cudaError_t err = dispatch(x, [&](auto* t) {
    return KERNELBOOK_LAUNCHER(ptr(x, t), optional_ptr(weight, t), optional_ptr(bias, t), mut_ptr(out, t),
                               x.numel() / cols, cols, static_cast<float>(eps), static_cast<int>(method), stream);
  });
  TORCH_CHECK(err == cudaSuccess, "LayerNorm launch failed: ", cudaGetErrorString(err));
  return out;
}

at::Tensor layer_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, double eps, int64_t method) {
  at::Tensor out = kernelbook::empty_output_like(x);
  layer_norm_out(x, weight, bias, eps, method, out);
  return out;
}

}  // namespace

KERNELBOOK_LIBRARY(m) {
  m.def("layer_norm(Tensor x, Tensor? weight, Tensor? bias, float eps, int method=0) -> Tensor", &layer_norm);
  m.def("layer_norm_out(Tensor x, Tensor? weight, Tensor? bias, float eps, int method, Tensor(a!) out) -> Tensor(a!)",
        &layer_norm_out);
}
