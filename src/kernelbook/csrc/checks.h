// Input validation shared by kernelbook's torch bindings. Every check raises a
// Python exception (ValueError / TypeError) before anything is launched.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kernelbook {

// Numbers are formatted here rather than streamed into the message: with some
// compiler / torch-wheel pairings, streaming an integer from an extension into
// c10's ostringstream crashed (seen with torch 2.11 and the system g++).
inline std::string fmt(int64_t v) { return std::to_string(v); }
inline std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}
// torch's names for the dtypes the stages take ("float32", not "Float").
inline const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    default: return c10::toString(t);
  }
}

inline std::string fmt(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

inline void check_dtype(const at::Tensor& t, const char* name, at::ScalarType want) {
  TORCH_CHECK_TYPE(t.scalar_type() == want, name, " must be ", dtype_name(want), ", got ",
                   c10::toString(t.scalar_type()));
}

// A tensor that must have x's dtype (weight, bias, out).
inline void check_same_dtype(const at::Tensor& t, const char* name, const at::Tensor& x) {
  TORCH_CHECK_TYPE(t.scalar_type() == x.scalar_type(), name, " must be ", dtype_name(x.scalar_type()),
                   " like x, got ", c10::toString(t.scalar_type()));
}

inline void check_device(const at::Tensor& t, const char* name, const at::Tensor& like,
                         const char* like_name = "x") {
  TORCH_CHECK_VALUE(t.device() == like.device(), name, " is on ", t.device().str(), " but ", like_name,
                    " is on ", like.device().str(), "; move both to the same device");
}

inline void check_contiguous(const at::Tensor& t, const char* name) {
  TORCH_CHECK_VALUE(t.is_contiguous(), name, " must be contiguous (sizes ", fmt(t.sizes()), ", strides ",
                    fmt(t.strides()), "); call .contiguous() first");
  TORCH_CHECK_VALUE(reinterpret_cast<std::uintptr_t>(t.data_ptr()) % t.element_size() == 0,
                    name, " is not aligned to its element size");
}

// A per-column parameter (weight, bias): 1-D, one value per column of x.
inline void check_param(const at::Tensor& p, const char* name, const at::Tensor& x) {
  check_same_dtype(p, name, x);
  check_device(p, name, x);
  TORCH_CHECK_VALUE(p.dim() == 1 && p.size(0) == x.size(-1), name, " must have shape (",
                    fmt(x.size(-1)), ",) to match x's last dimension, got ", fmt(p.sizes()));
  check_contiguous(p, name);
}

inline void check_eps(double eps) {
  TORCH_CHECK_VALUE(std::isfinite(eps) && eps > 0.0, "eps must be a positive finite number, got ", fmt(eps));
}

inline void check_rows(const at::Tensor& x) {
  TORCH_CHECK_VALUE(x.dim() >= 1, "x must have at least one dimension (rows are over the last one), got a scalar");
}

// `out` receives the result: same shape, dtype and device as `x`, contiguous; it may
// share memory with x only where the op allows it in place (and then only exactly).
inline void check_out(const at::Tensor& out, const at::Tensor& x, const char* out_name = "out",
                      const char* x_name = "x", bool in_place_ok = false) {
  check_same_dtype(out, out_name, x);
  check_device(out, out_name, x, x_name);
  TORCH_CHECK_VALUE(out.sizes() == x.sizes(), out_name, " must have ", x_name, "'s shape ", fmt(x.sizes()),
                    ", got ", fmt(out.sizes()));
  check_contiguous(out, out_name);
  if (in_place_ok && out.data_ptr() == x.data_ptr()) return;
  TORCH_CHECK_VALUE(!out.storage().is_alias_of(x.storage()), out_name, " must not share memory with ", x_name,
                    in_place_ok ? " (except as the very same tensor, in place)" : "");
}

}  // namespace kernelbook
