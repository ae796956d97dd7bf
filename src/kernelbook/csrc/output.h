// The output an op allocates for x. Shared by kernelbook's torch bindings.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <cstdint>

namespace kernelbook {

// A contiguous tensor of x's shape and dtype that starts as far past a 16-byte
// boundary as x does. Chapters 06-08 move x and out in 16-byte vectors off a
// boundary only where the two share that offset: rows 1.. of a tensor whose rows are
// an odd number of halves (x = t[1:]) start 2 bytes past one, and a fresh, aligned
// out would send them down the element-by-element path (on an H200 20-45% of a
// copy, 87-100% at x's offset; book/results.md). The buffer is a few elements
// longer and out a view into it (storage_offset() > 0), as x is.
inline at::Tensor empty_output_like(const at::Tensor& x) {
  const int64_t size = x.element_size();
  const int64_t past = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(x.const_data_ptr()) % 16);
  if (past == 0 || past % size != 0 || x.numel() == 0) return at::empty_like(x, at::MemoryFormat::Contiguous);
  const int64_t skip = past / size;  // the allocator's blocks start on a 16-byte boundary
  return at::empty({x.numel() + skip}, x.options()).narrow(0, skip, x.numel()).view(x.sizes());
}

}  // namespace kernelbook
