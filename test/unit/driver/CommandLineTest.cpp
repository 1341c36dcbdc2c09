//===- CommandLineTest.cpp - The tools' shared flag parser ----------------===//
//
// parseFlags() syntax (--name=V, --name V, implicit values, --, positional
// arguments, errors) and every shared flag row of driver/CommandLine.h with
// good and malformed values, including a repeated --shape (an error).
//
//===----------------------------------------------------------------------===//
#include <sstream>
#include <string>
#include <vector>

#include "driver/CommandLine.h"
#include "gtest/gtest.h"

namespace fusec::driver {
namespace {

/// Every shared row, bound to one struct, as a tool would declare them.
struct AllFlags {
  ShapeMap shapes;
  std::string precision = "fp32", target, arch, device, dumpFusion, passes, name;
  std::vector<std::string> debugOnly;
  bool allowTf32 = false, verify = true, printLoc = false, flag = false;
  int64_t elide = -1, count = 0;

  std::vector<FlagSpec> table() {
    return {shapeFlag(shapes),
            precisionFlag(precision, "precision"),
            targetFlag(target),
            archFlag(arch),
            deviceFlag(device),
            allowTf32Flag(allowTf32),
            dumpFusionFlag(dumpFusion, {"text", "json", "dot"}),
            debugOnlyFlag(debugOnly),
            passesFlag(passes, "passes"),
            noVerifyFlag(verify),
            printLocFlag(printLoc),
            elideConstantsFlag(elide),
            boolFlag("flag", flag, "a bool"),
            boolFlag("f", flag, nullptr),
            stringFlag("o", "OUT", name, "output"),
            intFlag("count", "N", count, 1, 10, "a count")};
  }
};

/// Parses \p args (argv[0] is added) into \p f.
absl::StatusOr<std::vector<std::string>> parse(AllFlags &f, std::vector<std::string> args) {
  std::vector<const char *> argv = {"tool"};
  for (const std::string &a : args) argv.push_back(a.c_str());
  return parseFlags(f.table(), static_cast<int>(argv.size()), argv.data());
}

/// The error message of parsing \p args (empty when it parses).
std::string error(std::vector<std::string> args) {
  AllFlags f;
  auto r = parse(f, std::move(args));
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(ParseFlags, EverySharedFlag) {
  AllFlags f;
  auto pos = parse(f, {"model.onnx",
                       "--shape",
                       "input_ids=2x24",
                       "--shape=mask=2x24",
                       "--precision=bf16",
                       "--target",
                       "nki",
                       "--arch=trn1",
                       "--device",
                       "trn1",
                       "--allow-tf32",
                       "--dump-fusion=json",
                       "--debug-only=fusion",
                       "--debug-only",
                       "canonicalize",
                       "--passes=a,b",
                       "--no-verify",
                       "--print-loc",
                       "--elide-constants=16",
                       "--flag",
                       "-o",
                       "out",
                       "--count",
                       "3"});
  ASSERT_TRUE(pos.ok()) << pos.status();
  EXPECT_EQ(*pos, std::vector<std::string>{"model.onnx"});
  EXPECT_EQ(f.shapes, (ShapeMap{{"input_ids", {2, 24}}, {"mask", {2, 24}}}));
  EXPECT_EQ(f.precision, "bf16");
  EXPECT_EQ(f.target, "nki");
  EXPECT_EQ(f.arch, "trn1");
  EXPECT_EQ(f.device, "trn1");
  EXPECT_TRUE(f.allowTf32);
  EXPECT_EQ(f.dumpFusion, "json");
  EXPECT_EQ(f.debugOnly, (std::vector<std::string>{"fusion", "canonicalize"}));
  EXPECT_EQ(f.passes, "a,b");
  EXPECT_FALSE(f.verify);
  EXPECT_TRUE(f.printLoc);
  EXPECT_EQ(f.elide, 16);
  EXPECT_TRUE(f.flag);
  EXPECT_EQ(f.name, "out");
  EXPECT_EQ(f.count, 3);
}

TEST(ParseFlags, ImplicitValueAndSingleDashAndAlias) {
  AllFlags f;
  ASSERT_TRUE(parse(f, {"--dump-fusion", "-f", "-o=x"}).ok());
  EXPECT_EQ(f.dumpFusion, "text");  // not the next argument
  EXPECT_TRUE(f.flag);
  EXPECT_EQ(f.name, "x");
  AllFlags g;
  auto pos = parse(g, {"--dump-fusion", "model.onnx"});
  ASSERT_TRUE(pos.ok());
  EXPECT_EQ(g.dumpFusion, "text");
  EXPECT_EQ(*pos, std::vector<std::string>{"model.onnx"});
}

TEST(ParseFlags, PositionalsDashAndDoubleDash) {
  AllFlags f;
  auto pos = parse(f, {"a", "-", "--flag", "--", "--shape", "b"});
  ASSERT_TRUE(pos.ok()) << pos.status();
  EXPECT_EQ(*pos, (std::vector<std::string>{"a", "-", "--shape", "b"}));
  EXPECT_TRUE(f.flag);
  EXPECT_TRUE(f.shapes.empty());
}

TEST(ParseFlags, UsageErrors) {
  EXPECT_EQ(error({"--no-such-flag"}), "unknown option '--no-such-flag'");
  EXPECT_EQ(error({"--shapes=x=1"}), "unknown option '--shapes=x=1'");
  EXPECT_EQ(error({"--shape"}), "flag --shape needs a value");
  EXPECT_EQ(error({"-o"}), "flag --o needs a value");
  EXPECT_EQ(error({"--flag=1"}), "flag --flag takes no value");
  EXPECT_EQ(error({"--no-verify=yes"}), "flag --no-verify takes no value");
}

TEST(ShapeFlag, MalformedValues) {
  EXPECT_EQ(error({"--shape=x"}), "--shape expects NAME=DIMS like input_ids=2x24, got 'x'");
  EXPECT_EQ(error({"--shape", "=2x3"}),
            "--shape expects NAME=DIMS like input_ids=2x24, got '=2x3'");
  EXPECT_EQ(error({"--shape", "x="}), "--shape expects NAME=DIMS like input_ids=2x24, got 'x='");
  EXPECT_EQ(error({"--shape=x=2xx3"}), "--shape x=2xx3: '' is not a dimension >= 0");
  EXPECT_EQ(error({"--shape=x=2x-1"}), "--shape x=2x-1: '-1' is not a dimension >= 0");
  EXPECT_EQ(error({"--shape=x=2.5"}), "--shape x=2.5: '2.5' is not a dimension >= 0");
  EXPECT_EQ(error({"--shape=x=99999999999999999999"}),
            "--shape x=99999999999999999999: '99999999999999999999' is not a dimension >= 0");
}

TEST(ShapeFlag, NameIsEverythingBeforeTheLastEquals) {
  AllFlags f;
  ASSERT_TRUE(parse(f, {"--shape=a=b=3x0"}).ok());
  EXPECT_EQ(f.shapes, (ShapeMap{{"a=b", {3, 0}}}));
}

/// A repeated --shape for the same input is an error (not last-wins): the
/// user meant one of the two, and a silently dropped binding compiles the
/// wrong model. Different inputs may each be bound once.
TEST(ShapeFlag, SameInputTwiceIsAnError) {
  EXPECT_EQ(error({"--shape=x=2", "--shape", "x=3"}), "--shape names input 'x' twice");
  EXPECT_EQ(error({"--shape=x=2", "--shape=x=2"}), "--shape names input 'x' twice");
  EXPECT_EQ(error({"--shape=x=2", "--shape=y=2"}), "");
}

/// Ranges (dynamic shapes): MIN..MAX[@OPT] per dim, a static dim as N.
TEST(ShapeFlag, RangesForDynamicShapes) {
  ShapeMap shapes;
  RangeMap ranges;
  std::vector<FlagSpec> flags = {shapeFlag(shapes, ranges)};
  auto parseWith = [&](std::vector<std::string> args) {
    shapes.clear();
    ranges.clear();
    std::vector<char *> argv = {const_cast<char *>("tool")};
    for (std::string &a : args) argv.push_back(a.data());
    auto r = parseFlags(flags, static_cast<int>(argv.size()), argv.data());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_EQ(parseWith({"--shape=ids=1..8x1..4096@512"}), "");
  ASSERT_EQ(ranges.count("ids"), 1u);
  EXPECT_EQ(ranges["ids"][0].min, 1);
  EXPECT_EQ(ranges["ids"][0].max, 8);
  EXPECT_EQ(ranges["ids"][1].max, 4096);
  EXPECT_EQ(ranges["ids"][1].opt, 512);
  EXPECT_TRUE(shapes.empty());
  EXPECT_EQ(parseWith({"--shape=x=2x1..64x256"}), "");
  EXPECT_EQ(ranges["x"][0].min, 2);
  EXPECT_EQ(ranges["x"][0].max, 2);
  EXPECT_EQ(parseWith({"--shape=x=2x3"}), "");  // no range: a static binding
  EXPECT_EQ(shapes["x"], (std::vector<int64_t>{2, 3}));
  EXPECT_NE(parseWith({"--shape=x=8..1"}).find("1 <= MIN <= MAX"), std::string::npos);
  EXPECT_NE(parseWith({"--shape=x=0..8"}).find("1 <= MIN <= MAX"), std::string::npos);
  EXPECT_NE(parseWith({"--shape=x=1..8@9"}).find("@OPT"), std::string::npos);
  EXPECT_NE(parseWith({"--shape=x=1..a"}).find("is not a range"), std::string::npos);
  EXPECT_EQ(parseWith({"--shape=x=1..8", "--shape=x=2"}), "--shape names input 'x' twice");
}

TEST(SharedFlags, MalformedValues) {
  EXPECT_EQ(error({"--precision=int4"}), "unknown --precision 'int4' (expected: fp32, fp16, bf16)");
  EXPECT_EQ(error({"--precision", "FP32"}),
            "unknown --precision 'FP32' (expected: fp32, fp16, bf16)");
  EXPECT_EQ(error({"--dump-fusion=svg"}),
            "unknown --dump-fusion format 'svg' (expected: text, json, dot)");
  EXPECT_EQ(error({"--dump-fusion="}),
            "unknown --dump-fusion format '' (expected: text, json, dot)");
  EXPECT_EQ(error({"--debug-only="}), "--debug-only needs a pass name");
  EXPECT_EQ(error({"--elide-constants=-1"}), "--elide-constants expects a count >= 0, got '-1'");
  EXPECT_EQ(error({"--elide-constants=many"}),
            "--elide-constants expects a count >= 0, got 'many'");
  EXPECT_EQ(error({"--count=0"}), "--count expects an integer in [1, 10], got '0'");
  EXPECT_EQ(error({"--count=3x"}), "--count expects an integer in [1, 10], got '3x'");
}

TEST(SharedFlags, DumpFusionFormatsArePerTool) {
  std::string format;
  std::vector<FlagSpec> flags = {dumpFusionFlag(format, {"text", "json"})};
  const char *argv[] = {"tool", "--dump-fusion=dot"};
  auto r = parseFlags(flags, 2, argv);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unknown --dump-fusion format 'dot' (expected: text, json)");
}

TEST(PrintFlagHelp, ListsVisibleFlagsWithValueNames) {
  AllFlags f;
  std::ostringstream os;
  printFlagHelp(f.table(), os);
  const std::string help = os.str();
  for (const char *s :
       {"  --shape=NAME=DIMS", "  --precision=P", "  --target=BACKEND", "  --arch=ARCH",
        "  --device=NAME", "  --allow-tf32", "  --dump-fusion=FORMAT", "  --debug-only=PASS",
        "  --no-verify", "  --elide-constants=N", "  --o=OUT"})
    EXPECT_NE(help.find(s), std::string::npos) << s << " missing in\n" << help;
  EXPECT_EQ(help.find("--f "), std::string::npos) << "a hidden alias is listed";
}

}  // namespace
}  // namespace fusec::driver
