//===- OpTableTest.cpp - Every op table row is complete and consistent ----===//
#include "ir/OpTable.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "test/unit/ir/TestUtil.h"

namespace fusec::ir {
namespace {

TEST(OpTable, EveryRowIsConsistent) {
  ASSERT_EQ(allOps().size(), static_cast<size_t>(OpKind::kUnregistered));
  for (const OpInfo &op : allOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_EQ(&opInfo(op.kind), &op);
    EXPECT_EQ(lookupOp(op.name), &op);
    // Arity.
    EXPECT_GE(op.minInputs, 0);
    EXPECT_TRUE(op.maxInputs == -1 || op.maxInputs >= op.minInputs);
    EXPECT_GE(op.minOutputs, 1);
    EXPECT_TRUE(op.maxOutputs == -1 || op.maxOutputs >= op.minOutputs);
    // Metadata operands are real operands; operand 0 is data except for
    // ConstantOfShape, whose only operand is its shape.
    for (int i = 0; i < 32; ++i) {
      if (!isMetadataOperand(op.kind, i)) continue;
      EXPECT_TRUE(op.maxInputs == -1 || i < op.maxInputs) << "metadata operand " << i;
      if (i == 0) {
        EXPECT_EQ(op.kind, OpKind::kConstantOfShape);
      }
    }
    // Views: one data input, output 0 aliases it; never a shape computation.
    if (op.view != ViewTrait::kNone) {
      EXPECT_GE(op.minInputs, 1);
      EXPECT_NE(op.fusionClass, FusionClass::kShape);
    }
    // Rows: reductions whose row rule reads what the schema declares.
    switch (op.row) {
      case RowTrait::kNone:
        break;
      case RowTrait::kLastAxis:
      case RowTrait::kFromAxis: {
        EXPECT_EQ(op.fusionClass, FusionClass::kReduction);
        const AttrSpec *axis = findAttrSpec(op.kind, "axis");
        ASSERT_NE(axis, nullptr);
        EXPECT_EQ(axis->presence, AttrSpec::Default::kValue);
        EXPECT_EQ(axis->kind, Attribute::Kind::kInt);
        break;
      }
      case RowTrait::kTrailingAxes:
        EXPECT_EQ(op.fusionClass, FusionClass::kReduction);
        EXPECT_TRUE(isMetadataOperand(op.kind, 1));
        ASSERT_NE(findAttrSpec(op.kind, "noop_with_empty_axes"), nullptr);
        break;
    }
    // Attribute schema: sorted, unique names; defaults of the declared kind.
    std::string prev;
    for (const AttrSpec &a : op.attrs) {
      SCOPED_TRACE(a.name);
      EXPECT_LT(prev, std::string(a.name));
      prev = a.name;
      EXPECT_EQ(findAttrSpec(op.kind, a.name), &a);
      if (a.presence == AttrSpec::Default::kValue) {
        EXPECT_EQ(a.value.kind(), a.kind);
      }
    }
  }
  EXPECT_EQ(findAttrSpec(OpKind::kUnregistered, "axis"), nullptr);
  EXPECT_FALSE(isMetadataOperand(OpKind::kUnregistered, 1));
  EXPECT_FALSE(isMetadataOperand(OpKind::kReshape, 40));
}

TEST(OpTable, DefaultsAreWrittenOnce) {
  EXPECT_EQ(findAttrSpec(OpKind::kLayerNormalization, "epsilon")->value.f(), 1e-5f);
  EXPECT_EQ(findAttrSpec(OpKind::kBatchNormalization, "epsilon")->value.f(), 1e-5f);
  EXPECT_EQ(findAttrSpec(OpKind::kSoftmax, "axis")->value.i(), -1);
  EXPECT_EQ(findAttrSpec(OpKind::kGather, "axis")->value.i(), 0);
  EXPECT_EQ(findAttrSpec(OpKind::kFlatten, "axis")->value.i(), 1);
  EXPECT_EQ(findAttrSpec(OpKind::kLeakyRelu, "alpha")->value.f(), 0.01f);
  EXPECT_EQ(findAttrSpec(OpKind::kGelu, "approximate")->value.s(), "none");
  EXPECT_EQ(findAttrSpec(OpKind::kCast, "to")->presence, AttrSpec::Default::kRequired);
  EXPECT_EQ(findAttrSpec(OpKind::kTranspose, "perm")->presence, AttrSpec::Default::kDerived);
  EXPECT_EQ(findAttrSpec(OpKind::kRelu, "alpha"), nullptr);
}

std::unique_ptr<Graph> parse(const std::string &inputs, const std::string &stmts) {
  auto g = parseGraph(testing::graphText(inputs, stmts));
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

TEST(OpTable, AttributeAccessorsReadSchemaDefaults) {
  auto g = parse("%x: f32[2,4], %s: f32[4]",
                 "%a = \"LayerNormalization\"(%x, %s) : f32[2,4]\n"
                 "%out = \"LayerNormalization\"(%a, %s) {axis = 1, epsilon = 0.5} : f32[2,4]");
  ASSERT_TRUE(g);
  const Node &dflt = *g->nodes()[0], &set = *g->nodes()[1];
  EXPECT_EQ(dflt.attrF("epsilon"), 1e-5f);
  EXPECT_EQ(dflt.attrI("axis"), -1);
  EXPECT_EQ(dflt.attrI("stash_type"), 1);
  EXPECT_EQ(set.attrF("epsilon"), 0.5f);
  EXPECT_EQ(set.attrI("axis"), 1);
}

TEST(OpTable, ViewNodes) {
  auto g = parse("%x: f32[2,4]",
                 "%a = \"Reshape\"(%x, %x) : f32[*]\n"
                 "%b = \"Dropout\"(%x) : f32[2,4]\n"
                 "%c, %m = \"Dropout\"(%x) : f32[2,4], bool[2,4]\n"
                 "%out = \"Transpose\"(%x) : f32[4,2]");
  ASSERT_TRUE(g);
  EXPECT_TRUE(nodeIsView(*g->nodes()[0]));
  EXPECT_TRUE(nodeIsView(*g->nodes()[1]));
  EXPECT_FALSE(nodeIsView(*g->nodes()[2]));
  EXPECT_FALSE(nodeIsView(*g->nodes()[3]));
}

std::string rowText(const std::string &inputs, const std::string &stmt) {
  auto g = parse(inputs, stmt);
  if (!g) return "parse error";
  auto row = rowAxes(*g->nodes().back());
  if (!row) return "none";
  return absl::StrCat("[", row->first, ", ", row->rank, ")");
}

TEST(OpTable, RowAxes) {
  EXPECT_EQ(rowText("%x: f32[2,3,4]", "%out = \"Softmax\"(%x) : f32[2,3,4]"), "[2, 3)");
  EXPECT_EQ(rowText("%x: f32[2,3,4]", "%out = \"Softmax\"(%x) {axis = 1} : f32[2,3,4]"), "none");
  EXPECT_EQ(rowText("%x: f32[2,3,4]", "%out = \"LogSoftmax\"(%x) {axis = -1} : f32[2,3,4]"),
            "[2, 3)");
  EXPECT_EQ(rowText("%x: f32[2,3,4], %s: f32[3,4]",
                    "%out = \"LayerNormalization\"(%x, %s) {axis = 1} : f32[2,3,4]"),
            "[1, 3)");
  EXPECT_EQ(rowText("%x: f32[2,3,4], %s: f32[4]",
                    "%out = \"RMSNormalization\"(%x, %s) : f32[2,3,4]"),
            "[2, 3)");
  EXPECT_EQ(rowText("%x: f32[2,3,4], %s: f32[4]",
                    "%out = \"LayerNormalization\"(%x, %s) {axis = 3} : f32[2,3,4]"),
            "none");  // out of range
  EXPECT_EQ(rowText("%x: f32[2,3,4]",
                    "%ax = constant i64[2] dense<[-1, 1]>\n"
                    "%out = \"ReduceSum\"(%x, %ax) : f32[2,1,1]"),
            "[1, 3)");
  EXPECT_EQ(rowText("%x: f32[2,3,4]",
                    "%ax = constant i64[1] dense<[1]>\n"
                    "%out = \"ReduceMax\"(%x, %ax) : f32[2,1,4]"),
            "none");
  EXPECT_EQ(rowText("%x: f32[2,3]", "%out = \"ReduceMean\"(%x) : f32[1,1]"), "[0, 2)");
  EXPECT_EQ(rowText("%x: f32[2,3]", "%out = \"ArgMax\"(%x) : i64[1,3]"), "none");
  EXPECT_EQ(rowText("%x: f32[2,3]", "%out = \"ArgMax\"(%x) {axis = 1} : i64[2,1]"), "[1, 2)");
  EXPECT_EQ(rowText("%x: f32[2,3]", "%out = \"Relu\"(%x) : f32[2,3]"), "none");
}

std::string verifyText(const std::string &inputs, const std::string &stmts) {
  auto g = parseGraph(testing::graphText(inputs, stmts));
  if (!g.ok()) return absl::StrCat("parse error: ", g.status().message());
  absl::Status s = verifyGraph(**g);
  return s.ok() ? "ok" : std::string(s.message());
}

TEST(OpTable, VerifierChecksAttributeKinds) {
  EXPECT_EQ(verifyText("%x: f32[2,4]", "%out = \"Softmax\"(%x) {axis = 1.5} : f32[2,4] loc(\"s\")"),
            "node 's' (Softmax): attribute 'axis' is float, expected int");
  EXPECT_EQ(verifyText("%x: f32[2,4]",
                       "%out = \"Gelu\"(%x) {approximate = 1} : f32[2,4] loc(\"g\")"),
            "node 'g' (Gelu): attribute 'approximate' is int, expected string");
  // An int where a float is expected is accepted (exporters write 1 for 1.0).
  EXPECT_EQ(verifyText("%x: f32[2,4]", "%out = \"LeakyRelu\"(%x) {alpha = 1} : f32[2,4]"), "ok");
  // Attributes outside the schema are kept and not checked.
  EXPECT_EQ(verifyText("%x: f32[2,4]",
                       "%out = \"Relu\"(%x) {onnx_only = \"x\", other = 1.5} : f32[2,4]"),
            "ok");
}

}  // namespace
}  // namespace fusec::ir
