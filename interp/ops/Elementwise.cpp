//===- Elementwise.cpp - Reference functions: Elementwise ops ---------------------------===//
#include "interp/internal/Kernels.h"

namespace fusec::interp {

void registerElementwiseKernels(KernelTable &table) {}

}  // namespace fusec::interp
