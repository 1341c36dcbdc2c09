//===- Layout.cpp - Reference functions: Layout ops ---------------------------===//
#include "interp/internal/Kernels.h"

namespace fusec::interp {

void registerLayoutKernels(KernelTable &table) {}

}  // namespace fusec::interp
