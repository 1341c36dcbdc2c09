//===- AttentionCodegenTest.cpp - FusedAttention lowering and CUDA kernel -===//
//
// Variants of the FusedAttention op (plain, causal, bias, ALiBi, soft-cap,
// sliding window, padding mask, GQA; head dims 32..256; Sq != Sk; sequences
// that are not multiples of 64; batch 1 / one head; fully masked rows; f32
// and bf16), each a one-node text-IR graph:
//  - Lowering: one kAttention step whose spec carries the expressions;
//  - NvccCompile: every variant's kernel in one .cu, compiled for sm_90
//    (skipped without nvcc);
//  - GpuRun: each variant run on the GPU against the reference interpreter
//    (skipped without a CUDA device).
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "codegen/cuda/Attention.h"
#include "codegen/cuda/CudaEmitter.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "test/unit/codegen/CodegenTestUtil.h"

#ifdef FUSEC_HAVE_CUDART
#include <cuda_runtime.h>
#endif

namespace fusec::codegen {
namespace {

struct Variant {
  std::string name;
  std::string dtype = "f32";
  int64_t b = 2, hq = 4, hkv = 4, sq = 24, sk = 24, d = 64, dv = -1;
  std::string scoreMod, mask;
  std::vector<std::pair<std::string, std::vector<int64_t>>> biases;  ///< dtype, shape
  std::string extraAttrs;  ///< e.g. tables
  double scale = 0;        ///< 0: 1/sqrt(d)
};

std::string shapeText(const std::string &dt, const std::vector<int64_t> &s) {
  return absl::StrCat(dt, "[", absl::StrJoin(s, ","), "]");
}

std::string graphText(const Variant &v) {
  const int64_t dv = v.dv < 0 ? v.d : v.dv;
  std::vector<std::string> ins{absl::StrCat("%q: ", shapeText(v.dtype, {v.b, v.hq, v.sq, v.d})),
                               absl::StrCat("%k: ", shapeText(v.dtype, {v.b, v.hkv, v.sk, v.d})),
                               absl::StrCat("%v: ", shapeText(v.dtype, {v.b, v.hkv, v.sk, dv}))};
  std::vector<std::string> args{"%q", "%k", "%v"};
  for (size_t i = 0; i < v.biases.size(); ++i) {
    ins.push_back(absl::StrCat("%bias", i, ": ", shapeText(v.biases[i].first, v.biases[i].second)));
    args.push_back(absl::StrCat("%bias", i));
  }
  const double scale = v.scale != 0 ? v.scale : 1.0 / std::sqrt(static_cast<double>(v.d));
  std::string attrs = absl::StrFormat("kv_num_heads = %d, mask = \"%s\", num_heads = %d, scale = %.9g, score_mod = \"%s\"",
                                      v.hkv, v.mask, v.hq, scale, v.scoreMod);
  if (!v.extraAttrs.empty()) absl::StrAppend(&attrs, ", ", v.extraAttrs);
  return absl::StrCat("graph @", v.name, "(", absl::StrJoin(ins, ", "), ") -> (%y) {\n  %y = \"FusedAttention\"(",
                      absl::StrJoin(args, ", "), ") {", attrs, "} : ",
                      shapeText(v.dtype, {v.b, v.hq, v.sq, dv}), " loc(\"attn\")\n  return %y\n}\n");
}

Variant named(std::string n) {
  Variant v;
  v.name = std::move(n);
  return v;
}

std::vector<Variant> variants() {
  std::vector<Variant> vs;
  vs.push_back(named("plain"));
  Variant c = named("causal");
  c.mask = "k <= q";
  c.sq = c.sk = 100;
  c.d = 32;
  vs.push_back(c);
  Variant bias = named("bias");
  bias.scoreMod = "score + bias0";
  bias.biases = {{"f32", {2, 1, 24, 24}}};
  vs.push_back(bias);
  Variant alibi = named("alibi");
  alibi.scoreMod = "score + slope[h] * (k - q)";
  alibi.mask = "k <= q";
  alibi.extraAttrs = "table_slope = [0.5, 0.25, 0.125, 0.0625], tables = [\"slope\"]";
  vs.push_back(alibi);
  Variant cap = named("softcap");
  cap.scoreMod = "tanh(score / 2.0) * 2.0";
  cap.scale = 1.0;
  vs.push_back(cap);
  Variant sw = named("sliding_window");
  sw.mask = "k <= q && q - k < 16";
  sw.sq = sw.sk = 77;
  vs.push_back(sw);
  Variant pad = named("padding_mask");
  pad.scoreMod = "bias0 ? score : -inf";
  pad.biases = {{"bool", {2, 1, 1, 24}}};
  vs.push_back(pad);
  // An HF causal LM's mask after attention-rewrite: causal structural mask,
  // padding per key, fully masked rows the mean of V (masked_rows "mean").
  Variant padMean = named("causal_padding_rows_mean");
  padMean.mask = "k <= q";
  padMean.scoreMod = "bias0 ? score : -inf";
  padMean.biases = {{"bool", {2, 1, 1, 24}}};
  padMean.extraAttrs = "masked_rows = \"mean\"";
  vs.push_back(padMean);
  Variant padMeanBf = named("bf16_causal_padding_rows_mean");
  padMeanBf.dtype = "bf16";
  padMeanBf.mask = "k <= q";
  padMeanBf.scoreMod = "bias0 ? score : -inf";
  padMeanBf.sq = padMeanBf.sk = 150;
  padMeanBf.biases = {{"bool", {2, 1, 1, 150}}};
  padMeanBf.extraAttrs = "masked_rows = \"mean\"";
  vs.push_back(padMeanBf);
  // The same with the padding as the key mask operand (key_mask): read once
  // per key tile, key tiles it empties skipped (tiled kernel; fp32 SIMT and
  // bf16 tensor cores).
  Variant keyMask = named("causal_key_mask_rows_mean");
  keyMask.mask = "k <= q";
  keyMask.sq = keyMask.sk = 150;
  keyMask.biases = {{"bool", {2, 1, 1, 150}}};
  keyMask.extraAttrs = "key_mask = 0, masked_rows = \"mean\"";
  vs.push_back(keyMask);
  Variant keyMaskBf = named("bf16_key_mask_bias");
  keyMaskBf.dtype = "bf16";
  keyMaskBf.b = 1;
  keyMaskBf.sq = 7;
  keyMaskBf.sk = 333;
  keyMaskBf.scoreMod = "score + bias0";
  keyMaskBf.biases = {{"f32", {1, 1, 7, 333}}, {"bool", {1, 1, 1, 333}}};
  keyMaskBf.extraAttrs = "key_mask = 1";
  vs.push_back(keyMaskBf);
  Variant padFinite = named("padding_finite_fill");
  padFinite.scoreMod = "score + bias0";
  padFinite.biases = {{"f32", {2, 1, 1, 24}}};
  vs.push_back(padFinite);
  Variant gqa = named("gqa");
  gqa.hq = 8;
  gqa.hkv = 2;
  gqa.mask = "k <= q";
  vs.push_back(gqa);
  for (int64_t d : {32, 64, 80, 96, 128, 256}) {
    Variant h = named(absl::StrCat("head_dim_", d));
    h.d = d;
    h.sq = h.sk = 70;
    h.b = 1;
    h.hq = h.hkv = 2;
    vs.push_back(h);
  }
  Variant dv = named("dv_differs");
  dv.d = 32;
  dv.dv = 48;
  vs.push_back(dv);
  Variant rect = named("sq_ne_sk");
  rect.sq = 7;
  rect.sk = 130;
  rect.mask = "k <= q + 123";
  vs.push_back(rect);
  Variant one = named("batch1_head1");
  one.b = 1;
  one.hq = one.hkv = 1;
  one.sq = one.sk = 65;
  vs.push_back(one);
  Variant full = named("fully_masked_rows");
  full.mask = "k <= q - 3";  // rows 0..2 see no key: NaN, as the decomposition
  vs.push_back(full);
  Variant bf = named("bf16_causal_gqa");
  bf.dtype = "bf16";
  bf.hq = 4;
  bf.hkv = 2;
  bf.mask = "k <= q";
  bf.sq = bf.sk = 90;
  vs.push_back(bf);
  Variant bfBias = named("bf16_bias_d128");
  bfBias.dtype = "bf16";
  bfBias.d = 128;
  bfBias.scoreMod = "score + bias0";
  bfBias.biases = {{"bf16", {1, 4, 24, 24}}};
  vs.push_back(bfBias);
  return vs;
}

absl::StatusOr<std::unique_ptr<testing::Fused>> fuse(const Variant &v) { return testing::parseAndFuse(graphText(v)); }

TEST(AttentionLowering, OneAttentionStepWithExpressions) {
  Variant v = variants()[3];  // alibi
  auto f = fuse(v);
  ASSERT_TRUE(f.ok()) << f.status();
  const auto &plan = (*f)->ctx.fusionPlan;
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kind, passes::KernelKind::kAttention);
  EXPECT_EQ(plan.kernels[0].scoreMod, "score + slope[h] * (k - q)");
  EXPECT_EQ(plan.kernels[0].mask, "k <= q");
  auto items = lowerGraph(*(*f)->graph, passes::kernelNames(plan), {});
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 1u);
  const WorkItem &it = (*items)[0];
  EXPECT_EQ(it.spec.kind, SpecKind::kAttention);
  EXPECT_EQ(it.buffers.size(), 4u);
  EXPECT_EQ(it.spec.attention.groupSize(), 1);
  EXPECT_EQ(it.spec.attention.tables.at("slope").size(), 4u);
  const std::string text = printKernelSpec(it.spec);
  EXPECT_NE(text.find("score_mod score + (slope[h] * (k - q))"), std::string::npos) << text;
  EXPECT_NE(text.find("mask k <= q"), std::string::npos) << text;
  auto mod = lowerToCuda(*(*f)->graph, plan, {});
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_NE(mod->source.find("fa_warp_sum"), std::string::npos);
}

TEST(AttentionLowering, BiasStridesBroadcast) {
  Variant v = variants()[6];  // padding mask bool[2,1,1,24]
  auto f = fuse(v);
  ASSERT_TRUE(f.ok()) << f.status();
  auto items = lowerGraph(*(*f)->graph, passes::kernelNames((*f)->ctx.fusionPlan), {});
  ASSERT_TRUE(items.ok()) << items.status();
  const AttentionSpec &s = (*items)[0].spec.attention;
  ASSERT_EQ(s.biases.size(), 1u);
  EXPECT_EQ(s.biases[0].strides, (std::array<int64_t, 4>{24, 0, 0, 1}));
  EXPECT_EQ(s.biases[0].dtype, ir::DType::kBool);
}

TEST(AttentionLowering, BadSpecsAreErrors) {
  AttentionSpec s;
  s.numHeads = 3;
  s.kvHeads = 2;
  s.setDenseStrides();
  EXPECT_EQ(emitAttentionKernel(s, "k").status().code(), absl::StatusCode::kInvalidArgument);
  AttentionSpec z;
  z.seqK = 0;
  EXPECT_FALSE(emitAttentionKernel(z, "k").ok());
}

TEST(AttentionLowering, ScoreExprToCuda) {
  ir::ScoreExprContext ctx;
  ctx.numBiases = 1;
  auto e = ir::parseScoreExpr("(k - q) / 2 > 0 ? tanh(score) : bias0", ctx);
  ASSERT_TRUE(e.ok()) << e.status();
  ScoreCudaNames nm;
  nm.bias = {"B0"};
  const std::string c = scoreExprToCuda(*e, nm, false);
  EXPECT_NE(c.find("fa_idiv((k - q), (2LL))"), std::string::npos) << c;
  EXPECT_NE(c.find("tanhf((float)s)"), std::string::npos) << c;
  EXPECT_NE(c.find("B0"), std::string::npos) << c;
}

TEST(AttentionNvcc, AllVariantsCompileForSm90) {
  if (testing::findNvcc().empty()) GTEST_SKIP() << "nvcc not found: attention kernels not compiled";
  std::string src = cudaPrelude();
  int n = 0;
  for (const Variant &v : variants()) {
    auto f = fuse(v);
    ASSERT_TRUE(f.ok()) << v.name << ": " << f.status();
    auto items = lowerGraph(*(*f)->graph, passes::kernelNames((*f)->ctx.fusionPlan), {});
    ASSERT_TRUE(items.ok()) << v.name << ": " << items.status();
    auto k = emitAttentionKernel((*items)[0].spec.attention, absl::StrCat("fusec_attn_", n++));
    ASSERT_TRUE(k.ok()) << v.name << ": " << k.status();
    src += *k;
  }
  char dir[] = "/tmp/fusec_attn_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto obj = testing::nvccCompile(src, dir, "attention", "sm_90", false);
  EXPECT_TRUE(obj.ok()) << obj.status();
  std::system(absl::StrCat("rm -rf ", dir).c_str());
}

#ifdef FUSEC_HAVE_CUDART
bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#else
bool haveDevice() { return false; }
#endif

class AttentionGpu : public ::testing::TestWithParam<Variant> {};

TEST_P(AttentionGpu, MatchesInterpreter) {
  const Variant &v = GetParam();
  if (!haveDevice()) GTEST_SKIP() << "no CUDA device: attention kernel '" << v.name << "' not executed";
  if (testing::findNvcc().empty()) GTEST_SKIP() << "nvcc not found";
#ifdef FUSEC_HAVE_CUDART
  auto f = fuse(v);
  ASSERT_TRUE(f.ok()) << f.status();
  const ir::Graph &g = *(*f)->graph;
  auto mod = lowerToCuda(g, (*f)->ctx.fusionPlan, {});
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::mt19937 rng(77);
  std::map<std::string, ir::Tensor> inputs;
  for (const ir::Value *in : g.inputs()) {
    ir::Tensor t(in->type().dtype, in->type().staticShape());
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    std::bernoulli_distribution keep(0.8);
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if (in->type().dtype == ir::DType::kBool) t.setInt(i, keep(rng));
      else if (in->name().rfind("bias", 0) == 0) t.setDouble(i, keep(rng) ? real(rng) : -1e4);
      else t.setDouble(i, real(rng));
    }
    inputs[in->name()] = std::move(t);
  }
  auto expected = interp::runGraph(g, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  char dir[] = "/tmp/fusec_attn_gpu_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto so = testing::nvccCompile(mod->source, dir, "attn", "sm_90", true);
  ASSERT_TRUE(so.ok()) << so.status();
  void *lib = dlopen(so->c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  std::map<const ir::Value *, void *> dev;
  auto ptr = [&](const ir::Value *val) -> void * {
    auto it = dev.find(val);
    if (it != dev.end()) return it->second;
    void *p = nullptr;
    const int64_t bytes = std::max<int64_t>(1, val->type().numElements().value_or(0) * ir::dtypeSize(val->type().dtype));
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    cudaMemset(p, 0xff, bytes);
    auto in = inputs.find(val->name());
    if (in != inputs.end()) cudaMemcpy(p, in->second.data(), in->second.byteSize(), cudaMemcpyHostToDevice);
    dev[val] = p;
    return p;
  };
  ASSERT_EQ(mod->steps.size(), 1u);
  const Step &s = mod->steps[0];
  std::vector<void *> args;
  for (const ir::Value *b : s.buffers) args.push_back(ptr(b));
  using Launcher = int (*)(void *const *, cudaStream_t);
  auto fn = reinterpret_cast<Launcher>(dlsym(lib, s.symbol.c_str()));
  ASSERT_NE(fn, nullptr) << s.symbol;
  ASSERT_EQ(fn(args.data(), nullptr), 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const ir::Value *o = g.outputs()[0];
  ir::Tensor actual(o->type().dtype, o->type().staticShape());
  ASSERT_EQ(cudaMemcpy(actual.data(), ptr(o), actual.byteSize(), cudaMemcpyDeviceToHost), cudaSuccess);
  interp::Tolerance tol = o->type().dtype == ir::DType::kBF16 ? interp::Tolerance{2e-2, 2e-2}
                                                               : interp::Tolerance{2e-5, 1e-4};
  interp::CompareResult r = interp::compareTensors(actual, (*expected)[0], &tol);
  EXPECT_TRUE(r.pass) << v.name << ": " << r.message;
  for (auto &[val, p] : dev) cudaFree(p);
  dlclose(lib);
  std::system(absl::StrCat("rm -rf ", dir).c_str());
#endif
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionGpu, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant> &i) { return i.param.name; });

}  // namespace
}  // namespace fusec::codegen
