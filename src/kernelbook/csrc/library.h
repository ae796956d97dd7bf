// Op registration shared by kernelbook's torch bindings.
#pragma once

#include <torch/library.h>

// Each build registers its ops under its own namespace, KERNELBOOK_NS (set by
// kernelbook.build, unique per source hash). TORCH_LIBRARY pastes its namespace
// argument as written, so one more macro level expands KERNELBOOK_NS first.
#define KERNELBOOK_LIBRARY(m) KERNELBOOK_LIBRARY_IN(KERNELBOOK_NS, m)
#define KERNELBOOK_LIBRARY_IN(ns, m) TORCH_LIBRARY(ns, m)
