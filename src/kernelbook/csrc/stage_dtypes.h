// The element types a stage was built for, and the switch from a tensor's dtype
// to the launcher overload that takes it. kernelbook.build defines one or more of
// KERNELBOOK_DTYPE_F32, KERNELBOOK_DTYPE_F16 and KERNELBOOK_DTYPE_BF16 from the
// stage's entry in kernelbook/stages.py.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <string>

namespace kernelbook {

inline std::string stage_dtypes() {
  std::string names[3];
  int n = 0;
#ifdef KERNELBOOK_DTYPE_F32
  names[n++] = "float32";
#endif
#ifdef KERNELBOOK_DTYPE_F16
  names[n++] = "float16";
#endif
#ifdef KERNELBOOK_DTYPE_BF16
  names[n++] = "bfloat16";
#endif
  std::string s;
  for (int i = 0; i < n; ++i) s += (i == 0 ? "" : i == n - 1 ? " or " : ", ") + names[i];
  return s;
}

inline void check_stage_dtype(const at::Tensor& x, const char* name = "x") {
  const at::ScalarType t = x.scalar_type();
  bool ok = false;
#ifdef KERNELBOOK_DTYPE_F32
  ok = ok || t == at::kFloat;
#endif
#ifdef KERNELBOOK_DTYPE_F16
  ok = ok || t == at::kHalf;
#endif
#ifdef KERNELBOOK_DTYPE_BF16
  ok = ok || t == at::kBFloat16;
#endif
  TORCH_CHECK_TYPE(ok, name, " must be ", stage_dtypes(), " for this stage, got ", c10::toString(t));
}

// Calls launch(T*) with a null pointer of x's element type (float, __half or
// __nv_bfloat16); the caller casts its tensors' data pointers to that type.
template <class Launch>
cudaError_t dispatch(const at::Tensor& x, Launch&& launch) {
  check_stage_dtype(x);
  switch (x.scalar_type()) {
#ifdef KERNELBOOK_DTYPE_F32
    case at::kFloat: return launch(static_cast<float*>(nullptr));
#endif
#ifdef KERNELBOOK_DTYPE_F16
    case at::kHalf: return launch(static_cast<__half*>(nullptr));
#endif
#ifdef KERNELBOOK_DTYPE_BF16
    case at::kBFloat16: return launch(static_cast<__nv_bfloat16*>(nullptr));
#endif
    default: return cudaErrorInvalidValue;  // unreachable: check_stage_dtype raised
  }
}

template <class T>
const T* ptr(const at::Tensor& t, const T*) { return static_cast<const T*>(t.data_ptr()); }
template <class T>
T* mut_ptr(at::Tensor& t, T*) { return static_cast<T*>(t.data_ptr()); }

}  // namespace kernelbook
