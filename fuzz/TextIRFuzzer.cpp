//===- TextIRFuzzer.cpp - libFuzzer harness: the text IR parser -----------===//
//
// text -> ir::parseGraph -> verifier -> printGraph -> parseGraph again. A
// graph that parses and verifies must print to text that parses back to the
// same text (the round trip the lit tests rely on); a mismatch is a bug and
// traps. Errors must come back as an absl::Status, never a crash.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace fusec;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto graph = ir::parseGraph(text);
  if (!graph.ok() || !ir::verifyGraph(**graph).ok()) return 0;
  std::string printed = ir::printGraph(**graph);
  auto again = ir::parseGraph(printed);
  if (!again.ok()) __builtin_trap();
  if (ir::printGraph(**again) != printed) __builtin_trap();
  return 0;
}
