//===- TestData.h - The ONNX backend-test data layout, for fusec-run -----===//
//
// A test data set is a folder of serialized onnx.TensorProto files,
// input_<i>.pb and output_<i>.pb, i = 0, 1, ... (the layout of the ONNX
// backend node tests, onnx/backend/test/data). fusec-run's reference and
// artifact paths both read it through these functions, so they agree on
// which file is which.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_FUSEC_RUN_TESTDATA_H
#define FUSEC_TOOLS_FUSEC_RUN_TESTDATA_H

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Tensor.h"

namespace fusec::tools {

/// One tensor of a data set: the TensorProto's name ("" when unnamed) and
/// its value.
using NamedTensor = std::pair<std::string, ir::Tensor>;

/// Loads DIR/<prefix>_<i>.pb for i = 0, 1, ... up to the first missing
/// index. InvalidArgument when a higher index exists past that gap
/// (output_0.pb and output_2.pb without output_1.pb: the file after the gap
/// would otherwise go unchecked); the loader's errors for a bad file.
absl::StatusOr<std::vector<NamedTensor>> loadSeries(const std::string &dir, const std::string &prefix);

/// Which data tensor each of \p slots (the model's inputs or outputs, in
/// order) takes: index into \p data, or -1 when none. A tensor whose name is
/// a slot's name goes to that slot; the others go by position (data i to
/// slot i) when that slot is still free and the tensor's name names no other
/// slot. InvalidArgument naming the file (\p prefix_<k>.pb) when a tensor
/// matches no slot, so that no data is silently left unused.
absl::StatusOr<std::vector<int>> matchSeries(const std::vector<NamedTensor> &data,
                                             const std::vector<std::string> &slots, const std::string &prefix);

}  // namespace fusec::tools

#endif  // FUSEC_TOOLS_FUSEC_RUN_TESTDATA_H
