// Torch binding for the GELU stage (chapter 06). kernelbook.build defines
// KERNELBOOK_LAUNCHER (the stage's launcher, one overload per element type),
// KERNELBOOK_DTYPE_* and KERNELBOOK_NS; the ops appear as
// torch.ops.<KERNELBOOK_NS>.gelu(x, approximate, variant) and gelu_out(..., out).
// variant: 0 one element per thread, 1 pairs (half2 / bfloat162 / float2),
// 2 16-byte packs, 3 half-precision math (fp16, tanh form only: the trap).
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/string_view.h>

#include "checks.h"
#include "library.h"
#include "output.h"
#include "stage_dtypes.h"

#ifdef KERNELBOOK_DTYPE_F32
cudaError_t KERNELBOOK_LAUNCHER(const float* x, float* y, int64_t n, int approximate, int variant,
                                cudaStream_t stream);
#endif
#ifdef KERNELBOOK_DTYPE_F16
cudaError_t KERNELBOOK_LAUNCHER(const __half* x, __half* y, int64_t n, int approximate, int variant,
                                cudaStream_t stream);
#endif
#ifdef KERNELBOOK_DTYPE_BF16
cudaError_t KERNELBOOK_LAUNCHER(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n, int approximate, int variant,
                                cudaStream_t stream);
#endif

namespace {

at::Tensor& gelu_out(const at::Tensor& x, c10::string_view approximate, int64_t variant, at::Tensor& out) {
  using namespace kernelbook;
  check_stage_dtype(x);
  TORCH_CHECK_VALUE(x.is_cuda(), "x must be a CUDA tensor, got device ", x.device().str());
  check_contiguous(x, "x");
  TORCH_CHECK_VALUE(approximate == "none" || approximate == "tanh",
                    "approximate must be 'none' or 'tanh', got '", std::string(approximate), "'");
  TORCH_CHECK_VALUE(variant >= 0 && variant <= 3, "variant must be 0 (scalar), 1 (pairs), 2 (16-byte packs) or "
                    "3 (half math), got ", fmt(variant));
  TORCH_CHECK_VALUE(variant != 3 || (x.scalar_type() == at::kHalf && approximate == "tanh"),
                    "variant 3 (half-precision math) exists for float16 and approximate='tanh' only");
  check_out(out, x, "out", "x", /*in_place_ok=*/true);
  if (x.numel() == 0) return out;
  c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const int tanh_form = approximate == "tanh" ? 1 : 0;
  const cudaError_t err = dispatch(x, [&](auto* t) {
    return KERNELBOOK_LAUNCHER(ptr(x, t), mut_ptr(out, t), x.numel(), tanh_form, static_cast<int>(variant), stream);
  });
  TORCH_CHECK(err == cudaSuccess, "GELU launch failed: ", cudaGetErrorString(err));
  return out;
}

at::Tensor gelu(const at::Tensor& x, c10::string_view approximate, int64_t variant) {
  at::Tensor out = kernelbook::empty_output_like(x);
  gelu_out(x, approximate, variant, out);
  return out;
}

}  // namespace

KERNELBOOK_LIBRARY(m) {
  m.def("gelu(Tensor x, str approximate='none', int variant=2) -> Tensor", &gelu);
  m.def("gelu_out(Tensor x, str approximate, int variant, Tensor(a!) out) -> Tensor(a!)", &gelu_out);
}
