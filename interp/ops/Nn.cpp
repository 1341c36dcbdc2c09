//===- Nn.cpp - Reference functions: Nn ops ---------------------------===//
#include "interp/internal/Kernels.h"

namespace fusec::interp {

void registerNnKernels(KernelTable &table) {}

}  // namespace fusec::interp
