//===- FusionPlan.cpp - The result of fusion: kernels and refusals --------===//
#include "passes/fusion/FusionPlan.h"

namespace fusec::passes {

const char *kernelKindName(KernelKind k) {
  switch (k) {
    case KernelKind::kElementwise: return "elementwise";
    case KernelKind::kReduction: return "reduction";
    case KernelKind::kGemm: return "gemm";
    case KernelKind::kConv: return "conv";
    case KernelKind::kAttention: return "attention";
    case KernelKind::kLayout: return "layout";
    case KernelKind::kOpaque: return "opaque";
  }
  return "opaque";
}

std::vector<std::string> kernelNames(const FusionPlan &plan) {
  std::vector<std::string> names;
  names.reserve(plan.kernels.size());
  for (const Kernel &k : plan.kernels) names.push_back(k.name);
  return names;
}

std::vector<const Kernel *> refusedKernels(const FusionPlan &plan) {
  std::vector<const Kernel *> out;
  for (const Kernel &k : plan.kernels)
    if (!k.refused.empty()) out.push_back(&k);
  return out;
}

}  // namespace fusec::passes
