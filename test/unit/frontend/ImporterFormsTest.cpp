//===- ImporterFormsTest.cpp - Hostile and unusual model forms ------------===//
//
// The importer's handling of forms production exporters write (-1 dims,
// model-local functions, If/Loop bodies with unsupported ops) and of hostile
// input (internal op names, IR versions, hard-linked external data, terminal
// control characters in names).
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/OnnxImporter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/Interpreter.h"
#include "ir/Graph.h"
#include "onnx/onnx_pb.h"
#include "support/Escape.h"
#include "support/Status.h"
#include "test/unit/frontend/OnnxModelBuilder.h"

namespace fusec::frontend {
namespace {

using namespace onnx_builder;  // NOLINT: test helpers
using ::testing::HasSubstr;
using ::testing::Not;

std::string messageOf(const absl::Status &s) { return std::string(s.message()); }

//===----------------------------------------------------------------------===//
// IR version
//===----------------------------------------------------------------------===//

TEST(ImporterFormsTest, IrVersionOutsideTheKnownRangeIsRefused) {
  TempDir dir;
  for (int64_t v : {0, 2, 15, 1000}) {
    auto m = makeModel(17);
    m.set_ir_version(v);
    addInput(m, "x", {2});
    addNode(m, "Relu", {"x"}, {"y"}, "r");
    addOutput(m, "y", {2});
    auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
    ASSERT_FALSE(g.ok()) << "ir_version " << v;
    EXPECT_THAT(messageOf(g.status()), HasSubstr("IR version " + std::to_string(v)));
  }
  for (int64_t v : {3, 10, 14}) {
    auto m = makeModel(17);
    m.set_ir_version(v);
    addInput(m, "x", {2});
    addNode(m, "Relu", {"x"}, {"y"}, "r");
    addOutput(m, "y", {2});
    EXPECT_TRUE(importOnnxModel(writeModel(m, dir.file("model.onnx"))).ok()) << v;
  }
}

TEST(ImporterFormsTest, NewestOpsetImportsAndRuns) {
  TempDir dir;
  auto m = makeModel(28);
  m.set_ir_version(13);
  addInput(m, "x", {3});
  addNode(m, "Relu", {"x"}, {"r"}, "relu");
  auto *mod = addNode(m, "Mod", {"r", "two"}, {"y"}, "mod");
  addIntAttr(mod, "fmod", 1);
  addFloatInit(m, "two", {}, {2.0f});
  addOutput(m, "y", {3});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->opset(), 28);
  std::map<std::string, ir::Tensor> inputs;
  inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {3}, {-1, 3, 4.5});
  auto out = interp::runGraph(**g, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].toDoubles(), (std::vector<double>{0, 1, 0.5}));
}

TEST(ImporterFormsTest, RangeWithA16BitStashTypeIsRefused) {
  // Range-27's stash_type: f32 (the default) is what fusec computes; an f16
  // accumulation is not, so it is refused rather than computed differently.
  for (int64_t stash : {1, 10}) {
    TempDir dir;
    auto m = makeModel(27);
    m.set_ir_version(13);
    for (const char *n : {"start", "limit", "delta"}) addInput(m, n, {}, onnx::TensorProto::FLOAT16);
    auto *r = addNode(m, "Range", {"start", "limit", "delta"}, {"y"}, "range");
    addIntAttr(r, "stash_type", stash);
    auto *o = m.mutable_graph()->add_output();
    o->set_name("y");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
    auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
    if (stash == 1) {
      EXPECT_TRUE(g.ok()) << g.status();
    } else {
      ASSERT_FALSE(g.ok());
      EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
      EXPECT_THAT(messageOf(g.status()), HasSubstr("stash_type 10"));
    }
  }
}

//===----------------------------------------------------------------------===//
// -1 as an unknown dimension
//===----------------------------------------------------------------------===//

TEST(ImporterFormsTest, MinusOneDimBecomesASymbol) {
  TempDir dir;
  auto m = makeModel(17);
  addInput(m, "x", {-1, 3, -1});
  addNode(m, "Relu", {"x"}, {"y"}, "r");
  addOutput(m, "y", {-1, 3, -1});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::TensorType &t = (*g)->findValue("x")->type();
  ASSERT_EQ(t.rank(), 3);
  EXPECT_TRUE(t.shape[0].isSymbolic());
  EXPECT_TRUE(t.shape[2].isSymbolic());
  EXPECT_EQ(t.shape[1].value, 3);
  // Two unknown dims are two different symbols, not one.
  EXPECT_NE(t.shape[0].symbol, t.shape[2].symbol);
  // Other negative values are still errors.
  auto m2 = makeModel(17);
  addInput(m2, "x", {-2});
  addNode(m2, "Relu", {"x"}, {"y"}, "r");
  addOutput(m2, "y", {2});
  auto g2 = importOnnxModel(writeModel(m2, dir.file("model2.onnx")));
  ASSERT_FALSE(g2.ok());
  EXPECT_THAT(messageOf(g2.status()), HasSubstr("negative dimension -2"));
}

TEST(ImporterFormsTest, ZeroDimIsAStaticZero) {
  // The ONNX spec: dim_value 0 is a dimension of size 0 (an empty tensor),
  // in graph inputs, outputs and value_info alike; only -1 (and an absent
  // dim) reads as unknown. (Older TF / Caffe2 converters that wrote 0 for
  // "unknown" now get a static 0: README.md.)
  TempDir dir;
  auto m = makeModel(17);
  addInput(m, "x", {int64_t{0}, 3});
  addInput(m, "u", {int64_t{-1}, 3});
  addNode(m, "Relu", {"x"}, {"r"}, "r");
  addNode(m, "Neg", {"r"}, {"y"}, "n");
  addNode(m, "Neg", {"u"}, {"z"}, "nu");
  setValueInfo(m.mutable_graph()->add_value_info(), "r", onnx::TensorProto::FLOAT, {int64_t{0}, 3});
  addOutput(m, "y", {int64_t{0}, 3});
  addOutput(m, "z", {int64_t{-1}, 3});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  for (const char *name : {"x", "r", "y"}) {
    const ir::TensorType &t = (*g)->findValue(name)->type();
    ASSERT_EQ(t.rank(), 2) << name;
    EXPECT_TRUE(t.shape[0].isStatic()) << name;
    EXPECT_EQ(t.shape[0].value, 0) << name;
    EXPECT_EQ(t.numElements(), std::optional<int64_t>(0)) << name;
  }
  EXPECT_TRUE((*g)->findValue("u")->type().shape[0].isSymbolic());
  std::map<std::string, ir::Tensor> inputs;
  inputs["x"] = ir::Tensor(ir::DType::kF32, {0, 3});
  inputs["u"] = ir::Tensor::fromDoubles(ir::DType::kF32, {2, 3}, {1, -2, 3, 4, 5, 6});
  auto out = interp::runGraph(**g, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (ir::Shape{0, 3}));
  EXPECT_EQ((*out)[1].shape(), (ir::Shape{2, 3}));
}

TEST(ImporterFormsTest, DeclaredOutputTypeThatContradictsTheOp) {
  TempDir dir;
  // Relu of f32[2,3] declared as f32[2,4]: a claim the op cannot meet. As
  // ONNX Runtime does, the computed shape is used, with a warning (exporters
  // write stale output shapes; red team s28 M5).
  auto m = makeModel(17);
  addInput(m, "x", {2, 3});
  addNode(m, "Relu", {"x"}, {"y"}, "r");
  addOutput(m, "y", {2, 4});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->outputs()[0]->type().str(), "f32[2,3]");
  ASSERT_EQ((*g)->importWarnings().size(), 1u);
  EXPECT_THAT((*g)->importWarnings()[0], HasSubstr("graph output 'y' is declared f32[2,4]"));
  // Declared dtype that differs: also an error; unknown/symbolic dims refine.
  auto m2 = makeModel(17);
  addInput(m2, "x", {2, 3});
  addNode(m2, "Relu", {"x"}, {"y"}, "r");
  addOutput(m2, "y", {2, 3}, onnx::TensorProto::INT64);
  EXPECT_FALSE(importOnnxModel(writeModel(m2, dir.file("model2.onnx"))).ok());
  auto m3 = makeModel(17);
  addInput(m3, "x", {"?", 3});
  addNode(m3, "Relu", {"x"}, {"y"}, "r");
  addOutput(m3, "y", {"batch", 3});
  EXPECT_TRUE(importOnnxModel(writeModel(m3, dir.file("model3.onnx"))).ok());
}

//===----------------------------------------------------------------------===//
// fusec's internal ops are not ONNX ops
//===----------------------------------------------------------------------===//

TEST(ImporterFormsTest, InternalOpInOnnxDomainIsRefused) {
  TempDir dir;
  for (const char *domain : {"", "ai.onnx"}) {
    auto m = makeModel(17);
    addInput(m, "q", {1, 1, 4, 8});
    addInput(m, "k", {1, 1, 4, 8});
    addInput(m, "v", {1, 1, 4, 8});
    addNode(m, "FusedAttention", {"q", "k", "v"}, {"o"}, "forged", domain);
    addOutput(m, "o", {1, 1, 4, 8});
    auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(messageOf(g.status()), HasSubstr("node 'forged' op 'FusedAttention'"));
    EXPECT_THAT(messageOf(g.status()), HasSubstr("internal op"));
  }
}

//===----------------------------------------------------------------------===//
// Subgraph bodies in the unsupported-op report
//===----------------------------------------------------------------------===//

onnx::GraphProto branch(const std::string &op, const std::string &out) {
  onnx::GraphProto g;
  auto *n = g.add_node();
  n->set_op_type(op);
  n->set_name("inner_" + op);
  n->add_input("x");
  n->add_output(out);
  g.add_output()->set_name(out);
  return g;
}

TEST(ImporterFormsTest, UnsupportedOpsInsideIfBranchesAreReported) {
  TempDir dir;
  auto m = makeModel(17);
  addInput(m, "x", {4});
  addInput(m, "c", {}, onnx::TensorProto::BOOL);
  auto *node = addNode(m, "If", {"c"}, {"y"}, "choose");
  auto *thenA = node->add_attribute();
  thenA->set_name("then_branch");
  thenA->set_type(onnx::AttributeProto::GRAPH);
  *thenA->mutable_g() = branch("StringNormalizer", "t");
  auto *elseA = node->add_attribute();
  elseA->set_name("else_branch");
  elseA->set_type(onnx::AttributeProto::GRAPH);
  *elseA->mutable_g() = branch("Relu", "e");  // supported: not listed
  // A nested If inside the then branch with an unsupported op of its own.
  auto *nested = thenA->mutable_g()->add_node();
  nested->set_op_type("If");
  nested->set_name("nested_if");
  nested->add_input("c");
  nested->add_output("z");
  auto *na = nested->add_attribute();
  na->set_name("then_branch");
  na->set_type(onnx::AttributeProto::GRAPH);
  *na->mutable_g() = branch("TfIdfVectorizer", "g");
  addOutput(m, "y", {4});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_FALSE(g.ok());
  std::string msg = messageOf(g.status());
  // An If on a run-time condition imports both branches (guarded), so the
  // Ifs themselves are no problem; the ops of every branch are listed.
  EXPECT_THAT(msg, HasSubstr("model uses 2 unsupported ops:\n"));
  EXPECT_THAT(msg, Not(HasSubstr("op 'If'")));
  EXPECT_THAT(msg, HasSubstr("node 'choose/then_branch/inner_StringNormalizer' op 'StringNormalizer'"));
  EXPECT_THAT(msg, HasSubstr(
                       "node 'choose/then_branch/nested_if/then_branch/inner_TfIdfVectorizer' op "
                       "'TfIdfVectorizer'"));
  EXPECT_THAT(msg, Not(HasSubstr("inner_Relu")));
}

//===----------------------------------------------------------------------===//
// Model-local functions
//===----------------------------------------------------------------------===//

/// A local function "custom.ScaledRelu(X) -> Y" = Relu(X) * alpha, alpha a
/// float attribute referenced from the body (ref_attr_name), with an
/// optional IR-9 default stored as attribute_proto.
onnx::FunctionProto scaledRelu(bool withDefault) {
  onnx::FunctionProto f;
  f.set_name("ScaledRelu");
  f.set_domain("custom");
  f.add_input("X");
  f.add_output("Y");
  f.add_attribute("alpha");
  auto *os = f.add_opset_import();
  os->set_domain("");
  os->set_version(17);
  auto *c = f.add_node();
  c->set_op_type("Constant");
  c->add_output("a");
  auto *va = c->add_attribute();
  va->set_name("value_float");
  va->set_type(onnx::AttributeProto::FLOAT);
  va->set_ref_attr_name("alpha");
  auto *r = f.add_node();
  r->set_op_type("Relu");
  r->add_input("X");
  r->add_output("r");
  auto *mul = f.add_node();
  mul->set_op_type("Mul");
  mul->add_input("r");
  mul->add_input("a");
  mul->add_output("Y");
  if (withDefault) {
    // FunctionProto.attribute_proto = field 11 (newer than Debian's onnx.proto).
    onnx::AttributeProto def;
    def.set_name("alpha");
    def.set_type(onnx::AttributeProto::FLOAT);
    def.set_f(3.0f);
    f.GetReflection()->MutableUnknownFields(&f)->AddLengthDelimited(11, def.SerializeAsString());
  }
  return f;
}

TEST(ImporterFormsTest, LocalFunctionsAreInlined) {
  TempDir dir;
  auto m = makeModel(17);
  m.set_ir_version(9);
  auto *os = m.add_opset_import();
  os->set_domain("custom");
  os->set_version(1);
  *m.add_functions() = scaledRelu(/*withDefault=*/true);
  addInput(m, "x", {4});
  // Two calls: one sets alpha, one takes the default; value names inside the
  // body ("r", "a") must not clash with each other or with the graph's "r".
  auto *c1 = addNode(m, "ScaledRelu", {"x"}, {"y1"}, "call1", "custom");
  auto *a = c1->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(2.0f);
  addNode(m, "ScaledRelu", {"y1"}, {"y2"}, "call2", "custom");
  addNode(m, "Neg", {"y2"}, {"r"}, "r");
  addOutput(m, "r", {4});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_NE(findNode(**g, "call1/Relu_1"), nullptr);
  EXPECT_NE(findNode(**g, "call2/Mul_2"), nullptr);
  std::map<std::string, ir::Tensor> inputs;
  inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {4}, {-1, 0, 0.5, 2});
  auto out = interp::runGraph(**g, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  // -(relu(relu(x) * 2) * 3)
  EXPECT_EQ((*out)[0].toDoubles(), (std::vector<double>{0, 0, -3, -12}));
}

TEST(ImporterFormsTest, RecursiveLocalFunctionIsAnErrorNotACrash) {
  TempDir dir;
  auto m = makeModel(17);
  m.set_ir_version(9);
  auto *os = m.add_opset_import();
  os->set_domain("custom");
  os->set_version(1);
  onnx::FunctionProto f;
  f.set_name("Loop1");
  f.set_domain("custom");
  f.add_input("X");
  f.add_output("Y");
  auto *self = f.add_node();
  self->set_op_type("Loop1");
  self->set_domain("custom");
  self->add_input("X");
  self->add_output("Y");
  *m.add_functions() = f;
  addInput(m, "x", {4});
  addNode(m, "Loop1", {"x"}, {"y"}, "call", "custom");
  addOutput(m, "y", {4});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(messageOf(g.status()), HasSubstr("nests deeper than 64"));
}

TEST(ImporterFormsTest, LocalFunctionThatDoesNotComputeAnOutputIsNamed) {
  // custom.ScaledRelu declares a second output "Z" its body never computes;
  // a call that uses it is an error naming the function and the output.
  TempDir dir;
  auto m = makeModel(17);
  m.set_ir_version(9);
  auto *os = m.add_opset_import();
  os->set_domain("custom");
  os->set_version(1);
  onnx::FunctionProto f = scaledRelu(/*withDefault=*/true);
  f.add_output("Z");
  *m.add_functions() = f;
  addInput(m, "x", {4});
  addNode(m, "ScaledRelu", {"x"}, {"y", "z"}, "call", "custom");
  addOutput(m, "y", {4});
  addOutput(m, "z", {4});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(messageOf(g.status()),
              HasSubstr("function 'custom.ScaledRelu' does not compute its output 1 ('Z'), which the call uses as 'z'"));
}

TEST(ImporterFormsTest, ExponentiallyGrowingLocalFunctionsAreAnErrorNotAnOutOfMemory) {
  // F0 is Relu; F(i) calls F(i-1) twice, chained: 2^40 nodes from a small
  // file once inlined. The importer stops at its node limit, naming a call.
  TempDir dir;
  auto m = makeModel(17);
  m.set_ir_version(9);
  auto *os = m.add_opset_import();
  os->set_domain("custom");
  os->set_version(1);
  constexpr int kLevels = 40;
  for (int i = 0; i <= kLevels; ++i) {
    onnx::FunctionProto f;
    f.set_name(absl::StrCat("F", i));
    f.set_domain("custom");
    f.add_input("X");
    f.add_output("Y");
    auto *os2 = f.add_opset_import();
    os2->set_domain("");
    os2->set_version(17);
    auto *os3 = f.add_opset_import();
    os3->set_domain("custom");
    os3->set_version(1);
    if (i == 0) {
      auto *n = f.add_node();
      n->set_op_type("Relu");
      n->add_input("X");
      n->add_output("Y");
    } else {
      for (int c = 0; c < 2; ++c) {
        auto *n = f.add_node();
        n->set_op_type(absl::StrCat("F", i - 1));
        n->set_domain("custom");
        n->add_input(c == 0 ? "X" : "T");
        n->add_output(c == 0 ? "T" : "Y");
      }
    }
    *m.add_functions() = f;
  }
  addInput(m, "x", {4});
  addNode(m, absl::StrCat("F", kLevels), {"x"}, {"y"}, "call", "custom");
  addOutput(m, "y", {4});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
  EXPECT_THAT(messageOf(g.status()), HasSubstr("inlining the model's local functions adds more than"));
}

//===----------------------------------------------------------------------===//
// External data: the opened file itself is checked
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// ONNX function ops expanded from the ONNX library's bodies
//===----------------------------------------------------------------------===//

void addFloatAttr(onnx::NodeProto *n, const std::string &name, float v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

/// Imports and runs y = op(x) on f32[5] at \p opset; \returns y, or the
/// import / run error.
absl::StatusOr<std::vector<double>> runUnary(const std::string &op, int64_t opset,
                                             const std::vector<std::pair<std::string, float>> &attrs,
                                             const std::vector<double> &x,
                                             std::unique_ptr<ir::Graph> *graphOut = nullptr) {
  TempDir dir;
  auto m = makeModel(opset);
  addInput(m, "x", {static_cast<int64_t>(x.size())});
  auto *n = addNode(m, op, {"x"}, {"y"}, "fn");
  for (const auto &[name, v] : attrs) addFloatAttr(n, name, v);
  addOutput(m, "y", {static_cast<int64_t>(x.size())});
  FUSEC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g,
                         importOnnxModel(writeModel(m, dir.file("model.onnx"))));
  std::map<std::string, ir::Tensor> inputs;
  inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {static_cast<int64_t>(x.size())}, x);
  FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Tensor> out, interp::runGraph(*g, inputs));
  if (graphOut) *graphOut = std::move(g);
  return out.at(0).toDoubles();
}

void expectNear(const std::vector<double> &got, const std::vector<double> &want,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << what << " [" << i << "]";
}

TEST(ImporterFormsTest, FunctionOpsExpandFromTheLibraryAndCompute) {
  const std::vector<double> x = {-4, -1, 0, 0.75, 3};
  auto map = [&](auto f) {
    std::vector<double> y;
    for (double v : x) y.push_back(f(v));
    return y;
  };
  auto softplus = [](double v) { return std::log1p(std::exp(v)); };
  auto hardSwish = [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); };
  const double seluA = 1.67326319217681884765625, seluG = 1.05070102214813232421875;
  struct Case {
    std::string op;
    int64_t opset;  // which library gives the body: see OnnxFunctions.h
    std::vector<std::pair<std::string, float>> attrs;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      // HardSwish-14 from the linked library, HardSwish-22 from onnx 1.23's body.
      {"HardSwish", 14, {}, map(hardSwish)},
      {"HardSwish", 22, {}, map(hardSwish)},
      {"Mish", 18, {}, map([&](double v) { return v * std::tanh(softplus(v)); })},
      {"Mish", 28, {}, map([&](double v) { return v * std::tanh(softplus(v)); })},
      {"Softsign", 13, {}, map([](double v) { return v / (1 + std::fabs(v)); })},
      {"Selu", 17, {}, map([&](double v) { return seluG * (v > 0 ? v : seluA * (std::exp(v) - 1)); })},
      {"Selu", 22, {{"alpha", 2.0f}, {"gamma", 3.0f}},
       map([](double v) { return 3 * (v > 0 ? v : 2 * (std::exp(v) - 1)); })},
      // Celu-12 is context-dependent in the linked library; Celu-28 a plain body.
      {"Celu", 13, {{"alpha", 2.0f}},
       map([](double v) { return std::max(0.0, v) + std::min(0.0, 2 * (std::exp(v / 2) - 1)); })},
      {"Celu", 28, {},
       map([](double v) { return std::max(0.0, v) + std::min(0.0, std::exp(v) - 1); })},
      {"ThresholdedRelu", 11, {{"alpha", 0.5f}}, map([](double v) { return v > 0.5 ? v : 0.0; })},
      {"Shrink", 11, {{"lambd", 1.5f}, {"bias", 0.5f}},
       map([](double v) { return v < -1.5 ? v + 0.5 : v > 1.5 ? v - 0.5 : 0.0; })},
  };
  for (const Case &c : cases) {
    std::string what = absl::StrCat(c.op, " at opset ", c.opset);
    auto y = runUnary(c.op, c.opset, c.attrs, x);
    ASSERT_TRUE(y.ok()) << what << ": " << y.status();
    expectNear(*y, c.want, what);
  }
}

TEST(ImporterFormsTest, ExpandedNodesKeepTheNodeNameAsPrefix) {
  std::unique_ptr<ir::Graph> g;
  auto y = runUnary("HardSwish", 17, {}, {1, 2}, &g);
  ASSERT_TRUE(y.ok()) << y.status();
  int expanded = 0;
  for (ir::Node *n : g->nodes()) {
    EXPECT_EQ(n->name().rfind("fn/", 0), 0u) << n->name();
    ++expanded;
  }
  EXPECT_EQ(expanded, 2);  // HardSigmoid, Mul
  EXPECT_NE(g->findValue("y"), nullptr);  // the call's output keeps its name
}

TEST(ImporterFormsTest, CastLikeAtEveryOpsetThatHasIt) {
  for (int64_t opset : {15, 19, 21, 23, 25, 28}) {
    TempDir dir;
    auto m = makeModel(opset);
    addInput(m, "x", {3});
    addInput(m, "like", {1}, onnx::TensorProto::FLOAT16);
    addNode(m, "CastLike", {"x", "like"}, {"y"}, "cl");
    addOutput(m, "y", {3}, onnx::TensorProto::FLOAT16);
    auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
    ASSERT_TRUE(g.ok()) << "opset " << opset << ": " << g.status();
    EXPECT_EQ((*g)->findValue("y")->type().dtype, ir::DType::kF16) << opset;
    std::map<std::string, ir::Tensor> inputs;
    inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {3}, {1.5, -2, 65504});
    inputs["like"] = ir::Tensor::fromDoubles(ir::DType::kF16, {1}, {0});
    auto out = interp::runGraph(**g, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dtype(), ir::DType::kF16);
    EXPECT_EQ((*out)[0].toDoubles(), (std::vector<double>{1.5, -2, 65504})) << opset;
  }
}

TEST(ImporterFormsTest, ReductionFunctionsInTheirAttributeForm) {
  // ReduceL1 / ReduceLogSum before opset 18 take axes as an attribute; the
  // importer expands them in their opset-18 form (axes as input 1).
  for (int64_t opset : {13, 18}) {
    for (std::string op : {"ReduceL1", "ReduceLogSum", "ReduceLogSumExp"}) {
      TempDir dir;
      auto m = makeModel(opset);
      addInput(m, "x", {2, 3});
      auto *n = addNode(m, op, opset < 18 ? std::vector<std::string>{"x"}
                                          : std::vector<std::string>{"x", "axes"},
                        {"y"}, "red");
      if (opset < 18) {
        addIntsAttr(n, "axes", {1});
      } else {
        auto *t = m.mutable_graph()->add_initializer();
        t->set_name("axes");
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(1);
        t->add_int64_data(1);
      }
      addIntAttr(n, "keepdims", 0);
      addOutput(m, "y", {2});
      std::string what = absl::StrCat(op, " at opset ", opset);
      auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
      ASSERT_TRUE(g.ok()) << what << ": " << g.status();
      std::map<std::string, ir::Tensor> inputs;
      inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {2, 3}, {1, -2, 3, 0.5, 0.25, 4});
      auto out = interp::runGraph(**g, inputs);
      ASSERT_TRUE(out.ok()) << what << ": " << out.status();
      std::vector<double> want;
      if (op == "ReduceL1") want = {6, 4.75};
      if (op == "ReduceLogSum") want = {std::log(2.0), std::log(4.75)};
      if (op == "ReduceLogSumExp")
        want = {std::log(std::exp(1) + std::exp(-2) + std::exp(3)),
                std::log(std::exp(0.5) + std::exp(0.25) + std::exp(4))};
      expectNear((*out)[0].toDoubles(), want, what);
    }
  }
}

TEST(ImporterFormsTest, PReluBeforeItsFunctionVersionUsesTheSameInterfaceBody) {
  // PRelu-9 has no body; PRelu-16 (same attributes and inputs) has one.
  TempDir dir;
  auto m = makeModel(13);
  addInput(m, "x", {2, 3});
  addFloatInit(m, "slope", {3}, {0.5f, 2.0f, 0.0f});
  addNode(m, "PRelu", {"x", "slope"}, {"y"}, "prelu");
  addOutput(m, "y", {2, 3});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  std::map<std::string, ir::Tensor> inputs;
  inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {2, 3}, {-2, -2, -2, 1, 2, 3});
  auto out = interp::runGraph(**g, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].toDoubles(), (std::vector<double>{-1, -4, 0, 1, 2, 3}));
}

TEST(ImporterFormsTest, FunctionOpsWithoutAUsableBodyAreRefusedWithTheReason) {
  // GroupNormalization-21: only a context-dependent builder newer than the
  // linked library writes its body, so the importer writes it
  // (FunctionExpansion.cpp): each group of 2 channels normalised over its
  // 4 values.
  TempDir dir;
  auto m = makeModel(21);
  addInput(m, "x", {1, 4, 2});
  addFloatInit(m, "s", {4}, {1, 1, 1, 2});
  addFloatInit(m, "b", {4}, {0, 0, 0, 0.5});
  auto *gn = addNode(m, "GroupNormalization", {"x", "s", "b"}, {"y"}, "gn");
  addIntAttr(gn, "num_groups", 2);
  addOutput(m, "y", {1, 4, 2});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_TRUE(g.ok()) << g.status();
  std::map<std::string, ir::Tensor> inputs;
  inputs["x"] = ir::Tensor::fromDoubles(ir::DType::kF32, {1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto out = interp::runGraph(**g, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  const double k = 1 / std::sqrt(1.25 + 1e-5);
  const std::vector<double> want = {-1.5 * k, -0.5 * k, 0.5 * k, 1.5 * k, -1.5 * k, -0.5 * k, 2 * 0.5 * k + 0.5,
                                    2 * 1.5 * k + 0.5};
  const std::vector<double> got = (*out)[0].toDoubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  EXPECT_TRUE(importerSupportsOp("", "GroupNormalization", 21));

  // AffineGrid-20: its body uses If, which fusec does not support.
  auto m2 = makeModel(20);
  addInput(m2, "theta", {1, 2, 3});
  addInput(m2, "size", {4}, onnx::TensorProto::INT64);
  addNode(m2, "AffineGrid", {"theta", "size"}, {"grid"}, "ag");
  addOutput(m2, "grid", {1, 2, 2, 2});
  auto g2 = importOnnxModel(writeModel(m2, dir.file("model2.onnx")));
  ASSERT_FALSE(g2.ok());
  EXPECT_THAT(messageOf(g2.status()), HasSubstr("its ONNX function body uses 'If'"));

  // A context-dependent body's required input missing: an error, not a crash.
  auto m3 = makeModel(13);
  addInput(m3, "x", {2, 3});
  addNode(m3, "NegativeLogLikelihoodLoss", {"x"}, {"y"}, "nll");
  addOutput(m3, "y", {});
  auto g3 = importOnnxModel(writeModel(m3, dir.file("model3.onnx")));
  ASSERT_FALSE(g3.ok());
  EXPECT_THAT(messageOf(g3.status()), HasSubstr("NegativeLogLikelihoodLoss input 1 ('target') is missing"));
  // CastLike is written at import (one Cast): the same input missing is named too.
  auto m4 = makeModel(21);
  addInput(m4, "x", {3});
  addNode(m4, "CastLike", {"x"}, {"y"}, "cl");
  addOutput(m4, "y", {3});
  auto g4 = importOnnxModel(writeModel(m4, dir.file("model4.onnx")));
  ASSERT_FALSE(g4.ok());
  EXPECT_THAT(messageOf(g4.status()), HasSubstr("importing node 'cl' (CastLike): input 1 is missing"));

  // Mish does not exist before opset 18: not a function there, just unknown.
  auto y = runUnary("Mish", 17, {}, {1});
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(messageOf(y.status()), HasSubstr("op 'Mish'"));
  EXPECT_TRUE(importerSupportsOp("", "Mish", 18));
  EXPECT_FALSE(importerSupportsOp("", "Mish", 17));
}

TEST(ImporterFormsTest, HardLinkedExternalDataIsRefused) {
  TempDir outside;
  TempDir dir;
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  writeBytes(outside.file("secret.bin"), floatBytes(w));
  // A hard link inside the model's folder to a file outside it: every
  // name-based check passes, so the file's link count must decide.
  if (::link(outside.file("secret.bin").c_str(), dir.file("w.bin").c_str()) != 0)
    GTEST_SKIP() << "cannot hard-link across these temporary folders";
  auto g = importOnnxModel(writeModel(externalModel("w.bin"), dir.file("model.onnx")));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(messageOf(g.status()), HasSubstr("hard links"));
}

//===----------------------------------------------------------------------===//
// Model-controlled text is escaped in diagnostics
//===----------------------------------------------------------------------===//

TEST(ImporterFormsTest, ControlCharactersInNamesAreEscaped) {
  TempDir dir;
  auto m = makeModel(17);
  addInput(m, "x", {2});
  const std::string evil = "n\x1b[2J\x07\rPASS\xe2\x80\xae";  // ESC, BEL, CR, U+202E
  addNode(m, "NotAnOp", {"x"}, {"y"}, evil);
  addOutput(m, "y", {2});
  auto g = importOnnxModel(writeModel(m, dir.file("model.onnx")));
  ASSERT_FALSE(g.ok());
  std::string msg = messageOf(g.status());
  EXPECT_THAT(msg, HasSubstr("n\\x1b[2J\\x07\\x0dPASS\\u{202e}"));
  for (char c : msg) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << msg;
}

TEST(EscapeTest, PrintableKeepsTextAndEscapesControls) {
  EXPECT_EQ(printable("plain name/with.dots"), "plain name/with.dots");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");            // é kept
  EXPECT_EQ(printable("a\\x1b"), "a\\\\x1b");                     // cannot be forged
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("\x7f\xc2\x85"), "\\x7f\\u{85}");           // DEL, NEL (C1)
  EXPECT_EQ(printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u{2066}x\\u{2069}");
  EXPECT_EQ(printable("\xff\xc0\xaf"), "\\xff\\xc0\\xaf");        // malformed / overlong
  EXPECT_EQ(printable("\xe2\x80"), "\\xe2\\x80");                 // truncated sequence
}

}  // namespace
}  // namespace fusec::frontend
