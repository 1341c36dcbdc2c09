//===- TargetSpec.h - Roofline parameters of a target -----------*- C++ -*-===//
//
// A TargetSpec is data: peak memory bandwidth, peak FLOP/s per dtype, on-chip
// memory and unit counts of one accelerator. The files live in
// codegen/targets/<name>.textproto (protobuf text format of
// passes/cost/target_spec.proto) and are compiled into the binary; each file
// cites its sources. The ridge point (peak FLOP/s / bytes/s) separates
// memory-bound from compute-bound ops.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_COST_TARGETSPEC_H
#define FUSEC_PASSES_COST_TARGETSPEC_H

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/DType.h"

namespace fusec::passes {

struct TargetSpec {
  std::string name;            ///< "h200"
  std::string backend;         ///< "cuda" or "nki"
  std::string arch;            ///< "sm_90", "trn2"
  double memoryBandwidth = 0;  ///< achievable HBM bytes/s (measured copy rate where known)
  double datasheetMemoryBandwidth = 0;  ///< datasheet HBM bytes/s
  /// Peak FLOP/s per dtype of the unit that does dense contractions
  /// (tensor cores / TensorEngine), and of the vector units for elementwise.
  std::map<ir::DType, double> peakMatrixFlops;
  std::map<ir::DType, double> peakVectorFlops;
  /// Dense datasheet FLOP/s, same keys as peakMatrixFlops / peakVectorFlops.
  std::map<ir::DType, double> datasheetMatrixFlops;
  std::map<ir::DType, double> datasheetVectorFlops;
  int64_t onChipBytesPerUnit = 0;  ///< shared memory per SM / SBUF per partition x 128
  int64_t numUnits = 0;            ///< SMs / NeuronCores
  int64_t l2Bytes = 0;
  std::vector<std::string> sources;

  /// Peak matrix FLOP/s for \p t (falls back to f32, then to any entry).
  double matrixFlops(ir::DType t) const;
  double vectorFlops(ir::DType t) const;
  /// Ridge point in FLOP/byte for contractions in dtype \p t.
  double ridgePoint(ir::DType t) const { return matrixFlops(t) / memoryBandwidth; }
  /// Ridge point in FLOP/byte for vector (elementwise / reduction) work.
  double vectorRidgePoint(ir::DType t) const { return vectorFlops(t) / memoryBandwidth; }
};

/// Names of the built-in targets ("a100", "h100", "h200", "trn1", "trn2").
std::vector<std::string> builtinTargetNames();
/// Loads a built-in target (compiled in from codegen/targets/<name>.textproto);
/// NotFound lists the known names.
absl::StatusOr<TargetSpec> loadBuiltinTarget(const std::string &name);
/// Parses a target from protobuf text format (target_spec.proto).
/// InvalidArgument for syntax errors (with line:column), unknown dtype
/// names, a backend other than "cuda"/"nki", a non-positive bandwidth or
/// rate, a repeated dtype, or no matrix / vector rate at all.
absl::StatusOr<TargetSpec> parseTargetSpec(const std::string &text);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_COST_TARGETSPEC_H
