//===- TextIRTest.cpp - Printer / parser round trips and errors -----------===//
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/OpTable.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "test/unit/ir/TestUtil.h"

namespace fusec::ir {
namespace {

/// parse -> print -> parse -> print must be a fixed point; \returns the first
/// printed text.
std::string roundTrip(const std::string &text, const PrintOptions &opts = {}) {
  auto g1 = parseGraph(text);
  EXPECT_TRUE(g1.ok()) << g1.status() << "\n" << text;
  if (!g1.ok()) return "";
  std::string p1 = printGraph(**g1, opts);
  auto g2 = parseGraph(p1);
  EXPECT_TRUE(g2.ok()) << g2.status() << "\n" << p1;
  if (!g2.ok()) return "";
  std::string p2 = printGraph(**g2, opts);
  EXPECT_EQ(p1, p2);
  return p1;
}

TEST(TextIR, ExampleRoundTripsExactly) {
  const std::string text =
      "graph @main(%input_ids: i64[batch,seq], %x: f32[batch,seq,2]) -> (%z, %a, %q) opset 17 {\n"
      "  %w = constant f32[2,2] dense<[1.0, 2.0, 3.0, 4.0]>\n"
      "  %s = constant i64[2] dense<[1, 1]>\n"
      "  %y = \"Add\"(%x, %w) : f32[batch,seq,2] loc(\"/h.0/Add\")\n"
      "  %a, %b = \"Split\"(%y, %s) {axis = 2} : f32[batch,seq,1], f32[batch,seq,1]\n"
      "  %z = \"Clip\"(%y, _, %w) : f32[batch,seq,2]\n"
      "  %q = \"fusec.Foo\"(%y) {alpha = 0.5, empty = ints[], mode = \"constant\", names = "
      "[\"a\"], perm = [0, 2, 1], vals = [1.0, 2.0], value = dense<i64[2] [1, 2]>} : f32[2]\n"
      "  return %z, %a, %q\n"
      "}\n";
  PrintOptions withLoc;
  withLoc.printLocations = true;
  EXPECT_EQ(roundTrip(text, withLoc), text);
  // Without locations the loc(...) disappears.
  std::string noLoc = roundTrip(text);
  EXPECT_FALSE(absl::StrContains(noLoc, "loc("));
}

TEST(TextIR, EveryOpOfTheTableRoundTrips) {
  std::string stmts;
  int k = 0;
  for (const OpInfo &op : allOps()) {
    int nin = op.maxInputs < 0 ? op.minInputs + 2 : op.maxInputs;
    int nout = op.maxOutputs < 0 ? 3 : op.maxOutputs;
    std::string results, args, types;
    for (int i = 0; i < nout; ++i) {
      results += (i ? ", %" : "%") + std::string(op.name) + "_" + std::to_string(i);
      types += i ? ", f32[2,?]" : "f32[2,?]";
    }
    for (int i = 0; i < nin; ++i) {
      // Optional inputs beyond the minimum alternate between present and `_`.
      bool omit = i >= op.minInputs && i + 1 < nin && (i - op.minInputs) % 2 == 0;
      args += std::string(i ? ", " : "") + (omit ? "_" : "%x");
    }
    stmts += results + " = \"" + op.name + "\"(" + args + ") {k = " + std::to_string(k++) +
             "} : " + types + "\n";
  }
  std::string text = testing::graphText("%x: f32[2,n]", stmts, "%Abs_0");
  std::string printed = roundTrip(text);
  auto g = parseGraph(printed);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ((*g)->numNodes(), static_cast<int64_t>(allOps().size()));
  size_t i = 0;
  for (const Node *n : (*g)->nodes()) {
    ASSERT_NE(n->op(), nullptr) << n->opType();
    EXPECT_EQ(n->kind(), allOps()[i++].kind);
  }
}

TEST(TextIR, ConstantsOfEveryDtype) {
  const std::string text =
      "graph @c() -> (%f32, %f64, %f16, %bf16, %i8, %i16, %i32, %i64, %u8, %u16, %u32, %u64, "
      "%b, %s, %scalar, %empty) {\n"
      "  %f32 = constant f32[6] dense<[0.1, -3.4028235e+38, 1.4013e-45, inf, -inf, nan]>\n"
      "  %f64 = constant f64[3] dense<[0.1, 2.2250738585072014e-308, -0.0]>\n"
      "  %f16 = constant f16[4] dense<[0.099975586, 65504.0, -5.9604645e-08, inf]>\n"
      "  %bf16 = constant bf16[3] dense<[0.100097656, 3.3895314e+38, -1.0]>\n"
      "  %i8 = constant i8[2] dense<[-128, 127]>\n"
      "  %i16 = constant i16[2] dense<[-32768, 32767]>\n"
      "  %i32 = constant i32[2] dense<[-2147483648, 2147483647]>\n"
      "  %i64 = constant i64[2] dense<[-9223372036854775808, 9223372036854775807]>\n"
      "  %u8 = constant u8[2] dense<[0, 255]>\n"
      "  %u16 = constant u16[1] dense<[65535]>\n"
      "  %u32 = constant u32[1] dense<[4294967295]>\n"
      "  %u64 = constant u64[2] dense<[0, 18446744073709551615]>\n"
      "  %b = constant bool[2,1] dense<[true, false]>\n"
      "  %s = constant string[2] dense<[\"a\\\"b\", \"\\n\\t\\\\\\x01\"]>\n"
      "  %scalar = constant f32[] dense<[2.5]>\n"
      "  %empty = constant i64[0,3] dense<[]>\n"
      "  return %f32, %f64, %f16, %bf16, %i8, %i16, %i32, %i64, %u8, %u16, %u32, %u64, %b, %s, "
      "%scalar, %empty\n"
      "}\n";
  EXPECT_EQ(roundTrip(text), text);
  auto g = parseGraph(text);
  ASSERT_TRUE(g.ok()) << g.status();
  const Tensor *f32 = (*g)->findValue("f32")->constant();
  EXPECT_EQ(static_cast<float>(f32->getDouble(0)), 0.1f);
  EXPECT_EQ(static_cast<float>(f32->getDouble(2)), std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(std::isnan(f32->getDouble(5)));
  EXPECT_EQ((*g)->findValue("i64")->constant()->getInt(0), std::numeric_limits<int64_t>::min());
  uint64_t u;
  std::memcpy(&u, (*g)->findValue("u64")->constant()->data() + 8, 8);
  EXPECT_EQ(u, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ((*g)->findValue("s")->constant()->strings()[1], "\n\t\\\x01");
  EXPECT_EQ((*g)->findValue("f16")->constant()->getDouble(1), 65504.0);
}

TEST(TextIR, ConstantsOfNarrowDtypes) {
  // Narrow floats print their values (exact in f32) and parse back to the
  // same codes; the narrow integers print and wrap as integers.
  const std::string text =
      "graph @n() -> (%a, %b, %c, %d, %e, %f, %g) {\n"
      "  %a = constant f8e4m3fn[5] dense<[448.0, -0.3125, 0.001953125, -0.0, nan]>\n"
      "  %b = constant f8e5m2[3] dense<[57344.0, -inf, 1.5]>\n"
      "  %c = constant f8e8m0[2] dense<[0.25, 1024.0]>\n"
      "  %d = constant f4e2m1[3] dense<[6.0, -0.5, 1.5]>\n"
      "  %e = constant i4[3] dense<[-8, 7, -1]>\n"
      "  %f = constant u2[2] dense<[3, 0]>\n"
      "  %g = constant f8e5m2fnuz[1] dense<[-0.0]>\n"
      "  return %a, %b, %c, %d, %e, %f, %g\n"
      "}\n";
  const std::string once = roundTrip(text);
  EXPECT_EQ(roundTrip(once), once);
  auto g = parseGraph(once);
  ASSERT_TRUE(g.ok()) << g.status();
  const Tensor *a = (*g)->findValue("a")->constant();
  EXPECT_EQ(a->dtype(), DType::kF8E4M3FN);
  EXPECT_EQ(std::vector<uint8_t>(a->data(), a->data() + 5), (std::vector<uint8_t>{0x7e, 0xaa, 0x01, 0x80, 0x7f}));
  EXPECT_EQ((*g)->findValue("b")->constant()->toDoubles()[1], -std::numeric_limits<double>::infinity());
  EXPECT_EQ((*g)->findValue("c")->constant()->toDoubles(), (std::vector<double>{0.25, 1024}));
  EXPECT_EQ((*g)->findValue("d")->constant()->toDoubles(), (std::vector<double>{6, -0.5, 1.5}));
  EXPECT_EQ((*g)->findValue("e")->constant()->toInts(), (std::vector<int64_t>{-8, 7, -1}));
  EXPECT_EQ((*g)->findValue("f")->constant()->toInts(), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ((*g)->findValue("g")->constant()->data()[0], 0x00);  // FNUZ: -0 is +0
}

TEST(TextIR, ElidedConstantsParseAsZeros) {
  const std::string text =
      "graph @g() -> (%big, %small) {\n"
      "  %big = constant f32[3,3] dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]>\n"
      "  %small = constant i64[2] dense<[1, 2]>\n"
      "  return %big, %small\n"
      "}\n";
  PrintOptions opts;
  opts.elideConstantsLargerThan = 4;
  std::string printed = roundTrip(text, opts);
  EXPECT_TRUE(absl::StrContains(printed, "%big = constant f32[3,3] dense<elided>"));
  EXPECT_TRUE(absl::StrContains(printed, "dense<[1, 2]>"));
  auto g = parseGraph(printed);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->findValue("big")->constant()->getDouble(4), 0.0);
}

TEST(TextIR, AttributeKinds) {
  const std::string text =
      "graph @g(%x: f32[2]) -> (%y) {\n"
      "  %y = \"test.Attrs\"(%x) {\"odd name\" = 1, big = 1.0e+20, f = 3.0, fl = [1.5, -2.0e-07, "
      "inf], i = -9223372036854775808, inf = -inf, is = [1, -2], n = nan, s = \"q\\\"\\\\\", "
      "sl = strings[], ss = [\"x\", \"\"], t = dense<f16[2,1] [1.0, -2.0]>, "
      "tf = floats[], ti = ints[]} : f32[2]\n"
      "  return %y\n"
      "}\n";
  std::string printed = roundTrip(text);
  auto g = parseGraph(printed);
  ASSERT_TRUE(g.ok());
  const Node *n = (*g)->nodes()[0];
  EXPECT_EQ(n->attr("f")->kind(), Attribute::Kind::kFloat);
  EXPECT_EQ(n->attr("big")->f(), 1.0e20f);
  EXPECT_EQ(n->attr("i")->kind(), Attribute::Kind::kInt);
  EXPECT_EQ(n->attr("fl")->kind(), Attribute::Kind::kFloats);
  EXPECT_EQ(n->attr("is")->kind(), Attribute::Kind::kInts);
  EXPECT_EQ(n->attr("tf")->kind(), Attribute::Kind::kFloats);
  EXPECT_EQ(n->attr("ti")->kind(), Attribute::Kind::kInts);
  EXPECT_EQ(n->attr("sl")->kind(), Attribute::Kind::kStrings);
  EXPECT_EQ(n->attr("ss")->strings()[1], "");
  EXPECT_EQ(n->attr("t")->t().dtype(), DType::kF16);
  EXPECT_TRUE(std::isnan(n->attr("n")->f()));
  EXPECT_EQ(n->attr("inf")->f(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(n->attr("s")->s(), "q\"\\");
  EXPECT_TRUE(n->hasAttr("odd name"));
  // Floats always print with a '.' or an exponent.
  EXPECT_TRUE(absl::StrContains(printed, "f = 3.0,"));
  EXPECT_TRUE(absl::StrContains(printed, "big = 1e+20,"));
}

TEST(TextIR, FloatAttributesRoundTripBitExactly) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    Graph g;
    Value *x = g.addInput("x", TensorType(DType::kF32, {Dim(1)}));
    Node *n = g.addNode("test.F", {x}, {"y"}, {{"f", Attribute(f)}});
    g.markOutput(n->output(0));
    auto back = parseGraph(printGraph(g));
    ASSERT_TRUE(back.ok()) << back.status();
    float f2 = (*back)->nodes()[0]->attr("f")->f();
    EXPECT_EQ(std::memcmp(&f, &f2, 4), 0) << f;
  }
}

TEST(TextIR, QuotedNamesSymbolsAndDomains) {
  const std::string text =
      "graph @\"my graph\"(%\"/h.0/attn/MatMul_output_0\": f32[\"batch size\",?,seq.len], "
      "%_: f32[*]) -> (%\"out\\n1\") {\n"
      "  %\"out\\n1\" = \"com.microsoft::FusedGelu\"(%\"/h.0/attn/MatMul_output_0\", %_) "
      ": undef[*]\n"
      "  return %\"out\\n1\"\n"
      "}\n";
  EXPECT_EQ(roundTrip(text), text);
  auto g = parseGraph(text);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->name(), "my graph");
  const Node *n = (*g)->nodes()[0];
  EXPECT_EQ(n->domain(), "com.microsoft");
  EXPECT_EQ(n->opType(), "FusedGelu");
  EXPECT_EQ(n->op(), nullptr);
  EXPECT_EQ((*g)->inputs()[0]->type().shape[0].symbol, "batch size");
  EXPECT_EQ((*g)->inputs()[0]->type().shape[2].symbol, "seq.len");
  EXPECT_FALSE((*g)->inputs()[1]->type().rankKnown);
}

TEST(TextIR, PrinterNamesUnnamedAndDuplicateValues) {
  Graph g;
  Value *x = g.addInput("", TensorType(DType::kF32, {Dim(2)}));
  Node *a = g.addNode("Neg", {x}, {""});
  Node *b = g.addNode("Neg", {a->output(0)}, {""});
  g.markOutput(b->output(0));
  std::string printed = printGraph(g);
  EXPECT_EQ(roundTrip(printed), printed);
}

TEST(TextIR, ErrorsHaveLineAndColumn) {
  auto err = [](const std::string &text) {
    auto g = parseGraph(text);
    return g.ok() ? std::string("ok") : std::string(g.status().message());
  };
  EXPECT_EQ(err("graph @g(%x: f32[2]) -> (%x) {\n  return %y\n}\n"),
            "3:1: the return list does not match the graph's '->' output list");
  EXPECT_EQ(err("graph @g(%x: f32[2]) -> (%y) {\n  %y = \"Neg\"(%z) : f32[2]\n  return %y\n}"),
            "2:14: use of undefined value %z");
  EXPECT_EQ(err("graph @g(%x: f33[2]) -> (%x) {\n  return %x\n}"),
            "1:14: expected a dtype, found 'f33'");
  EXPECT_EQ(err("graph @g(%x: f32[2]) -> (%x) {\n  %x = \"Neg\"(%x) : f32[2]\n  return %x\n}"),
            "2:3: redefinition of value %x");
  EXPECT_EQ(err("graph @g() -> () {\n  %c = constant i8[1] dense<[300]>\n  return\n}"),
            "2:30: value 300 out of range for i8");
  EXPECT_EQ(err("graph @g() -> () {\n  %c = constant f32[2] dense<[1.0]>\n  return\n}"),
            "2:30: expected 2 elements, found 1");
  EXPECT_EQ(err("graph @g(%x: f32[2]) -> (%y) {\n  %y = \"Neg\"(%x)\n  return %y\n}"),
            "3:3: expected ':' and the result types, found 'r'");
  EXPECT_TRUE(absl::StartsWith(err(""), "1:1: expected 'graph'"));
  EXPECT_EQ(err("graph @g() -> () {\n  %c = constant f64[1000000000000] dense<elided>\n  return\n}"),
            "2:42: constant has too many elements");
}

TEST(TextIR, TruncationsAndMutationsNeverCrash) {
  const std::string text =
      "graph @main(%x: f32[b,2], %m: i64[\"q r\",?]) -> (%y, %c) opset 18 {\n"
      "  %w = constant f32[2,2] dense<[1.0, 2.5e-3, -inf, nan]>\n"
      "  %c = constant string[1] dense<[\"a\\x01\"]>\n"
      "  %y, %z = \"Split\"(%x, _) {axis = 1, f = [1.0, 2.0], s = \"x\", "
      "t = dense<bool[2] [true, false]>} : f32[b,1], f32[*] loc(\"n\")\n"
      "  return %y, %c\n"
      "}\n";
  ASSERT_TRUE(parseGraph(text).ok());
  for (size_t len = 0; len + 1 < text.size(); ++len) {
    auto g = parseGraph(text.substr(0, len));
    EXPECT_FALSE(g.ok()) << "prefix of length " << len << " parsed";
    if (!g.ok()) {
      EXPECT_TRUE(g.status().code() == absl::StatusCode::kInvalidArgument);
      EXPECT_TRUE(absl::StrContains(g.status().message(), ":")) << g.status();
    }
  }
  std::mt19937 rng(42);
  const std::string alphabet = "%@\"\\[](){}<>,:=_?*-.0123456789eabcfilnstx \n/";
  for (int i = 0; i < 3000; ++i) {
    std::string m = text;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % m.size();
      switch (rng() % 3) {
        case 0: m[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: m.erase(pos, 1 + rng() % 8); break;
        default: m.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (m.empty()) m = "x";
    }
    auto g = parseGraph(m);
    if (g.ok()) (void)printGraph(**g);  // Whatever parses must print.
  }
}

}  // namespace
}  // namespace fusec::ir
