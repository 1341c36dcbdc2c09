//===- Printer.h - Text form of the IR --------------------------*- C++ -*-===//
#ifndef FUSEC_IR_PRINTER_H
#define FUSEC_IR_PRINTER_H

#include <cstdint>
#include <string>

#include "ir/Graph.h"

namespace fusec::ir {

struct PrintOptions {
  /// Print each node's location: loc("onnx node name").
  bool printLocations = false;
  /// Constants with more elements than this print as dense<elided>; -1 = never.
  int64_t elideConstantsLargerThan = -1;
};

/// Prints \p graph in the text form that ir/Parser.h reads back.
std::string printGraph(const Graph &graph, const PrintOptions &options = {});

}  // namespace fusec::ir

#endif  // FUSEC_IR_PRINTER_H
