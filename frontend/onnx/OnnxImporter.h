//===- OnnxImporter.h - ONNX ModelProto to ir::Graph ------------*- C++ -*-===//
//
// Reads an ONNX model (protobuf ModelProto; weights embedded or in external
// data files inside the model's folder) into an ir::Graph, then runs shape
// inference. See ../shared/docs/DESIGN.md, "frontend/".
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_ONNXIMPORTER_H
#define FUSEC_FRONTEND_ONNX_ONNXIMPORTER_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

namespace fusec::frontend {

/// Graph inputs bound while importing, before any node is read, so that
/// expansions done at import (recurrent ops unrolled over a static sequence
/// length, ConvInteger's geometry, If on a constant condition, shape
/// subgraphs) see them: fusec --shape and --input-value.
struct ImportOptions {
  /// Input name -> static dims (elements per dim). Each symbolic dim bound
  /// here binds its symbol in every other graph input too; a rank or static
  /// dim that disagrees with the model is InvalidArgument.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Input name -> the value the input is compiled with (it becomes a
  /// constant and the graph has no such input any more). The tensor must
  /// have the input's declared dtype and agree with its declared dims; a
  /// tensor of dtype f64 and rank 1 (the inline form NAME=v,v,...) is
  /// converted to the declared dtype when every value converts exactly, and
  /// to a scalar when the input is declared rank 0 and there is one value.
  /// Unknown names, inputs with an initializer and values that do not fit
  /// are InvalidArgument.
  std::map<std::string, ir::Tensor> inputValues;
};

/// Imports the ONNX model at \p path.
///
/// Errors: NotFound (missing model or external data file), InvalidArgument
/// (truncated/corrupt protobuf, bad dtype, negative dim, external data path
/// escaping the model's folder, malformed node), Unimplemented (one error
/// listing every unsupported op: node name, op type, domain, opset; or an
/// opset outside [11, newest the op table knows]).
absl::StatusOr<std::unique_ptr<ir::Graph>> importOnnxModel(const std::string &path);
/// Same, with graph inputs bound as \p options says.
absl::StatusOr<std::unique_ptr<ir::Graph>> importOnnxModel(const std::string &path,
                                                           const ImportOptions &options);

/// Imports a serialized ModelProto held in memory (\p bytes). External data
/// locations resolve against \p modelDir, with the same checks as above;
/// pass "" to refuse every external data reference. Errors as above. Used by
/// the fuzzing harness (fuzz/) and by callers that already hold the bytes.
absl::StatusOr<std::unique_ptr<ir::Graph>> importOnnxModelFromBytes(
    const std::string &bytes, const std::string &modelDir, const ImportOptions &options = {});

/// True if the importer accepts ONNX op \p opType of \p domain ("" or
/// "ai.onnx" for the default domain) at ai.onnx opset \p opset: an op of the
/// op table (other than fusec's internal ops), or an op it expands into table
/// ops (an ONNX function whose body the ONNX library gives and whose ops are
/// accepted in turn; see frontend/onnx/internal/OnnxFunctions.h), or Scan
/// (opsets 9+; unrolled when its scan length is static, else the import
/// fails naming it), or Loop (unrolled when its trip count and condition are
/// known at import, else the import fails naming it and the graph inputs to
/// bind: inputValuesNeeded), or If (one branch inlined on a constant condition, both
/// guarded on a run-time one; the import fails naming it when its branches'
/// outputs differ in dtype or shape).
bool importerSupportsOp(const std::string &domain, const std::string &opType, int64_t opset);

/// The graph inputs that an import error \p status says must be bound with
/// ImportOptions::inputValues (--input-value) for the import to succeed: a
/// Loop whose trip count or condition is computed from them (the importer
/// unrolls Loop only over a trip count known at import; ONNX Operators.md
/// "Loop"). Empty for any other status.
std::vector<std::string> inputValuesNeeded(const absl::Status &status);

/// Reads one serialized onnx.TensorProto file (the ONNX backend-test layout's
/// input_<i>.pb / output_<i>.pb). \p name receives the tensor's name if given.
absl::StatusOr<ir::Tensor> loadTensorProtoFile(const std::string &path,
                                               std::string *name = nullptr);

}  // namespace fusec::frontend

#endif  // FUSEC_FRONTEND_ONNX_ONNXIMPORTER_H
