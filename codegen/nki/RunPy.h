//===- RunPy.h - The host driver of an NKI artifact (run.py) -----*- C++ -*-===//
#ifndef FUSEC_CODEGEN_NKI_RUNPY_H
#define FUSEC_CODEGEN_NKI_RUNPY_H

namespace fusec::codegen::nki {

inline constexpr const char *kKernelsFile = "kernels.py";
inline constexpr const char *kRunFile = "run.py";

/// The text of run.py: loads manifest.json and weights.bin, binds the
/// inputs, runs the steps in order (kernel steps call kernels.py through
/// `nki`, copy steps copy bytes) and writes or checks the outputs. Usage is
/// in its docstring.
const char *runPySource();

}  // namespace fusec::codegen::nki

#endif  // FUSEC_CODEGEN_NKI_RUNPY_H
