//===- OnnxTensor.h - onnx.TensorProto to ir::Tensor ------------*- C++ -*-===//
//
// Converts ONNX TensorProto messages (initializers, Constant values, tensor
// attributes, backend-test .pb files) to ir::Tensor. Data comes from raw_data,
// the typed repeated fields (per the rules in onnx.proto) or an external data
// file that must lie inside the model's folder. Private to the frontend.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_FRONTEND_ONNX_INTERNAL_ONNXTENSOR_H
#define FUSEC_FRONTEND_ONNX_INTERNAL_ONNXTENSOR_H

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/Tensor.h"
#include "onnx/onnx_pb.h"

namespace fusec::frontend::internal {

/// \returns the ONNX name of TensorProto.DataType \p code ("FLOAT",
/// "COMPLEX64", "FLOAT8E4M3FN", ...), or "code N" for codes it does not know.
std::string onnxDTypeName(int32_t code);

/// The error for element type \p code that fusec cannot hold: Unimplemented
/// for a type ONNX defines (complex, float8, int4, ...), InvalidArgument for
/// a code ONNX does not define. \p what ("graph input 'x'", or "") leads the
/// message: "<what> has unsupported dtype FLOAT8E4M3FN".
absl::Status unsupportedDType(int32_t code, const std::string &what);

/// Converts \p proto to a tensor. External data locations are resolved
/// against \p baseDir (the model's folder) and must stay inside it.
///
/// Errors: Unimplemented (a dtype fusec lacks), InvalidArgument (unknown dtype code, negative dim, data size not
/// matching the shape, external path absolute or escaping \p baseDir,
/// offset/length beyond the file), NotFound (missing external file).
/// Messages name the tensor.
absl::StatusOr<ir::Tensor> tensorFromProto(const onnx::TensorProto &proto,
                                           const std::string &baseDir);

/// Resolves external data \p location against \p baseDir: it must be a
/// relative path that, after resolving `..` and symlinks, names a file
/// inside \p baseDir. \returns the resolved path.
/// Errors: InvalidArgument (absolute or escaping), NotFound (no such file).
absl::StatusOr<std::string> resolveExternalPath(const std::string &baseDir,
                                                const std::string &location);

/// Reads a whole file holding one protobuf message (a model or a test-data
/// tensor) with read(2). Errors: NotFound, InvalidArgument (not a regular
/// file, a read error such as EIO with its strerror, or over protobuf's 2 GiB
/// message limit, checked before reading), ResourceExhausted (out of memory).
absl::StatusOr<std::string> readFileBytes(const std::string &path);

}  // namespace fusec::frontend::internal

#endif  // FUSEC_FRONTEND_ONNX_INTERNAL_ONNXTENSOR_H
