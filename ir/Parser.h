//===- Parser.h - Reads the text form of the IR -----------------*- C++ -*-===//
#ifndef FUSEC_IR_PARSER_H
#define FUSEC_IR_PARSER_H

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/Graph.h"

namespace fusec::ir {

/// Parses a graph printed by printGraph(). Errors (InvalidArgument) give
/// line:column and what was expected.
absl::StatusOr<std::unique_ptr<Graph>> parseGraph(std::string_view text);

}  // namespace fusec::ir

#endif  // FUSEC_IR_PARSER_H
