//===- Reduction.cpp - Reference functions: Reduction ops ---------------------------===//
#include "interp/internal/Kernels.h"

namespace fusec::interp {

void registerReductionKernels(KernelTable &table) {}

}  // namespace fusec::interp
