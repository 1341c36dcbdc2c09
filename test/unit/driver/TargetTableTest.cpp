//===- TargetTableTest.cpp - The one table of targets ---------------------===//
//
// targets/Targets.def and the device files agree (every device belongs to a
// target and has one of its archs; every default device exists), and
// passes::resolveTarget() picks the defaults and refuses unknown or
// mismatched --target / --arch / --device combinations.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "passes/cost/TargetSpec.h"

namespace fusec::passes {
namespace {

TEST(TargetTable, TargetsArchsAndDevices) {
  const std::vector<TargetInfo> &table = targetTable();
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].name, "cuda");  // the default target
  EXPECT_EQ(table[1].name, "nki");
  EXPECT_EQ(table[2].name, "cpu");
  EXPECT_EQ(table[0].devices, (std::vector<std::string>{"a100", "h100", "h200"}));
  EXPECT_EQ(table[1].devices, (std::vector<std::string>{"trn1", "trn2"}));
  EXPECT_EQ(table[2].devices, (std::vector<std::string>{"epyc9654"}));
}

TEST(TargetTable, TableAndDeviceFilesAgree) {
  std::vector<std::string> covered;
  for (const TargetInfo &t : targetTable()) {
    EXPECT_FALSE(t.archs.empty()) << t.name;
    EXPECT_NE(std::find(t.devices.begin(), t.devices.end(), t.defaultDevice), t.devices.end())
        << t.name << ": default device " << t.defaultDevice << " is not one of its devices";
    for (const ArchInfo &a : t.archs) {
      EXPECT_EQ(a.target, t.name);
      EXPECT_NE(std::find(t.devices.begin(), t.devices.end(), a.defaultDevice), t.devices.end())
          << a.arch << ": default device " << a.defaultDevice;
    }
    for (const std::string &d : t.devices) {
      absl::StatusOr<TargetSpec> spec = loadBuiltinTarget(d);
      ASSERT_TRUE(spec.ok()) << spec.status();
      EXPECT_EQ(spec->backend, t.name);
      bool archListed = false;
      for (const ArchInfo &a : t.archs) archListed |= a.arch == spec->arch;
      EXPECT_TRUE(archListed) << d << " has arch " << spec->arch;
      covered.push_back(d);
    }
  }
  std::sort(covered.begin(), covered.end());
  EXPECT_EQ(covered, builtinTargetNames()) << "a device file whose backend is no target";
}

/// Resolves and returns "target arch device", or "error: <message>".
std::string resolve(const std::string &target, const std::string &arch,
                    const std::string &device) {
  absl::StatusOr<ResolvedTarget> r = resolveTarget(target, arch, device);
  if (!r.ok()) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    return "error: " + std::string(r.status().message());
  }
  return r->target + " " + r->arch + " " + r->device.name;
}

TEST(ResolveTarget, Defaults) {
  EXPECT_EQ(resolve("", "", ""), "cuda sm_90 h200");
  EXPECT_EQ(resolve("cuda", "", ""), "cuda sm_90 h200");
  EXPECT_EQ(resolve("", "sm_80", ""), "cuda sm_80 a100");
  EXPECT_EQ(resolve("", "sm_90", ""), "cuda sm_90 h200");
  EXPECT_EQ(resolve("", "", "h100"), "cuda sm_90 h100");
  EXPECT_EQ(resolve("", "", "a100"), "cuda sm_80 a100");
  EXPECT_EQ(resolve("nki", "", ""), "nki trn2 trn2");
  EXPECT_EQ(resolve("nki", "trn1", ""), "nki trn1 trn1");
  EXPECT_EQ(resolve("", "", "trn1"), "nki trn1 trn1");
  EXPECT_EQ(resolve("cpu", "", ""), "cpu znver4 epyc9654");
  absl::StatusOr<TargetSpec> d = defaultTargetSpec();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "h200");
}

TEST(ResolveTarget, OlderCudaArchRunsOnNewerDevice) {
  EXPECT_EQ(resolve("cuda", "sm_80", "h200"), "cuda sm_80 h200");
  EXPECT_EQ(resolve("", "sm_90", "h100"), "cuda sm_90 h100");
  EXPECT_EQ(resolve("cuda", "sm_90", "a100"),
            "error: --arch sm_90 does not run on --device a100 (a sm_80 device; code for older "
            "archs runs on newer devices)");
  EXPECT_EQ(resolve("nki", "trn1", "trn2"),
            "error: --arch trn1 does not run on --device trn2 (a trn2 device)");
}

TEST(ResolveTarget, ArchSpecificVariantRunsOnItsArchOnly) {
  EXPECT_EQ(resolve("", "sm_90a", ""), "cuda sm_90a h200");
  EXPECT_EQ(resolve("cuda", "sm_90a", "h100"), "cuda sm_90a h100");
  EXPECT_EQ(resolve("cuda", "sm_90a", "a100"), "error: --arch sm_90a does not run on --device a100 (a sm_80 device)");
}

TEST(ResolveTarget, UnknownAndMismatchedCombinations) {
  EXPECT_EQ(resolve("rocm", "", ""), "error: unknown --target 'rocm' (expected: cuda, nki, cpu)");
  EXPECT_EQ(resolve("nki", "sm_90", ""),
            "error: --arch sm_90 is not a nki arch (nki archs: trn1, trn2)");
  EXPECT_EQ(resolve("cpu", "", "h200"),
            "error: --device h200 is a cuda device, not a cpu one (cpu devices: epyc9654)");
  EXPECT_EQ(resolve("cuda", "", "trn2"),
            "error: --device trn2 is a nki device, not a cuda one (cuda devices: a100, h100, "
            "h200)");
  EXPECT_EQ(resolve("", "", "v100"),
            "error: unknown --device 'v100' (known: a100, epyc9654, h100, h200, trn1, trn2)");
  EXPECT_EQ(resolve("", "sm_75", ""),
            "error: unknown --arch 'sm_75' (known: cuda: sm_80, sm_90, sm_90a; nki: trn1, trn2; cpu: "
            "znver4, <any name the backend accepts>)");
  EXPECT_EQ(resolve("cuda", "sm_86", ""),
            "error: --arch sm_86 is not a cuda arch (cuda archs: sm_80, sm_90, sm_90a)");
  EXPECT_EQ(resolve("", "trn2", "h200"),
            "error: --arch trn2 is not a cuda arch (cuda archs: sm_80, sm_90, sm_90a)");
}

TEST(TargetSpecFile, BackendMustBeATarget) {
  absl::StatusOr<TargetSpec> t = parseTargetSpec(
      "name: \"x\" backend: \"rocm\" arch: \"gfx942\" memory_bandwidth: 1 "
      "matrix { dtype: \"f32\" flops: 1 } vector { dtype: \"f32\" flops: 1 }");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "target 'x': backend must be \"cuda\" or \"nki\" or \"cpu\", got \"rocm\"");
}

TEST(TargetSpecFile, HostCpuFigures) {
  absl::StatusOr<TargetSpec> t = loadBuiltinTarget("epyc9654");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->backend, "cpu");
  EXPECT_EQ(t->numUnits, 96);
  // 12 x DDR5-4800 x 8 bytes; 96 cores x 2.4 GHz x 32 f32 FLOP/cycle.
  EXPECT_DOUBLE_EQ(t->memoryBandwidth, 12 * 4.8e9 * 8);
  EXPECT_NEAR(t->matrixFlops(ir::DType::kF32), 96 * 2.4e9 * 32, 0.01e12);
  EXPECT_FALSE(t->sources.empty());
}

}  // namespace
}  // namespace fusec::passes
