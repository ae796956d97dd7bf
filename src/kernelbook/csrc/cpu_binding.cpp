// Torch binding for chapter 01's CPU loops (C++ only: builds and runs without CUDA).
// kernelbook.build defines KERNELBOOK_NS; the ops appear as torch.ops.<KERNELBOOK_NS>.*.
#include <ATen/ops/empty_like.h>
#include <c10/util/string_view.h>

#include "checks.h"
#include "library.h"

void rmsnorm_cpu(const float* x, const float* weight, float* y, int64_t rows, int64_t cols, float eps);
void layernorm_cpu(const float* x, const float* weight, const float* bias, float* y, int64_t rows,
                   int64_t cols, float eps);
void gelu_erf_cpu(const float* x, float* y, int64_t n);
void gelu_tanh_cpu(const float* x, float* y, int64_t n);

namespace {

void check_input(const at::Tensor& x) {
  using namespace kernelbook;
  check_rows(x);
  check_dtype(x, "x", at::kFloat);
  TORCH_CHECK_VALUE(x.device().is_cpu(), "x must be a CPU tensor for the CPU reference, got device ", x.device().str());
  check_contiguous(x, "x");
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_input(x);
  kernelbook::check_param(weight, "weight", x);
  kernelbook::check_eps(eps);
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() > 0) {
    const int64_t cols = x.size(-1);
    rmsnorm_cpu(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), x.numel() / cols, cols,
                static_cast<float>(eps));
  }
  return y;
}

at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  check_input(x);
  kernelbook::check_param(weight, "weight", x);
  kernelbook::check_param(bias, "bias", x);
  kernelbook::check_eps(eps);
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() > 0) {
    const int64_t cols = x.size(-1);
    layernorm_cpu(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                  x.numel() / cols, cols, static_cast<float>(eps));
  }
  return y;
}

at::Tensor gelu(const at::Tensor& x, c10::string_view approximate) {
  check_input(x);
  TORCH_CHECK_VALUE(approximate == "none" || approximate == "tanh",
                    "approximate must be 'none' or 'tanh', got '", approximate, "'");
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (approximate == "none") gelu_erf_cpu(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  else gelu_tanh_cpu(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}

}  // namespace

KERNELBOOK_LIBRARY(m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor", &rms_norm);
  m.def("layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor", &layer_norm);
  m.def("gelu(Tensor x, str approximate='none') -> Tensor", &gelu);
}
