//===- Program.h - The target-neutral program: steps and unique kernels -*- C++ -*-===//
//
// buildProgram() lowers a fused graph (Lowering.h) and orders it as the
// steps of ARTIFACT.md: one step per work item, in execution order.
// Generated kernels are de-duplicated by their canonical key
// (KernelSpec.h): structurally equal specs become one kernel that several
// steps launch with different buffers. Kernels are numbered in order of
// first use; a backend names kernel i as it likes (CUDA: fusec_k<i>).
// Copies (graph outputs that are views/inputs/constants) are added later by
// the memory plan (MemoryPlan.h).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_PROGRAM_H
#define FUSEC_PROGRAM_PROGRAM_H

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "program/Lowering.h"

namespace fusec::program {

/// One structurally unique generated kernel.
struct UniqueKernel {
  int firstItem = -1;             ///< index into Program::items of its first use
  std::vector<std::string> uses;  ///< plan kernel names that launch it, in step order
};

struct Program {
  std::vector<WorkItem> items;           ///< lowered work, in execution order
  std::vector<Step> steps;               ///< one per item; kernel steps carry `kernel`
  std::vector<int> kernelOfStep;         ///< per step: index into kernels, -1 = library call
  std::vector<UniqueKernel> kernels;     ///< unique generated kernels, first-use order
  std::vector<std::string> kernelNames;  ///< plan kernel names in step order (unique)
};

/// Lowers every fused group of \p graph (see lowerGraph()) and builds the
/// step list with de-duplicated kernels. Step::symbol stays empty: the
/// backend fills it. Errors as lowerGraph().
absl::StatusOr<Program> buildProgram(const ir::Graph &graph,
                                     const std::vector<std::string> &kernelNames,
                                     const LoweringOptions &opts);

/// The steps and unique kernels of \p items (already lowered, in
/// execution order), as buildProgram() assembles them.
Program assembleProgram(std::vector<WorkItem> items);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_PROGRAM_H
