//===- KernelTestUtil.h - Helpers for reference-kernel unit tests -*- C++ -*-===//
//
// Builds a one-node graph whose inputs are constants and evaluates it with
// interp::evaluateNode; tensor builders and a tolerance check for the
// Elementwise / Reduction / Nn kernel tests.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_INTERP_KERNELTESTUTIL_H
#define FUSEC_TEST_UNIT_INTERP_KERNELTESTUTIL_H

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "interp/Interpreter.h"
#include "ir/Graph.h"

namespace fusec::interp::testing {

using ir::DType;
using ir::Tensor;

inline Tensor f32(ir::Shape shape, std::vector<double> v) {
  return Tensor::fromDoubles(DType::kF32, std::move(shape), v);
}
inline Tensor ft(DType t, ir::Shape shape, std::vector<double> v) {
  return Tensor::fromDoubles(t, std::move(shape), v);
}
inline Tensor it(DType t, ir::Shape shape, std::vector<int64_t> v) {
  return Tensor::fromInts(t, std::move(shape), v);
}
inline Tensor i64(ir::Shape shape, std::vector<int64_t> v) { return it(DType::kI64, std::move(shape), v); }
inline Tensor boolT(ir::Shape shape, std::vector<int64_t> v) { return it(DType::kBool, std::move(shape), v); }
// Attribute builders: attrs{{"axis", I(1)}, {"pads", Is({1, 1})}, ...}.
inline ir::Attribute I(int64_t v) { return ir::Attribute(v); }
inline ir::Attribute F(float v) { return ir::Attribute(v); }
inline ir::Attribute S(const char *v) { return ir::Attribute(std::string(v)); }
inline ir::Attribute Is(std::vector<int64_t> v) { return ir::Attribute(std::move(v)); }

/// ((i * mul) % mod - off) / div for i = 0, 1, ... (exact in f32); the same
/// formula generated the numpy / onnxruntime reference values in the tests.
inline Tensor pattern(ir::Shape shape, int64_t mul = 37, int64_t mod = 19, int64_t off = 9,
                      double div = 4.0) {
  std::vector<double> v(ir::numElements(shape));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((static_cast<int64_t>(i) * mul) % mod - off) / div;
  return f32(std::move(shape), v);
}

/// Evaluates one node of op \p op on \p inputs (nullopt = omitted optional).
inline absl::StatusOr<std::vector<Tensor>> run(const std::string &op,
                                               std::vector<std::optional<Tensor>> inputs,
                                               ir::AttributeMap attrs = {}, int numOutputs = 1) {
  ir::Graph g;
  std::vector<ir::Value *> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values.push_back(inputs[i] ? g.addConstant("in" + std::to_string(i), *inputs[i]) : nullptr);
  std::vector<std::string> outs;
  for (int i = 0; i < numOutputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node *n = g.addNode(op, values, outs, std::move(attrs));
  std::vector<const Tensor *> ptrs;
  for (ir::Value *v : values) ptrs.push_back(v ? v->constant() : nullptr);
  return evaluateNode(*n, ptrs);
}

/// As run(), expecting success; \returns output 0.
inline Tensor run1(const std::string &op, std::vector<std::optional<Tensor>> inputs,
                   ir::AttributeMap attrs = {}) {
  auto r = run(op, std::move(inputs), std::move(attrs));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok() || r->empty()) return Tensor();
  return (*r)[0];
}

/// The status code of evaluating the node (OK if it succeeded).
inline absl::StatusCode code(const std::string &op, std::vector<std::optional<Tensor>> inputs,
                             ir::AttributeMap attrs = {}) {
  return run(op, std::move(inputs), std::move(attrs)).status().code();
}

/// Checks dtype, shape and values (|a - e| <= tol, NaN matches NaN).
inline void expectNear(const Tensor &t, DType dtype, const ir::Shape &shape,
                       const std::vector<double> &want, double tol = 1e-5) {
  EXPECT_EQ(t.dtype(), dtype) << ir::dtypeName(t.dtype());
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(t.numElements()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    double a = t.getDouble(static_cast<int64_t>(i));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(a, want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(a, want[i], tol) << "element " << i;
    }
  }
}

/// Checks dtype, shape and exact integer values.
inline void expectInts(const Tensor &t, DType dtype, const ir::Shape &shape,
                       const std::vector<int64_t> &want) {
  EXPECT_EQ(t.dtype(), dtype) << ir::dtypeName(t.dtype());
  ASSERT_EQ(t.shape(), shape);
  EXPECT_EQ(t.toInts(), want);
}

}  // namespace fusec::interp::testing

#endif  // FUSEC_TEST_UNIT_INTERP_KERNELTESTUTIL_H
