//===- TestUtil.h - Helpers for the ir unit tests ---------------*- C++ -*-===//
#ifndef FUSEC_TEST_UNIT_IR_TESTUTIL_H
#define FUSEC_TEST_UNIT_IR_TESTUTIL_H

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "ir/Parser.h"
#include "ir/ShapeInference.h"

namespace fusec::ir::testing {

/// Builds graph text from input declarations and statements. Statements
/// without a " : " get "undef[*]" result types (one per result).
inline std::string graphText(const std::string &inputs, const std::string &stmts,
                             const std::string &outputs = "%out") {
  std::string body;
  for (absl::string_view l : absl::StrSplit(stmts, '\n', absl::SkipWhitespace())) {
    std::string line(l);
    if (line.find(" : ") == std::string::npos && line.find("constant") == std::string::npos) {
      size_t eq = line.find(" = ");
      int results = 1;
      for (size_t i = 0; eq != std::string::npos && i < eq; ++i) results += line[i] == ',';
      line += " :";
      for (int i = 0; i < results; ++i) line += i ? ", undef[*]" : " undef[*]";
    }
    absl::StrAppend(&body, "  ", line, "\n");
  }
  return absl::StrCat("graph @g(", inputs, ") -> (", outputs, ") {\n", body, "  return ",
                      outputs, "\n}\n");
}

/// Parses, runs inferShapes and returns the type of value \p name as text, or
/// "error: <message>".
inline std::string inferType(const std::string &inputs, const std::string &stmts,
                             const std::string &name = "out") {
  auto g = parseGraph(graphText(inputs, stmts, "%" + name));
  if (!g.ok()) return absl::StrCat("parse error: ", g.status().message());
  absl::Status s = inferShapes(**g);
  if (!s.ok()) return absl::StrCat("error: ", s.message());
  return (*g)->findValue(name)->type().str();
}

}  // namespace fusec::ir::testing

#endif  // FUSEC_TEST_UNIT_IR_TESTUTIL_H
