//===- CodegenCorpus.h - Small graphs covering the ops codegen lowers -*- C++ -*-===//
//
// Every graph here is compiled with nvcc by CodegenTest and executed on the
// GPU against the reference interpreter by CodegenGpuTest.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_CODEGEN_CODEGENCORPUS_H
#define FUSEC_TEST_UNIT_CODEGEN_CODEGENCORPUS_H

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fusec::codegen::testing {

struct Case {
  std::string name;
  std::string text;
  bool hasLibraryCalls = false;  ///< GEMM / conv steps (run by the runtime, not by the GPU test)
};

inline std::string softmaxGraph(const char *dt, int64_t rows, int64_t len) {
  return absl::StrFormat(R"(graph @softmax(%%x: %s[%d,%d]) -> (%%y) {
  %%s = constant %s[] dense<[0.5]>
  %%a = "Mul"(%%x, %%s) : %s[%d,%d] loc("scale")
  %%y = "Softmax"(%%a) {axis = -1} : %s[%d,%d] loc("softmax")
  return %%y
})", dt, rows, len, dt, dt, rows, len, dt, rows, len);
}

inline std::string layerNormGraph(const char *dt, int64_t rows, int64_t len) {
  return absl::StrFormat(R"(graph @ln(%%x: %s[%d,%d], %%r: %s[%d,%d], %%g: %s[%d], %%b: %s[%d]) -> (%%y, %%h) {
  %%h = "Add"(%%x, %%r) : %s[%d,%d] loc("residual")
  %%y = "LayerNormalization"(%%h, %%g, %%b) {axis = -1, epsilon = 1.0e-5} : %s[%d,%d] loc("ln")
  return %%y, %%h
})", dt, rows, len, dt, rows, len, dt, len, dt, len, dt, rows, len, dt, rows, len);
}

inline std::string rmsNormGraph(const char *dt, int64_t rows, int64_t len) {
  return absl::StrFormat(R"(graph @rms(%%x: %s[%d,%d], %%g: %s[%d]) -> (%%y) {
  %%y = "RMSNormalization"(%%x, %%g) {axis = -1, epsilon = 1.0e-6} : %s[%d,%d] loc("rms")
  return %%y
})", dt, rows, len, dt, len, dt, rows, len);
}

inline std::string chainGraph(const char *dt, int64_t rows, int64_t len) {
  return absl::StrFormat(R"(graph @chain(%%x: %s[%d,%d], %%b: %s[%d], %%r: %s[%d,%d]) -> (%%y) {
  %%a = "Add"(%%x, %%b) : %s[%d,%d] loc("bias")
  %%g = "Gelu"(%%a) {approximate = "none"} : %s[%d,%d] loc("gelu")
  %%y = "Add"(%%g, %%r) : %s[%d,%d] loc("residual")
  return %%y
})", dt, rows, len, dt, len, dt, rows, len, dt, rows, len, dt, rows, len, dt, rows, len);
}

/// LLaMA's rotary embedding on one projection: the heads' Transpose, then
/// rotate_half (x * cos + cat(-x[..., d/2:], x[..., :d/2]) * sin) over head
/// dim \p d (d/2 = d / 2, rounded down: an odd d leaves the last element of
/// the second half). Fusion makes all of it one elementwise kernel.
inline std::string ropeGraph(const char *dt, int64_t batch, int64_t heads, int64_t seq, int64_t d) {
  const int64_t h = d / 2;
  return absl::StrFormat(R"(graph @rope(%%x: %s[%d,%d,%d,%d], %%cos: %s[%d,%d], %%sin: %s[%d,%d]) -> (%%y) {
  %%t = "Transpose"(%%x) {perm = [0, 2, 1, 3]} : %s[%d,%d,%d,%d] loc("heads")
  %%s0 = constant i64[1] dense<[0]>
  %%sh = constant i64[1] dense<[%d]>
  %%se = constant i64[1] dense<[9223372036854775807]>
  %%ax = constant i64[1] dense<[3]>
  %%x1 = "Slice"(%%t, %%s0, %%sh, %%ax) : %s[%d,%d,%d,%d] loc("x1")
  %%x2 = "Slice"(%%t, %%sh, %%se, %%ax) : %s[%d,%d,%d,%d] loc("x2")
  %%n = "Neg"(%%x2) : %s[%d,%d,%d,%d] loc("neg")
  %%r = "Concat"(%%n, %%x1) {axis = -1} : %s[%d,%d,%d,%d] loc("cat")
  %%a = "Mul"(%%t, %%cos) : %s[%d,%d,%d,%d] loc("xcos")
  %%b = "Mul"(%%r, %%sin) : %s[%d,%d,%d,%d] loc("rsin")
  %%y = "Add"(%%a, %%b) : %s[%d,%d,%d,%d] loc("rope")
  return %%y
})",
                         dt, batch, seq, heads, d, dt, seq, d, dt, seq, d,  // inputs
                         dt, batch, heads, seq, d,                          // t
                         h,                                                 // sh
                         dt, batch, heads, seq, h,                          // x1
                         dt, batch, heads, seq, d - h,                      // x2
                         dt, batch, heads, seq, d - h,                      // n
                         dt, batch, heads, seq, d,                          // r
                         dt, batch, heads, seq, d, dt, batch, heads, seq, d, dt, batch, heads, seq, d);
}

/// The corpus: op coverage plus boundary shapes.
inline std::vector<Case> corpus() {
  std::vector<Case> cs;
  cs.push_back({"unary", R"(graph @unary(%x: f32[3,33]) -> (%o1, %o2, %o3, %o4, %o5, %o6) {
  %a = "Abs"(%x) : f32[3,33]
  %one = constant f32[] dense<[1.0]>
  %a1 = "Add"(%a, %one) : f32[3,33]
  %l = "Log"(%a1) : f32[3,33]
  %s = "Sqrt"(%a1) : f32[3,33]
  %rc = "Reciprocal"(%a1) : f32[3,33]
  %e = "Exp"(%x) : f32[3,33]
  %n = "Neg"(%e) : f32[3,33]
  %o1 = "Sum"(%l, %s, %rc, %n) : f32[3,33]
  %t = "Tanh"(%x) : f32[3,33]
  %sg = "Sigmoid"(%x) : f32[3,33]
  %er = "Erf"(%x) : f32[3,33]
  %o2 = "Mean"(%t, %sg, %er) : f32[3,33]
  %lr = "LeakyRelu"(%x) {alpha = 0.1} : f32[3,33]
  %el = "Elu"(%x) {alpha = 1.0} : f32[3,33]
  %hs = "HardSigmoid"(%x) : f32[3,33]
  %sp = "Softplus"(%x) : f32[3,33]
  %sw = "Swish"(%x) {alpha = 0.5} : f32[3,33]
  %o3 = "Max"(%lr, %el, %hs, %sp, %sw) : f32[3,33]
  %g1 = "Gelu"(%x) {approximate = "tanh"} : f32[3,33]
  %sn = "Sin"(%x) : f32[3,33]
  %cs = "Cos"(%x) : f32[3,33]
  %o4 = "Min"(%g1, %sn, %cs) : f32[3,33]
  %fl = "Floor"(%x) : f32[3,33]
  %ce = "Ceil"(%x) : f32[3,33]
  %rd = "Round"(%x) : f32[3,33]
  %sgn = "Sign"(%x) : f32[3,33]
  %f1 = "Add"(%fl, %ce) : f32[3,33]
  %f2 = "Sub"(%rd, %sgn) : f32[3,33]
  %o5 = "Mul"(%f1, %f2) : f32[3,33]
  %lo = constant f32[] dense<[-0.5]>
  %hi = constant f32[] dense<[0.75]>
  %o6 = "Clip"(%x, %lo, %hi) : f32[3,33]
  return %o1, %o2, %o3, %o4, %o5, %o6
})"});
  cs.push_back({"logic", R"(graph @logic(%x: f32[4,9], %y: f32[4,9], %i: i64[4,9]) -> (%w, %c, %k, %h) {
  %g = "Greater"(%x, %y) : bool[4,9]
  %l = "Less"(%x, %y) : bool[4,9]
  %ge = "GreaterOrEqual"(%x, %y) : bool[4,9]
  %le = "LessOrEqual"(%x, %y) : bool[4,9]
  %e = "Equal"(%x, %x) : bool[4,9]
  %n = "Not"(%l) : bool[4,9]
  %a = "And"(%g, %e) : bool[4,9]
  %o = "Or"(%a, %n) : bool[4,9]
  %xo = "Xor"(%o, %ge) : bool[4,9]
  %xo2 = "And"(%xo, %le) : bool[4,9]
  %nan = "IsNaN"(%x) : bool[4,9]
  %inf = "IsInf"(%x) : bool[4,9]
  %bad = "Or"(%nan, %inf) : bool[4,9]
  %m = "Or"(%xo2, %bad) : bool[4,9]
  %w = "Where"(%m, %x, %y) : f32[4,9]
  %c = "Cast"(%g) {to = 7} : i64[4,9]
  %three = constant i64[] dense<[3]>
  %two = constant i64[] dense<[2]>
  %ip = "Add"(%i, %three) : i64[4,9]
  %id = "Div"(%ip, %two) : i64[4,9]
  %im = "Mod"(%ip, %two) : i64[4,9]
  %k = "Mul"(%id, %im) : i64[4,9]
  %hf = "Cast"(%x) {to = 10} : f16[4,9]
  %h = "Cast"(%hf) {to = 1} : f32[4,9]
  return %w, %c, %k, %h
})"});
  cs.push_back({"pow_bn", R"(graph @pow_bn(%x: f32[2,3,4,5], %p: f32[2,3,4,5]) -> (%y, %z) {
  %two = constant f32[] dense<[2.0]>
  %sq = "Pow"(%x, %two) : f32[2,3,4,5]
  %ax = "Abs"(%p) : f32[2,3,4,5]
  %pw = "Pow"(%ax, %x) : f32[2,3,4,5]
  %y = "Add"(%sq, %pw) : f32[2,3,4,5]
  %sc = constant f32[3] dense<[1.0, 2.0, 0.5]>
  %bi = constant f32[3] dense<[0.1, -0.2, 0.3]>
  %mu = constant f32[3] dense<[0.0, 1.0, -1.0]>
  %va = constant f32[3] dense<[1.0, 4.0, 0.25]>
  %z = "BatchNormalization"(%x, %sc, %bi, %mu, %va) {epsilon = 1.0e-5} : f32[2,3,4,5]
  return %y, %z
})"});
  cs.push_back({"layout", R"(graph @layout(%x: f32[4,6], %y: f32[6,4]) -> (%t, %s, %e, %tl, %tr) {
  %xt = "Transpose"(%x) {perm = [1, 0]} : f32[6,4]
  %t = "Add"(%xt, %y) : f32[6,4]
  %st = constant i64[2] dense<[1, 0]>
  %en = constant i64[2] dense<[4, 6]>
  %ax = constant i64[2] dense<[0, 1]>
  %sp = constant i64[2] dense<[2, 2]>
  %s = "Slice"(%x, %st, %en, %ax, %sp) : f32[2,3]
  %shp = constant i64[3] dense<[2, 4, 6]>
  %e = "Expand"(%x, %shp) : f32[2,4,6]
  %rep = constant i64[2] dense<[2, 3]>
  %tl = "Tile"(%x, %rep) : f32[8,18]
  %tr = "Trilu"(%x) {upper = 0} : f32[4,6]
  return %t, %s, %e, %tl, %tr
})"});
  cs.push_back({"gather", R"(graph @gather(%emb: f32[10,8], %x: f32[3,4]) -> (%g, %ge, %gn) {
  %ids = constant i64[2,3] dense<[1, 9, -1, 0, 4, 4]>
  %g = "Gather"(%emb, %ids) {axis = 0} : f32[2,3,8]
  %gi = constant i64[3,2] dense<[0, 3, 1, 2, 3, 0]>
  %ge = "GatherElements"(%x, %gi) {axis = 1} : f32[3,2]
  %ni = constant i64[2,1] dense<[2, 0]>
  %gn = "GatherND"(%x, %ni) : f32[2,4]
  return %g, %ge, %gn
})"});
  cs.push_back({"concat", R"(graph @concat(%a: f32[2,3], %b: f32[2,5]) -> (%c) {
  %c = "Concat"(%a, %b) {axis = 1} : f32[2,8]
  return %c
})"});
  cs.push_back({"split", R"(graph @split(%a: f32[2,9]) -> (%p, %q) {
  %sz = constant i64[2] dense<[4, 5]>
  %p, %q = "Split"(%a, %sz) {axis = 1} : f32[2,4], f32[2,5]
  return %p, %q
})"});
  cs.push_back({"pad", R"(graph @pad(%a: f32[3,4]) -> (%c, %e, %r) {
  %pads = constant i64[4] dense<[1, 2, 0, 1]>
  %v = constant f32[] dense<[1.5]>
  %c = "Pad"(%a, %pads, %v) {mode = "constant"} : f32[4,7]
  %e = "Pad"(%a, %pads) {mode = "edge"} : f32[4,7]
  %r = "Pad"(%a, %pads) {mode = "reflect"} : f32[4,7]
  return %c, %e, %r
})"});
  cs.push_back({"reduce", R"(graph @reduce(%x: f32[3,5,7]) -> (%s, %m, %mx, %mn, %p, %ss, %l2, %am, %an, %s0) {
  %ax = constant i64[1] dense<[-1]>
  %ax2 = constant i64[2] dense<[1, 2]>
  %ax0 = constant i64[1] dense<[0]>
  %s = "ReduceSum"(%x, %ax) {keepdims = 1} : f32[3,5,1]
  %m = "ReduceMean"(%x, %ax2) {keepdims = 0} : f32[3]
  %mx = "ReduceMax"(%x, %ax) {keepdims = 0} : f32[3,5]
  %mn = "ReduceMin"(%x, %ax) : f32[3,5,1]
  %p = "ReduceProd"(%x, %ax) : f32[3,5,1]
  %ss = "ReduceSumSquare"(%x, %ax2) : f32[3,1,1]
  %l2 = "ReduceL2"(%x, %ax) : f32[3,5,1]
  %am = "ArgMax"(%x) {axis = -1, keepdims = 1} : i64[3,5,1]
  %an = "ArgMin"(%x) {axis = 2, keepdims = 0} : i64[3,5]
  %s0 = "ReduceSum"(%x, %ax0) {keepdims = 0} : f32[5,7]
  return %s, %m, %mx, %mn, %p, %ss, %l2, %am, %an, %s0
})"});
  cs.push_back({"softmax_axis1", R"(graph @sm1(%x: f32[2,5,3]) -> (%y, %z) {
  %y = "Softmax"(%x) {axis = 1} : f32[2,5,3]
  %z = "LogSoftmax"(%x) {axis = -1} : f32[2,5,3]
  return %y, %z
})"});
  cs.push_back({"ln_stats", R"(graph @lns(%x: f32[2,3,10], %g: f32[10]) -> (%y, %mean, %inv) {
  %y, %mean, %inv = "LayerNormalization"(%x, %g) {axis = -1} : f32[2,3,10], f32[2,3,1], f32[2,3,1]
  return %y, %mean, %inv
})"});
  cs.push_back({"pool", R"(graph @pool(%x: f32[1,2,7,9]) -> (%mp, %ap, %gp, %gm) {
  %mp = "MaxPool"(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,2,4,5]
  %ap = "AveragePool"(%x) {kernel_shape = [2, 3], pads = [0, 1, 0, 1], count_include_pad = 0} : f32[1,2,6,9]
  %gp = "GlobalAveragePool"(%x) : f32[1,2,1,1]
  %gm = "GlobalMaxPool"(%x) : f32[1,2,1,1]
  return %mp, %ap, %gp, %gm
})"});
  cs.push_back({"matmul_naive", R"(graph @mmn(%a: f32[2,1,5,6], %b: f32[1,3,6,4]) -> (%y) {
  %m = "MatMul"(%a, %b) : f32[2,3,5,4]
  %y = "Relu"(%m) : f32[2,3,5,4]
  return %y
})"});
  cs.push_back({"views", R"(graph @views(%x: f32[2,12]) -> (%y) {
  %shp = constant i64[3] dense<[2, 3, 4]>
  %r = "Reshape"(%x, %shp) : f32[2,3,4]
  %e = "Exp"(%r) : f32[2,3,4]
  %t = "Transpose"(%e) {perm = [0, 2, 1]} : f32[2,4,3]
  %y = "Neg"(%t) : f32[2,4,3]
  return %y
})"});
  cs.push_back({"range_dropout", R"(graph @rd(%x: f32[5]) -> (%r, %d, %mask) {
  %st = constant f32[] dense<[1.0]>
  %lim = constant f32[] dense<[3.5]>
  %dl = constant f32[] dense<[0.5]>
  %r = "Range"(%st, %lim, %dl) : f32[5]
  %d, %mask = "Dropout"(%x) : f32[5], bool[5]
  return %r, %d, %mask
})"});
  cs.push_back({"gemm_bias_relu", R"(graph @gbr(%a: f32[8,64], %w: f32[64,32], %b: f32[32]) -> (%y) {
  %m = "MatMul"(%a, %w) : f32[8,32]
  %ab = "Add"(%m, %b) : f32[8,32]
  %y = "Relu"(%ab) : f32[8,32]
  return %y
})", true});
  cs.push_back({"gemm_gelu_erf", R"(graph @gge(%a: f32[8,64], %w: f32[64,32]) -> (%y) {
  %m = "MatMul"(%a, %w) : f32[8,32]
  %y = "Gelu"(%m) : f32[8,32]
  return %y
})", true});
  for (const char *dt : {"f32", "bf16"}) {
    for (int64_t len : {1, 7, 1000, 4096, 65536}) {
      cs.push_back({absl::StrCat("softmax_", dt, "_", len), softmaxGraph(dt, 3, len)});
      cs.push_back({absl::StrCat("layernorm_", dt, "_", len), layerNormGraph(dt, 3, len)});
    }
    cs.push_back({absl::StrCat("rmsnorm_", dt, "_4096"), rmsNormGraph(dt, 2, 4096)});
    cs.push_back({absl::StrCat("rmsnorm_", dt, "_1_batch1"), rmsNormGraph(dt, 1, 1000)});
    cs.push_back({absl::StrCat("chain_", dt, "_odd"), chainGraph(dt, 3, 7)});
    cs.push_back({absl::StrCat("chain_", dt, "_vec"), chainGraph(dt, 5, 4096)});
    cs.push_back({absl::StrCat("chain_", dt, "_batch1"), chainGraph(dt, 1, 1000)});
  }
  // PRelu: a per-channel slope [C,1,1] (MTCNN), a last-axis slope and a
  // scalar one, fused with its neighbours.
  cs.push_back({"prelu", R"(graph @prelu(%x: f32[2,3,5,7], %s: f32[3,1,1], %t: f32[7], %r: f32[2,3,5,7]) -> (%y, %z) {
  %a = "PRelu"(%x, %s) : f32[2,3,5,7] loc("prelu_channel")
  %y = "Add"(%a, %r) : f32[2,3,5,7] loc("residual")
  %one = constant f32[1] dense<[0.25]>
  %b = "PRelu"(%r, %t) : f32[2,3,5,7] loc("prelu_last")
  %z = "PRelu"(%b, %one) : f32[2,3,5,7] loc("prelu_scalar")
  return %y, %z
})"});
  // Mod on floats: fmod = 0 takes the divisor's sign (numpy's mod, the onnx
  // 1.23 node tests), fmod = 1 the dividend's (C's fmod); mixed signs.
  cs.push_back({"mod_float", R"(graph @mod_float(%x: f32[3,37], %y: f32[3,37]) -> (%a, %b) {
  %a = "Mod"(%x, %y) : f32[3,37] loc("mod_floor")
  %b = "Mod"(%x, %y) {fmod = 1} : f32[3,37] loc("mod_fmod")
  return %a, %b
})"});
  // CumSum: last and first axes, exclusive / reverse, int64 (position ids
  // from an attention mask, as BLOOM and OPT exports compute them), a
  // middle axis, batch 1 with an odd length, and a long row.
  cs.push_back({"cumsum", R"(graph @cumsum(%x: f32[3,37], %m: i64[2,9], %u: f32[4,5,6]) -> (%a, %b, %c, %d, %e) {
  %ax1 = constant i64[] dense<[1]>
  %ax0 = constant i64[] dense<[0]>
  %axm = constant i64[1] dense<[-2]>
  %a = "CumSum"(%x, %ax1) : f32[3,37] loc("last")
  %b = "CumSum"(%x, %ax0) {exclusive = 1} : f32[3,37] loc("first_exclusive")
  %c0 = "CumSum"(%m, %ax1) : i64[2,9] loc("positions")
  %c1 = "Mul"(%c0, %m) : i64[2,9]
  %c = "Sub"(%c1, %m) : i64[2,9]
  %d = "CumSum"(%u, %axm) {exclusive = 1, reverse = 1} : f32[4,5,6] loc("middle_rev_excl")
  %e = "CumSum"(%u, %ax0) {reverse = 1} : f32[4,5,6] loc("first_rev")
  return %a, %b, %c, %d, %e
})"});
  cs.push_back({"cumsum_batch1_long", R"(graph @cumsumlong(%x: f32[1,999], %y: f32[2,4096]) -> (%a, %b) {
  %ax = constant i64[] dense<[-1]>
  %a = "CumSum"(%x, %ax) : f32[1,999]
  %b = "CumSum"(%y, %ax) {reverse = 1} : f32[2,4096]
  return %a, %b
})"});
  // TopK: the last axis (k = 5 of 37), a middle axis of i64 values in
  // {0, 1, 2} (ties: the lower index first) smallest and largest, a full
  // sort (k = the axis length), batch 1 with k = 1 over a long row, and a
  // Values output fused into its consumer's kernel while Indices is unused.
  cs.push_back({"topk", R"(graph @topk(%x: f32[3,37], %m: i64[2,9,5], %u: f32[1,1000]) -> (%v0, %i0, %v1, %i1, %v2, %i2, %i3, %w) {
  %k5 = constant i64[1] dense<[5]>
  %v0, %i0 = "TopK"(%x, %k5) : f32[3,5], i64[3,5] loc("last_largest")
  %k3 = constant i64[1] dense<[3]>
  %v1, %i1 = "TopK"(%m, %k3) {axis = 1, largest = 0} : i64[2,3,5], i64[2,3,5] loc("ties_middle_smallest")
  %k9 = constant i64[1] dense<[9]>
  %v2, %i2 = "TopK"(%m, %k9) {axis = -2, sorted = 0} : i64[2,9,5], i64[2,9,5] loc("full_sort_ties")
  %k1 = constant i64[1] dense<[1]>
  %v3, %i3 = "TopK"(%u, %k1) : f32[1,1], i64[1,1] loc("batch1_long")
  %v4, %i4 = "TopK"(%x, %k3) {axis = 0} : f32[3,37], i64[3,37] loc("first_axis")
  %w = "Exp"(%v4) : f32[3,37]
  return %v0, %i0, %v1, %i1, %v2, %i2, %i3, %w
})"});
  // Hardmax: the last axis with an elementwise prologue, a middle axis, and
  // integer-valued rows with ties (the first maximum wins).
  cs.push_back({"hardmax", R"(graph @hardmax(%x: f32[4,7], %m: f32[2,3,5], %t: i64[3,6]) -> (%a, %b, %c) {
  %e = "Exp"(%x) : f32[4,7]
  %a = "Hardmax"(%e) : f32[4,7] loc("last")
  %h = "Hardmax"(%m) {axis = 1} : f32[2,3,5] loc("middle")
  %b = "Mul"(%h, %m) : f32[2,3,5]
  %tf = "Cast"(%t) {to = 1} : f32[3,6]
  %c = "Hardmax"(%tf) : f32[3,6] loc("ties")
  return %a, %b, %c
})"});
  // OneHot: depth 5 on the last axis, a new first axis with negative and
  // out-of-range indices, float indices (truncated) into i64 values, fused
  // with a consumer.
  cs.push_back({"onehot", R"(graph @onehot(%i: i64[2,3], %f: f32[4], %r: f32[5,4]) -> (%a, %b, %c) {
  %d5 = constant i64[] dense<[5]>
  %v = constant f32[2] dense<[0.5, 3.0]>
  %a = "OneHot"(%i, %d5, %v) : f32[2,3,5] loc("last")
  %off = constant i64[4] dense<[-1, -5, 4, 6]>
  %j = "Sub"(%i, %i) : i64[2,3]
  %n0 = "ReduceSum"(%j) {keepdims = 0} : i64[]
  %n = "Add"(%off, %n0) : i64[4]
  %oh = "OneHot"(%n, %d5, %v) {axis = 0} : f32[5,4] loc("first_negative")
  %b = "Add"(%oh, %r) : f32[5,4]
  %d3 = constant f32[1] dense<[3.0]>
  %vi = constant i64[2] dense<[-1, 1]>
  %c = "OneHot"(%f, %d3, %vi) {axis = 1} : i64[4,3] loc("float_indices")
  return %a, %b, %c
})"});
  // ScatterElements: duplicate indices (values in {0, 1, 2}) with every
  // reduction, indices smaller than data on a non-scatter axis, negative
  // constant indices, and i64 data.
  cs.push_back({"scatter_elements", R"(graph @scatterel(%d: f32[4,6], %i: i64[4,3], %u: f32[4,3], %d3: f32[2,5,3], %i3: i64[2,2,3], %u3: f32[2,2,3], %di: i64[3,4], %ii: i64[3,2], %ui: i64[3,2]) -> (%a, %b, %c, %e, %f, %g, %h) {
  %a = "ScatterElements"(%d, %i, %u) {axis = 1} : f32[4,6] loc("none_duplicates")
  %b = "ScatterElements"(%d, %i, %u) {axis = -1, reduction = "add"} : f32[4,6] loc("add")
  %c = "ScatterElements"(%d3, %i3, %u3) {axis = 1, reduction = "mul"} : f32[2,5,3] loc("mul_partial")
  %e = "ScatterElements"(%d3, %i3, %u3) {axis = 2, reduction = "max"} : f32[2,5,3] loc("max")
  %f = "ScatterElements"(%d3, %i3, %u3) {axis = 1, reduction = "min"} : f32[2,5,3] loc("min")
  %ni = constant i64[1,2] dense<[-1, -6]>
  %nu = constant f32[1,2] dense<[7.0, 8.0]>
  %g = "ScatterElements"(%d, %ni, %nu) {axis = 1} : f32[4,6] loc("negative")
  %h = "ScatterElements"(%di, %ii, %ui) {axis = 1, reduction = "add"} : i64[3,4] loc("int_add")
  return %a, %b, %c, %e, %f, %g, %h
})"});
  // ScatterND: slices at duplicate leading indices (none, add), pairs of
  // indices (mul), element indices (max), negative constant indices (min).
  cs.push_back({"scatter_nd", R"(graph @scatternd(%d: f32[4,5,6], %i: i64[3,1], %u: f32[3,5,6], %i2: i64[2,2], %u2: f32[2,6], %e: i64[3,3], %u3: f32[3]) -> (%a, %b, %c, %f, %g) {
  %a = "ScatterND"(%d, %i, %u) : f32[4,5,6] loc("none_duplicates")
  %b = "ScatterND"(%d, %i, %u) {reduction = "add"} : f32[4,5,6] loc("add")
  %c = "ScatterND"(%d, %i2, %u2) {reduction = "mul"} : f32[4,5,6] loc("mul_pairs")
  %f = "ScatterND"(%d, %e, %u3) {reduction = "max"} : f32[4,5,6] loc("max_elements")
  %ni = constant i64[2,2] dense<[-1, -2, 0, -5]>
  %g = "ScatterND"(%d, %ni, %u2) {reduction = "min"} : f32[4,5,6] loc("min_negative")
  return %a, %b, %c, %f, %g
})"});
  // BitShift: u8 left (truncated to 8 bits, also inside a fused chain:
  // (x << 4) >> 4 keeps the low nibble) and right; i32 with negative values
  // and counts below 0, at the width and above it (-1 / 0 results).
  cs.push_back({"bitshift", R"(graph @bitshift(%x: u8[2,5], %s: u8[2,5], %y: i32[7], %t: i32[7]) -> (%a, %b, %c, %e, %n) {
  %big = constant u8[5] dense<[200, 250, 1, 128, 7]>
  %xb = "Add"(%x, %big) : u8[2,5]
  %sh = constant u8[5] dense<[1, 5, 6, 0, 3]>
  %sb = "Add"(%s, %sh) : u8[2,5]
  %a = "BitShift"(%xb, %sb) {direction = "LEFT"} : u8[2,5] loc("u8_left")
  %b = "BitShift"(%xb, %sb) {direction = "RIGHT"} : u8[2,5] loc("u8_right")
  %vals = constant i32[7] dense<[-128, -1, 5, 1000, 7, -9, 3]>
  %yv = "Sub"(%vals, %y) : i32[7]
  %cnt = constant i32[7] dense<[0, 29, 30, -3, 40, 5, -1]>
  %tc = "Add"(%t, %cnt) : i32[7]
  %c = "BitShift"(%yv, %tc) {direction = "LEFT"} : i32[7] loc("i32_left")
  %e = "BitShift"(%yv, %tc) {direction = "RIGHT"} : i32[7] loc("i32_right")
  %four = constant u8[1] dense<[4]>
  %hi = "BitShift"(%xb, %four) {direction = "LEFT"} : u8[2,5]
  %n = "BitShift"(%hi, %four) {direction = "RIGHT"} : u8[2,5] loc("low_nibble")
  return %a, %b, %c, %e, %n
})"});
  // Resize: YOLO-style 2x nearest upsample (asymmetric, floor) into a
  // Concat; linear (half_pixel) and cubic (A = -0.5, exclude_outside) at a
  // non-integral scale; sizes with axes and align_corners; nearest with
  // pytorch_half_pixel / round_prefer_ceil on a downscale; tf_crop_and_resize
  // with extrapolation; a 1-element output axis.
  cs.push_back({"resize", R"(graph @resize(%x: f32[1,3,5,7], %u: f32[2,3,4,4], %k: f32[1,3,10,14]) -> (%n, %l, %c, %d, %a, %t, %o) {
  %s2 = constant f32[4] dense<[1.0, 1.0, 2.0, 2.0]>
  %up = "Resize"(%x, _, %s2) {coordinate_transformation_mode = "asymmetric", mode = "nearest", nearest_mode = "floor"} : f32[1,3,10,14] loc("upsample")
  %n = "Concat"(%up, %k) {axis = 1} : f32[1,6,10,14] loc("concat")
  %s15 = constant f32[4] dense<[1.0, 1.0, 1.7, 1.5]>
  %l = "Resize"(%x, _, %s15) {mode = "linear"} : f32[1,3,8,10] loc("linear")
  %c = "Resize"(%x, _, %s15) {cubic_coeff_a = -0.5, exclude_outside = 1, mode = "cubic"} : f32[1,3,8,10] loc("cubic")
  %sz = constant i64[2] dense<[3, 5]>
  %d = "Resize"(%u, _, _, %sz) {axes = [2, 3], coordinate_transformation_mode = "align_corners", mode = "linear"} : f32[2,3,3,5] loc("align")
  %a = "Resize"(%u, _, _, %sz) {axes = [2, 3], coordinate_transformation_mode = "pytorch_half_pixel", mode = "nearest", nearest_mode = "round_prefer_ceil"} : f32[2,3,3,5] loc("nearest_ceil")
  %roi = constant f32[8] dense<[0.0, 0.0, 0.4, -0.2, 1.0, 1.0, 0.6, 1.3]>
  %szt = constant i64[4] dense<[2, 3, 3, 5]>
  %t = "Resize"(%u, %roi, _, %szt) {coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 10.0, mode = "linear"} : f32[2,3,3,5] loc("crop")
  %sz1 = constant i64[2] dense<[1, 3]>
  %o = "Resize"(%u, _, _, %sz1) {axes = [2, 3], mode = "cubic"} : f32[2,3,1,3] loc("one")
  return %n, %l, %c, %d, %a, %t, %o
})"});
  // Resize inside an elementwise kernel: its producer is recomputed per
  // tap, its consumer reads it in registers (DBNet / FPN upsample + add).
  cs.push_back({"resize_fused", R"(graph @resizefused(%x: f32[2,4,5,6], %r: f32[2,4,10,12]) -> (%y) {
  %s2 = constant f32[4] dense<[1.0, 1.0, 2.0, 2.0]>
  %e = "Sigmoid"(%x) : f32[2,4,5,6] loc("act")
  %u = "Resize"(%e, _, %s2) {mode = "linear"} : f32[2,4,10,12] loc("up")
  %y = "Add"(%u, %r) : f32[2,4,10,12] loc("add")
  return %y
})"});
  // ConvTranspose as a generated kernel: DBNet's 2x2 stride-2 upsampling
  // with bias; pads + output_padding + dilation; groups (depthwise and
  // M/group > 1); 1-d with output_shape; SAME_UPPER at stride 2 on odd
  // sizes; batch 1 with a 3x3 kernel, stride 2 (output_padding 1).
  cs.push_back({"convtranspose", R"(graph @convt(%x: f32[2,4,5,7], %w: f32[4,3,2,2], %b: f32[3], %wd: f32[4,1,3,3], %wg: f32[4,3,3,3], %x1: f32[1,2,9], %w1: f32[2,3,4]) -> (%up, %pd, %dw, %gr, %one, %same) {
  %up = "ConvTranspose"(%x, %w, %b) {strides = [2, 2]} : f32[2,3,10,14] loc("upsample")
  %pd = "ConvTranspose"(%x, %w) {dilations = [2, 1], output_padding = [1, 0], pads = [1, 0, 0, 1], strides = [2, 1]} : f32[2,3,11,7] loc("padded")
  %dw = "ConvTranspose"(%x, %wd) {group = 4, pads = [1, 1, 1, 1]} : f32[2,4,5,7] loc("depthwise")
  %gr = "ConvTranspose"(%x, %wg) {group = 2, output_padding = [1, 1], strides = [2, 2]} : f32[2,6,12,16] loc("grouped")
  %one = "ConvTranspose"(%x1, %w1) {output_shape = [21], strides = [2]} : f32[1,3,21] loc("oned")
  %same = "ConvTranspose"(%x, %wd) {auto_pad = "SAME_UPPER", group = 4, strides = [2, 2]} : f32[2,4,10,14] loc("same")
  return %up, %pd, %dw, %gr, %one, %same
})"});
  // Inverse and hyperbolic trigonometry, each inside its domain: Asin, Acos
  // and Atanh of tanh(x) in (-0.97, 0.97), Acosh of |x| + 1, Tan of x / 2.
  cs.push_back({"trig", R"(graph @trig(%x: f32[5,37]) -> (%o1, %o2) {
  %t = "Tanh"(%x) : f32[5,37]
  %as = "Asin"(%t) : f32[5,37]
  %ac = "Acos"(%t) : f32[5,37]
  %at = "Atanh"(%t) : f32[5,37]
  %half = constant f32[] dense<[0.5]>
  %xh = "Mul"(%x, %half) : f32[5,37]
  %tn = "Tan"(%xh) : f32[5,37]
  %o1 = "Sum"(%as, %ac, %at, %tn) : f32[5,37]
  %an = "Atan"(%x) : f32[5,37]
  %sh = "Sinh"(%x) : f32[5,37]
  %ch = "Cosh"(%x) : f32[5,37]
  %ash = "Asinh"(%x) : f32[5,37]
  %ax = "Abs"(%x) : f32[5,37]
  %one = constant f32[] dense<[1.0]>
  %ax1 = "Add"(%ax, %one) : f32[5,37]
  %ach = "Acosh"(%ax1) : f32[5,37]
  %o2 = "Sum"(%an, %sh, %ch, %ash, %ach) : f32[5,37]
  return %o1, %o2
})"});
  // Bitwise ops on signed and unsigned integers; BitwiseNot of u8 feeds a
  // compare in the same kernel, so it must flip only 8 bits (255 - x, not -1 - x).
  cs.push_back({"bitwise", R"(graph @bitwise(%a: i32[4,9], %b: i32[4,9], %u: u8[4,9]) -> (%o1, %o2, %o3) {
  %x = "BitwiseAnd"(%a, %b) : i32[4,9]
  %y = "BitwiseOr"(%a, %b) : i32[4,9]
  %z = "BitwiseXor"(%x, %y) : i32[4,9]
  %n = "BitwiseNot"(%z) : i32[4,9]
  %o1 = "Add"(%n, %a) : i32[4,9]
  %nu = "BitwiseNot"(%u) : u8[4,9]
  %k = constant u8[] dense<[253]>
  %o2 = "Greater"(%nu, %k) : bool[4,9]
  %o3 = "BitwiseXor"(%nu, %u) : u8[4,9]
  return %o1, %o2, %o3
})"});
  // GridSample (grid values in [-2, 2]: many points fall outside X):
  // linear / zeros, nearest / border with align_corners, cubic / reflection
  // on odd sizes, batch 1; 3-D linear / reflection; a 1-pixel axis.
  cs.push_back({"gridsample", R"(graph @gridsample(%x: f32[2,3,5,7], %g: f32[2,4,6,2], %x1: f32[1,2,3,5], %g1: f32[1,3,3,2], %v: f32[1,2,3,4,5], %gv: f32[1,2,2,3,3], %t: f32[2,1,1,4], %gt: f32[2,3,2,2]) -> (%l, %n, %c, %vol, %thin) {
  %l = "GridSample"(%x, %g) : f32[2,3,4,6] loc("linear")
  %n = "GridSample"(%x, %g) {align_corners = 1, mode = "nearest", padding_mode = "border"} : f32[2,3,4,6] loc("nearest")
  %c = "GridSample"(%x1, %g1) {mode = "cubic", padding_mode = "reflection"} : f32[1,2,3,3] loc("cubic")
  %vol = "GridSample"(%v, %gv) {padding_mode = "reflection", align_corners = 1} : f32[1,2,2,3,3] loc("volumetric")
  %thin = "GridSample"(%t, %gt) {padding_mode = "reflection"} : f32[2,1,3,2] loc("thin")
  return %l, %n, %c, %vol, %thin
})"});
  // GridSample fused with an elementwise producer of X (recomputed per tap)
  // and a consumer.
  cs.push_back({"gridsample_fused", R"(graph @gridsamplefused(%x: f32[1,4,6,6], %g: f32[1,5,5,2], %r: f32[1,4,5,5]) -> (%y) {
  %e = "Sigmoid"(%x) : f32[1,4,6,6] loc("act")
  %s = "GridSample"(%e, %g) {padding_mode = "border"} : f32[1,4,5,5] loc("warp")
  %y = "Add"(%s, %r) : f32[1,4,5,5] loc("add")
  return %y
})"});
  // CumProd along the last and a middle axis, exclusive / reverse, an i32
  // scan; Det of a batch of 3x3 and of one 2x2 and 4x4.
  cs.push_back({"cumprod_det", R"(graph @cumproddet(%x: f32[3,7], %u: f32[2,5,3], %k: i32[4,6], %m: f32[5,3,3], %m2: f32[2,2], %m4: f32[2,4,4]) -> (%a, %b, %c, %d, %e, %f) {
  %ax1 = constant i64[] dense<[1]>
  %axm = constant i64[] dense<[-2]>
  %a = "CumProd"(%x, %ax1) : f32[3,7] loc("scan")
  %b = "CumProd"(%u, %axm) {exclusive = 1, reverse = 1} : f32[2,5,3] loc("scan_mid")
  %c = "CumProd"(%k, %ax1) {exclusive = 1} : i32[4,6] loc("scan_int")
  %d = "Det"(%m) : f32[5] loc("det3")
  %e = "Det"(%m2) : f32[] loc("det2")
  %f = "Det"(%m4) : f32[2] loc("det4")
  return %a, %b, %c, %d, %e, %f
})"});
  // RoiAlign as its own kernel: avg with half_pixel and max with
  // output_half_pixel, regions inside, across and past the image, batch 2.
  cs.push_back({"roialign", R"(graph @roialign(%x: f32[2,3,6,7]) -> (%a, %m) {
  %rois = constant f32[3,4] dense<[0.0, 0.0, 5.0, 4.0, 1.5, 0.5, 6.2, 5.9, -2.0, -1.0, 9.0, 8.0]>
  %bi = constant i64[3] dense<[0, 1, 1]>
  %a = "RoiAlign"(%x, %rois, %bi) {output_height = 2, output_width = 3, sampling_ratio = 2, spatial_scale = 0.75} : f32[3,3,2,3] loc("align_avg")
  %m = "RoiAlign"(%x, %rois, %bi) {coordinate_transformation_mode = "output_half_pixel", mode = "max", output_height = 3, output_width = 2, sampling_ratio = 1} : f32[3,3,3,2] loc("align_max")
  return %a, %m
})"});
  // float8 storage (issue 11): Cast to each format, saturating and not
  // (x * 300 overflows E4M3FNUZ's 240 and E4M3FN's 448), decoded in the
  // same kernel and by a data-movement kernel, QuantizeLinear to and
  // DequantizeLinear from float8 with a zero point.
  cs.push_back({"float8", R"(graph @float8(%x: f32[4,33]) -> (%a, %b, %c, %d, %t, %q, %dq) {
  %k = constant f32[] dense<[300.0]>
  %s = "Mul"(%x, %k) : f32[4,33] loc("scale")
  %a = "Cast"(%s) {to = 17} : f8e4m3fn[4,33] loc("sat")
  %b = "Cast"(%s) {saturate = 0, to = 18} : f8e4m3fnuz[4,33] loc("nosat")
  %c = "Cast"(%s) {saturate = 0, to = 19} : f8e5m2[4,33] loc("e5m2")
  %d0 = "Cast"(%s) {to = 20} : f8e5m2fnuz[4,33] loc("e5m2fnuz")
  %d = "Cast"(%d0) {to = 1} : f32[4,33] loc("decode")
  %t = "Transpose"(%c) {perm = [1, 0]} : f8e5m2[33,4] loc("move")
  %sc = constant f32[] dense<[0.125]>
  %zp = constant f8e4m3fn[] dense<[1.0]>
  %q = "QuantizeLinear"(%x, %sc, %zp) : f8e4m3fn[4,33] loc("quant")
  %dq = "DequantizeLinear"(%q, %sc, %zp) : f32[4,33] loc("dequant")
  return %a, %b, %c, %d, %t, %q, %dq
})"});
  // u64 operands of order-dependent ops: BitwiseNot makes values of 2^63
  // and above, which i64 arithmetic would read as negative.
  cs.push_back({"u64_ops", R"(graph @u64ops(%u: u64[4,9], %v: u64[4,9]) -> (%lt, %ge, %dv, %md, %mx, %mn, %sh, %f) {
  %nu = "BitwiseNot"(%u) : u64[4,9] loc("big")
  %one = constant u64[] dense<[1]>
  %v1 = "Add"(%v, %one) : u64[4,9] loc("nonzero")
  %lt = "Less"(%nu, %v) : bool[4,9] loc("lt")
  %ge = "GreaterOrEqual"(%nu, %u) : bool[4,9] loc("ge")
  %dv = "Div"(%nu, %v1) : u64[4,9] loc("div")
  %md = "Mod"(%nu, %v1) : u64[4,9] loc("mod")
  %mx = "Max"(%nu, %v) : u64[4,9] loc("max")
  %mn = "Min"(%nu, %v) : u64[4,9] loc("min")
  %sh = "BitShift"(%nu, %v1) {direction = "RIGHT"} : u64[4,9] loc("shr")
  %f = "Cast"(%nu) {to = 1} : f32[4,9] loc("to_f32")
  return %lt, %ge, %dv, %md, %mx, %mn, %sh, %f
})"});
  // Empty tensors: kernels over an empty domain (the Relu, the Add) launch
  // nothing and their outputs are 0 bytes; reductions over an empty axis
  // write the identity of the reduction and of the stored dtype: 0 (sum,
  // sum of squares), 1 (prod), -inf / +inf (f32 max / min), INT32_MIN /
  // INT32_MAX (i32), 0 / 255 (u8), false / true (bool).
  cs.push_back({"empty_tensors", R"(graph @emptytensors(%x: f32[3,0,4], %k: i32[2,0], %u: u8[2,0], %b: bool[2,0], %e: f32[0,5]) -> (%s, %mx, %mn, %p, %sq, %r, %kmx, %kmn, %umx, %umn, %bmx, %bmn, %ee) {
  %ax = constant i64[1] dense<[1]>
  %s = "ReduceSum"(%x, %ax) {keepdims = 1} : f32[3,1,4] loc("sum")
  %mx = "ReduceMax"(%x, %ax) {keepdims = 0} : f32[3,4] loc("max")
  %mn = "ReduceMin"(%x, %ax) : f32[3,1,4] loc("min")
  %p = "ReduceProd"(%x, %ax) : f32[3,1,4] loc("prod")
  %sq = "ReduceSumSquare"(%x, %ax) : f32[3,1,4] loc("sumsq")
  %r = "Relu"(%x) : f32[3,0,4] loc("relu")
  %kmx = "ReduceMax"(%k, %ax) : i32[2,1] loc("imax")
  %kmn = "ReduceMin"(%k, %ax) {keepdims = 0} : i32[2] loc("imin")
  %umx = "ReduceMax"(%u, %ax) : u8[2,1] loc("umax")
  %umn = "ReduceMin"(%u, %ax) : u8[2,1] loc("umin")
  %bmx = "ReduceMax"(%b, %ax) : bool[2,1] loc("bmax")
  %bmn = "ReduceMin"(%b, %ax) : bool[2,1] loc("bmin")
  %ee = "Add"(%e, %e) : f32[0,5] loc("add")
  return %s, %mx, %mn, %p, %sq, %r, %kmx, %kmn, %umx, %umn, %bmx, %bmn, %ee
})"});
  // Bool and integer Max / Min over non-empty rows (any / all for bool):
  // the accumulators start at false / true and the int extremes. Rows
  // that are all false (%no) / all true (%yes) tell a wrong start apart.
  cs.push_back({"bool_int_minmax", R"(graph @boolintminmax(%x: f32[4,37], %b: bool[4,37], %k: i32[4,37]) -> (%any, %all, %none, %every, %kmx, %kmn) {
  %ax = constant i64[1] dense<[1]>
  %lo = constant f32[] dense<[-5.0]>
  %no = "Less"(%x, %lo) : bool[4,37] loc("no")
  %yes = "Greater"(%x, %lo) : bool[4,37] loc("yes")
  %any = "ReduceMax"(%b, %ax) : bool[4,1] loc("any")
  %all = "ReduceMin"(%b, %ax) {keepdims = 0} : bool[4] loc("all")
  %none = "ReduceMax"(%no, %ax) : bool[4,1] loc("any_false")
  %every = "ReduceMin"(%yes, %ax) : bool[4,1] loc("all_true")
  %kmx = "ReduceMax"(%k, %ax) : i32[4,1] loc("imax")
  %kmn = "ReduceMin"(%k, %ax) : i32[4,1] loc("imin")
  return %any, %all, %none, %every, %kmx, %kmn
})"});
  // Slice and Concat as index arithmetic of their consumers' kernel.
  cs.push_back({"rope_d64", ropeGraph("f32", 2, 4, 24, 64)});
  cs.push_back({"rope_odd_d6", ropeGraph("f32", 2, 3, 5, 6)});
  cs.push_back({"rope_bf16_d128", ropeGraph("bf16", 1, 2, 7, 128)});
  cs.push_back({"concat3_axis1", R"(graph @concat3(%a: f32[2,3,5], %b: f32[2,4,5], %c: f32[2,1,5], %w: f32[5]) -> (%y) {
  %ea = "Exp"(%a) : f32[2,3,5] loc("exp")
  %two = constant f32[] dense<[2.0]>
  %b2 = "Mul"(%b, %two) : f32[2,4,5] loc("double")
  %cat = "Concat"(%ea, %b2, %c) {axis = 1} : f32[2,8,5] loc("cat")
  %y = "Add"(%cat, %w) : f32[2,8,5] loc("bias")
  return %y
})"});
  cs.push_back({"concat_softmax", R"(graph @concatsoftmax(%a: f32[6,19], %b: f32[6,13]) -> (%y) {
  %h = constant f32[] dense<[0.5]>
  %a2 = "Mul"(%a, %h) : f32[6,19] loc("scale")
  %cat = "Concat"(%a2, %b) {axis = -1} : f32[6,32] loc("cat")
  %y = "Softmax"(%cat) {axis = -1} : f32[6,32] loc("softmax")
  return %y
})"});
  cs.push_back({"slice_step2_negstart", R"(graph @slicestep(%x: f32[6,40]) -> (%y, %z) {
  %e = "Exp"(%x) : f32[6,40] loc("exp")
  %st = constant i64[2] dense<[-30, -1]>
  %en = constant i64[2] dense<[1000, -1000]>
  %ax = constant i64[2] dense<[1, 0]>
  %sp = constant i64[2] dense<[2, -2]>
  %s = "Slice"(%e, %st, %en, %ax, %sp) : f32[3,15] loc("slice")
  %y = "Mul"(%s, %s) : f32[3,15] loc("square")
  %a1 = constant i64[1] dense<[1]>
  %z = "ReduceSum"(%e, %a1) {keepdims = 0} : f32[6] loc("sum")
  return %y, %z
})"});
  return cs;
}

}  // namespace fusec::codegen::testing

#endif  // FUSEC_TEST_UNIT_CODEGEN_CODEGENCORPUS_H
