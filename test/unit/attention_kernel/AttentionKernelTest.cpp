//===- AttentionKernelTest.cpp - Tiled attention generator tests -===//
//
// For each case (plain, causal, bias, ALiBi, soft-cap, sliding window,
// padding mask, GQA, head dims 20..256, odd lengths, Sq != Sk, fully masked
// rows; bf16, fp16 and exact fp32): emit the kernel, compile it with nvcc
// (-arch=sm_90a, all cases in parallel, cached by source in
// $FUSEC_ATTN_KERNEL_CACHE when set), and on a GPU run it on random inputs
// with the output poisoned with NaN, comparing against a CPU reference in
// double. Without nvcc or a device the affected tests skip with a message.
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "codegen/cuda/attention/FlashAttentionEmitter.h"
#include "codegen/cuda/attention/TileTable.h"
#include "codegen/cuda/attention/TiledAttention.h"
#include "gtest/gtest.h"

#ifdef FUSEC_HAVE_CUDART
#include <cuda_runtime.h>
#endif

namespace fusec::codegen::attention {
namespace {

using BiasVals = std::vector<float>;
using ModFn = std::function<double(double s, int b, int h, int q, int k, const BiasVals &)>;
using MaskFn = std::function<bool(int b, int h, int q, int k, const BiasVals &)>;

struct HostBias {
  std::vector<int64_t> shape;  // full [B, H, Sq, Sk] extent with 1 where broadcast
  std::vector<float> data;
};

struct Case {
  std::string name;
  FlashAttentionSpec spec;
  ModFn mod;    // null = identity
  MaskFn mask;  // null = keep all (in addition to the structural mask)
  std::function<float(int b, int h, int q, int k)> biasInit;  // bias 0 contents, if any
  const AttentionTile *tile = nullptr;
  bool hopper = false;  // emitted for sm_90a: the warp-specialised TMA + wgmma kernel
};

FlashEmitOptions emitOptions(const Case &c) {
  FlashEmitOptions opt;
  opt.override = c.tile;
  opt.hopper = c.hopper;
  return opt;
}

const AttentionTile kSmallTile{64, 64, 4, 2, false, 2};
// sm_90a with ping-pong and intra-warpgroup overlap (head dims <= 128, and 256).
const AttentionTile kWsOverlap{128, 128, 12, 2, false, 1, true, true, true};
const AttentionTile kWsOverlap3{128, 128, 12, 3, false, 1, true, true, true};
const AttentionTile kWsOverlapD256{128, 64, 12, 2, false, 1, true, true, true};
const AttentionTile kWideTile{128, 128, 8, 2, true, 1};

FlashAttentionSpec base(AttnElemType t, int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d) {
  FlashAttentionSpec s;
  s.dtype = t;
  s.batch = b;
  s.headsQ = s.headsKv = h;
  s.seqQ = sq;
  s.seqK = sk;
  s.headDim = s.headDimV = d;
  s.scale = 1.0 / std::sqrt(static_cast<double>(d));
  return s;
}

std::vector<Case> makeCases() {
  std::vector<Case> cs;
  const auto bf = AttnElemType::kBF16, f32 = AttnElemType::kF32;
  auto add = [&](std::string name, FlashAttentionSpec s) -> Case & {
    cs.push_back(Case{std::move(name), std::move(s), nullptr, nullptr, nullptr, nullptr});
    return cs.back();
  };
  auto causal = [](FlashAttentionSpec s, int64_t off = 0, int64_t window = 0) {
    s.causal = true;
    s.causalOffset = off;
    s.window = window;
    return s;
  };
  auto biasAdd = [](FlashAttentionSpec s, FlashBias bias) {
    s.biases.push_back(bias);
    s.scoreMod = "s + bias0";
    return s;
  };
  const ModFn addBias = [](double s, int, int, int, int, const BiasVals &bv) { return s + bv[0]; };

  // Head dims (plain), odd lengths, batch/heads.
  for (int64_t d : {32, 64, 80, 96, 128, 256}) add(absl::StrCat("bf16_plain_d", d), base(bf, 2, 3, 200, 200, d));
  add("bf16_plain_d20_scalar_loads", base(bf, 1, 2, 50, 70, 20));
  add("bf16_plain_d72_padded", base(bf, 1, 2, 100, 90, 72));
  add("bf16_s1", base(bf, 2, 2, 1, 1, 64));
  add("bf16_s7", base(bf, 2, 2, 7, 7, 64));
  add("bf16_s1024_b1h1", base(bf, 1, 1, 1024, 1024, 128));
  add("bf16_sq_ne_sk", base(bf, 2, 2, 130, 333, 64));
  add("bf16_dv_ne_d", [&] { auto s = base(bf, 1, 2, 150, 150, 64); s.headDimV = 128; return s; }());
  add("f16_plain_d64", base(AttnElemType::kF16, 2, 2, 200, 200, 64));
  add("bf16_small_tile_qsmem", base(bf, 2, 2, 300, 300, 128)).tile = &kSmallTile;
  add("bf16_wide_tile", base(bf, 1, 2, 300, 300, 64)).tile = &kWideTile;
  // Causal variants.
  add("bf16_causal_d128_s1024", causal(base(bf, 1, 2, 1024, 1024, 128)));
  add("bf16_causal_d64_s200", causal(base(bf, 2, 2, 200, 200, 64)));
  add("bf16_causal_bottom_right", causal(base(bf, 2, 2, 130, 333, 64), 333 - 130));
  add("bf16_causal_small_tile", causal(base(bf, 1, 2, 333, 333, 96))).tile = &kSmallTile;
  add("bf16_window256", causal(base(bf, 1, 2, 1024, 1024, 64), 0, 256));
  add("bf16_window256_d128", causal(base(bf, 1, 1, 700, 700, 128), 0, 256));
  // Bias / score mods.
  {
    Case &c = add("bf16_bias_full", biasAdd(base(bf, 2, 2, 200, 200, 64), FlashBias{AttnElemType::kF32, 2 * 200 * 200, 200 * 200, 200, 1, ""}));
    c.mod = addBias;
    c.biasInit = [](int b, int h, int q, int k) { return std::sin(0.1f * (b + 3 * h + q) + 0.07f * k); };
  }
  {
    auto s = causal(base(bf, 2, 4, 300, 300, 128));
    std::vector<float> slope;
    for (int i = 0; i < 4; ++i) slope.push_back(std::exp2(-8.0f * (i + 1) / 4));
    s.tables["slope"] = slope;
    s.scoreMod = "s + tab_slope[h] * (float)(k - q)";
    Case &c = add("bf16_alibi_causal", s);
    c.mod = [slope](double x, int, int h, int q, int k, const BiasVals &) { return x + slope[h] * double(k - q); };
  }
  {
    auto s = base(bf, 2, 2, 257, 257, 64);
    s.scale = 1.0;  // large scores so the cap matters
    s.scoreMod = "30.0f * fastTanh(s * (1.0f / 30.0f))";
    Case &c = add("bf16_softcap30", s);
    c.mod = [](double x, int, int, int, int, const BiasVals &) { return 30.0 * std::tanh(x / 30.0); };
  }
  {
    // Padding: per-key -inf bias [B,1,1,Sk]; batch 2 is fully padded.
    Case &c = add("bf16_padding_mask", biasAdd(base(bf, 3, 2, 200, 200, 64), FlashBias{AttnElemType::kF32, 200, 0, 0, 1, ""}));
    c.mod = addBias;
    c.biasInit = [](int b, int, int, int k) {
      const int len[3] = {200, 77, 0};
      return k < len[b] ? 0.0f : -INFINITY;
    };
  }
  {
    auto s = base(bf, 2, 8, 200, 200, 64);
    s.headsKv = 2;
    add("bf16_gqa", s);
  }
  {
    auto s = base(bf, 1, 2, 200, 200, 64);
    s.maskExpr = "(q + k) % 3 != 0";
    Case &c = add("bf16_mask_expr", s);
    c.mask = [](int, int, int q, int k, const BiasVals &) { return (q + k) % 3 != 0; };
  }
  {
    auto s = base(bf, 1, 2, 100, 100, 64);
    s.maskExpr = "k > 1000";
    Case &c = add("bf16_fully_masked_zero", s);
    c.mask = [](int, int, int, int k, const BiasVals &) { return k > 1000; };
  }
  {
    auto s = causal(base(bf, 1, 2, 200, 100, 64), 100 - 200);  // bottom-right: first 100 rows see nothing
    s.fullyMaskedNaN = true;
    add("bf16_fully_masked_rows_nan", s);
  }
  {
    // masked_rows "mean": rows with no live key are the mean of V over all keys.
    auto s = causal(base(bf, 1, 2, 200, 100, 72), 100 - 200);
    s.fullyMaskedNaN = true;
    s.fullyMaskedMean = true;
    add("bf16_fully_masked_rows_mean", s);
  }
  // Per-key mask operand (keyMask = bias 0, [B, Sk], 1 = keep): Sk not a
  // multiple of the key tile, whole key tiles empty (skipped), a batch with
  // every key masked (its rows: NaN / mean of V), batch 1, with causal.
  auto keyMaskCase = [&](std::string name, FlashAttentionSpec s, std::vector<int> lo, std::vector<int> hi) -> Case & {
    s.biases.push_back(FlashBias{AttnElemType::kF32, s.seqK, 0, 0, 1, ""});
    s.keyMask = 0;
    Case &c = add(std::move(name), s);
    c.biasInit = [lo, hi](int b, int, int, int k) { return k >= lo[b] && k < hi[b] ? 1.0f : 0.0f; };
    return c;
  };
  {
    auto s = base(bf, 3, 2, 200, 333, 64);
    s.fullyMaskedNaN = true;
    keyMaskCase("bf16_key_mask", s, {0, 150, 0}, {333, 333, 0});  // batch 1 left-padded, batch 2 empty
  }
  {
    auto s = causal(base(bf, 2, 2, 300, 300, 64));
    s.fullyMaskedNaN = true;
    s.fullyMaskedMean = true;
    keyMaskCase("bf16_key_mask_causal_mean", s, {0, 200}, {300, 300}).tile = &kSmallTile;
  }
  keyMaskCase("bf16_key_mask_b1", base(bf, 1, 1, 1, 77, 64), {0}, {70});
  // Exact fp32.
  add("f32_plain_d64", base(f32, 2, 2, 200, 200, 64));
  add("f32_plain_d256", base(f32, 1, 2, 100, 100, 256));
  add("f32_plain_d20", base(f32, 1, 2, 33, 45, 20));
  add("f32_s1", base(f32, 1, 1, 1, 1, 32));
  add("f32_causal_sq_ne_sk", causal(base(f32, 2, 2, 77, 300, 128), 300 - 77));
  add("f32_window", causal(base(f32, 1, 2, 600, 600, 32), 0, 256));
  {
    auto s = base(f32, 2, 4, 150, 150, 32);
    s.headsKv = 1;
    s.biases.push_back(FlashBias{AttnElemType::kF32, 0, 150 * 150, 150, 1, ""});
    s.scoreMod = "s + bias0 - 0.5f * (float)(q - k)";
    s.causal = true;
    Case &c = add("f32_gqa_bias_alibi", s);
    c.mod = [](double x, int, int, int q, int k, const BiasVals &bv) { return x + bv[0] - 0.5 * (q - k); };
    c.biasInit = [](int, int h, int q, int k) { return 0.01f * ((h * 7 + q * 3 + k) % 11); };
  }
  {
    auto s = base(f32, 1, 2, 64, 64, 32);
    s.scale = 1.0;
    s.scoreMod = "30.0f * tanhf(s / 30.0f)";
    Case &c = add("f32_softcap30", s);
    c.mod = [](double x, int, int, int, int, const BiasVals &) { return 30.0 * std::tanh(x / 30.0); };
  }
  {
    auto s = base(f32, 1, 1, 40, 40, 32);
    s.maskExpr = "k > 1000";
    Case &c = add("f32_fully_masked_zero", s);
    c.mask = [](int, int, int, int k, const BiasVals &) { return k > 1000; };
  }
  {
    auto s = causal(base(f32, 2, 2, 50, 30, 40), 30 - 50);
    s.fullyMaskedMean = true;
    add("f32_fully_masked_rows_mean", s);
  }
  {
    auto s = causal(base(f32, 2, 2, 100, 100, 32));
    s.fullyMaskedNaN = true;
    keyMaskCase("f32_key_mask_causal", s, {0, 70}, {90, 100});  // key tiles of 32: tiles 0, 1 empty in batch 1
  }
  // Every half-precision case again on the sm_90a kernel (where it takes
  // it: head dims and strides multiples of 8), with the table's tile, plus
  // the shapes that kernel splits differently: long keys, D = 256 with 64-key
  // stages, bottom-right causal with few query tiles, GQA with a window.
  const size_t n = cs.size();
  for (size_t i = 0; i < n; ++i) {
    Case h = cs[i];
    if (h.spec.dtype == AttnElemType::kF32) continue;
    h.tile = nullptr;
    h.hopper = true;
    if (!hopperDecline(h.spec, emitOptions(h)).empty()) continue;
    h.name = "sm90a_" + h.name;
    cs.push_back(std::move(h));
  }
  // And with ping-pong + intra-warpgroup overlap (skipped causal tiles,
  // pending P V flushes, stage reuse), 3 stages for the long ones.
  const size_t nh = cs.size();
  for (size_t i = n; i < nh; ++i) {
    Case c = cs[i];
    const int64_t d = std::max(c.spec.headDim, c.spec.headDimV);
    c.tile = d > 128 ? &kWsOverlapD256 : c.spec.seqK >= 1000 ? &kWsOverlap3 : &kWsOverlap;
    if (!hopperDecline(c.spec, emitOptions(c)).empty()) continue;
    c.name = "sm90a_ppov_" + c.name.substr(6);
    cs.push_back(std::move(c));
  }
  auto hop = [&](std::string name, FlashAttentionSpec s) -> Case & {
    Case &c = add("sm90a_" + name, std::move(s));
    c.hopper = true;
    return c;
  };
  hop("bf16_long_keys_b1h1", base(bf, 1, 1, 130, 4100, 128));
  hop("bf16_causal_d256", causal(base(bf, 1, 2, 333, 333, 256)));
  hop("f16_causal_bottom_right_d128", causal(base(AttnElemType::kF16, 2, 2, 77, 1000, 128), 1000 - 77));
  {
    auto s = causal(base(bf, 2, 8, 600, 600, 64), 0, 100);
    s.headsKv = 1;
    hop("bf16_mqa_window100", s);
  }
  return cs;
}

const std::vector<Case> &cases() {
  static const std::vector<Case> cs = makeCases();
  return cs;
}

std::string symbolOf(size_t i) { return absl::StrCat("fa_test_", i); }

// ---------------------------------------------------------------- nvcc
std::string findNvcc() {
  if (const char *env = std::getenv("FUSEC_NVCC")) return env;
  for (const char *p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"}) {
    std::ifstream f(p);
    if (f.good()) return p;
  }
  return "";
}

struct Built {
  std::string so;     // path of the shared object, "" on failure
  std::string error;  // nvcc output on failure
};

/// The case indices this process will run (by the gtest filter): ctest runs
/// every case in a process of its own, and compiling all of them in each
/// (what this did before) cost ~40 minutes of nvcc on a 2-core CI machine.
std::vector<size_t> selectedCases() {
  std::vector<size_t> out;
  const ::testing::UnitTest &ut = *::testing::UnitTest::GetInstance();
  for (int s = 0; s < ut.total_test_suite_count(); ++s) {
    const ::testing::TestSuite &suite = *ut.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo &info = *suite.GetTestInfo(t);
      size_t i = 0;
      if (info.should_run() && info.value_param() && absl::SimpleAtoi(info.value_param(), &i) &&
          i < cases().size())
        out.push_back(i);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Compiles every selected case once, in parallel; results by case index
// (cases not selected stay unbuilt, with an error saying so).
const std::vector<Built> &builtKernels() {
  static std::vector<Built> built;
  static std::once_flag once;
  std::call_once(once, [] {
    const auto &cs = cases();
    built.resize(cs.size());
    for (auto &b : built) b.error = "case not selected by the gtest filter: not compiled";
    const std::vector<size_t> todo = selectedCases();
    std::string dir;
    if (const char *c = std::getenv("FUSEC_ATTN_KERNEL_CACHE")) {
      dir = c;
      mkdir(dir.c_str(), 0755);
    } else {
      char tmpl[] = "/tmp/fusec_attn_XXXXXX";
      dir = mkdtemp(tmpl) ? tmpl : "/tmp";
    }
    const std::string nvcc = findNvcc();
    std::mutex mu;
    size_t next = 0;
    auto worker = [&] {
      for (;;) {
        size_t i;
        {
          std::lock_guard<std::mutex> l(mu);
          if (next >= todo.size()) return;
          i = todo[next++];
        }
        built[i].error.clear();
        auto src = emitFlashAttention(cs[i].spec, symbolOf(i), emitOptions(cs[i]));
        if (!src.ok()) {
          built[i].error = std::string(src.status().message());
          continue;
        }
        const std::string key = absl::StrCat(std::hash<std::string>()(*src));
        const std::string so = absl::StrCat(dir, "/lib", key, ".so");
        if (std::ifstream(so).good()) {
          built[i].so = so;
          continue;
        }
        if (nvcc.empty()) {
          built[i].error = "nvcc not found";
          continue;
        }
        const std::string cu = absl::StrCat(dir, "/k", key, ".cu"), log = absl::StrCat(dir, "/k", key, ".log");
        std::ofstream(cu) << *src;
        const std::string tmp = absl::StrCat(so, ".tmp", getpid(), ".so");
        // sm_90a cases must run the sm_90a kernel: no fallback to sm_80.
        const std::string cmd = absl::StrCat(nvcc, " -std=c++17 -O3 -arch=sm_90a",
                                             cs[i].hopper ? " -DFUSEC_ATTN_REQUIRE_TMA" : "",
                                             " -shared -Xcompiler -fPIC -Xptxas -v -o ",
                                             tmp, " ", cu, " > ", log, " 2>&1 && mv ", tmp, " ", so);
        if (std::system(cmd.c_str()) != 0) {
          std::ifstream f(log);
          built[i].error = std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
          continue;
        }
        built[i].so = so;
      }
    };
    std::vector<std::thread> ts;
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < n; ++t) ts.emplace_back(worker);
    for (auto &t : ts) t.join();
  });
  return built;
}

// ---------------------------------------------------------------- host data
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t toF16(float f) {  // round to nearest even; inputs are small normals or zero
  if (f == 0.0f) return 0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if (exp <= 0) return static_cast<uint16_t>(sign);  // flush tiny values (not generated)
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(h);
}
float fromF16(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  uint32_t u = exp == 0 ? sign : sign | (static_cast<uint32_t>(exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Tensor {
  std::vector<float> values;  // what the kernel sees, as float
  std::vector<uint8_t> bytes;  // device representation
};

Tensor makeTensor(AttnElemType t, size_t n, std::mt19937 &rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor x;
  x.values.resize(n);
  const size_t es = t == AttnElemType::kF32 ? 4 : 2;
  x.bytes.resize(n * es);
  for (size_t i = 0; i < n; ++i) {
    float v = dist(rng);
    if (t == AttnElemType::kBF16) {
      uint16_t h = toBf16(v);
      v = fromBf16(h);
      std::memcpy(&x.bytes[2 * i], &h, 2);
    } else if (t == AttnElemType::kF16) {
      uint16_t h = toF16(v);
      v = fromF16(h);
      std::memcpy(&x.bytes[2 * i], &h, 2);
    } else {
      std::memcpy(&x.bytes[4 * i], &v, 4);
    }
    x.values[i] = v;
  }
  return x;
}

// CPU reference in double (dense [B,H,S,D] layouts). Fully masked rows: the
// mean of V when spec.fullyMaskedMean, else NaN when spec.fullyMaskedNaN, else 0.
std::vector<double> reference(const Case &c, const Tensor &q, const Tensor &k, const Tensor &v,
                              const std::vector<float> &bias) {
  const auto &s = c.spec;
  const int64_t B = s.batch, H = s.headsQ, Hk = s.headsKv, Sq = s.seqQ, Sk = s.seqK, D = s.headDim, Dv = s.headDimV;
  std::vector<double> out(B * H * Sq * Dv);
  std::vector<double> x(Sk);
  BiasVals bv(1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kh = h / (H / Hk);
      for (int64_t i = 0; i < Sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < Sk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(q.values[((b * H + h) * Sq + i) * D + d]) * k.values[((b * Hk + kh) * Sk + j) * D + d];
          double sc = dot * s.scale;
          if (!s.biases.empty()) {
            const FlashBias &fb = s.biases[0];
            bv[0] = bias[b * fb.strideB + h * fb.strideH + i * fb.strideQ + j * fb.strideK];
          }
          if (c.mod) sc = c.mod(sc, b, h, i, j, bv);
          bool keep = true;
          if (s.causal) keep = j <= i + s.causalOffset;
          if (s.causal && s.window > 0) keep = keep && i + s.causalOffset - j < s.window;
          if (c.mask) keep = keep && c.mask(b, h, i, j, bv);
          if (s.keyMask == 0) keep = keep && bv[0] != 0;  // the per-key mask operand
          x[j] = keep ? sc : -INFINITY;
          mx = std::max(mx, x[j]);
        }
        double* o = &out[((b * H + h) * Sq + i) * Dv];
        if (mx == -INFINITY) {
          for (int64_t e = 0; e < Dv; ++e) {
            o[e] = s.fullyMaskedNaN ? NAN : 0.0;
            if (s.fullyMaskedMean) {
              o[e] = 0;
              for (int64_t j = 0; j < Sk; ++j) o[e] += v.values[((b * Hk + kh) * Sk + j) * Dv + e];
              o[e] /= double(Sk);
            }
          }
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < Sk; ++j) sum += (x[j] = std::exp(x[j] - mx));
        for (int64_t e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < Sk; ++j) acc += x[j] * v.values[((b * Hk + kh) * Sk + j) * Dv + e];
          o[e] = acc / sum;
        }
      }
    }
  return out;
}

class AttentionKernelTest : public ::testing::TestWithParam<size_t> {};

TEST_P(AttentionKernelTest, Emits) {
  const Case &c = cases()[GetParam()];
  auto src = emitFlashAttention(c.spec, symbolOf(GetParam()), emitOptions(c));
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_NE(src->find(absl::StrCat("extern \"C\" int ", symbolOf(GetParam()), "(void *const *buffers")),
            std::string::npos);
  if (c.spec.dtype == AttnElemType::kF32) {
    EXPECT_EQ(src->find("kTensor"), std::string::npos);
    EXPECT_NE(src->find("fp32 exact SIMT"), std::string::npos);
  } else {
    EXPECT_NE(src->find("mma.sync.aligned.m16n8k16"), std::string::npos);
    EXPECT_NE(src->find("cp.async"), std::string::npos);
  }
  if (c.hopper) {
    EXPECT_NE(src->find("wgmma.mma_async.sync.aligned.m64n"), std::string::npos);
    EXPECT_NE(src->find("cp.async.bulk.tensor.4d"), std::string::npos);
    EXPECT_NE(src->find("setmaxnreg.inc"), std::string::npos);
    EXPECT_NE(src->find(absl::StrCat(symbolOf(GetParam()), "_sm80(buffers")), std::string::npos);  // the fallback
  }
}

TEST_P(AttentionKernelTest, CompilesWithNvcc) {
  if (findNvcc().empty() && !std::getenv("FUSEC_ATTN_KERNEL_CACHE"))
    GTEST_SKIP() << "nvcc not found: generated attention kernel not compiled";
  const Built &b = builtKernels()[GetParam()];
  ASSERT_FALSE(b.so.empty()) << b.error;
}

#ifdef FUSEC_HAVE_CUDART
bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#else
bool haveDevice() { return false; }
#endif

TEST_P(AttentionKernelTest, MatchesCpuReferenceOnGpu) {
  const Case &c = cases()[GetParam()];
  if (!haveDevice()) GTEST_SKIP() << "no CUDA device: attention kernel '" << c.name << "' not executed";
#ifdef FUSEC_HAVE_CUDART
  const Built &built = builtKernels()[GetParam()];
  ASSERT_FALSE(built.so.empty()) << built.error;
  void *lib = dlopen(built.so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using Launcher = int (*)(void *const *, cudaStream_t);
  auto fn = reinterpret_cast<Launcher>(dlsym(lib, symbolOf(GetParam()).c_str()));
  ASSERT_NE(fn, nullptr);

  const auto &s = c.spec;
  std::mt19937 rng(42 + GetParam());
  const float amp = s.dtype == AttnElemType::kF32 ? 1.0f : 1.0f;
  Tensor q = makeTensor(s.dtype, s.batch * s.headsQ * s.seqQ * s.headDim, rng, -amp, amp);
  Tensor k = makeTensor(s.dtype, s.batch * s.headsKv * s.seqK * s.headDim, rng, -amp, amp);
  Tensor v = makeTensor(s.dtype, s.batch * s.headsKv * s.seqK * s.headDimV, rng, -1.0f, 1.0f);
  std::vector<float> bias;
  if (!s.biases.empty()) {
    const FlashBias &fb = s.biases[0];
    int64_t n = 1;  // extent covered by the strides
    n += (s.batch - 1) * fb.strideB + (s.headsQ - 1) * fb.strideH + (s.seqQ - 1) * fb.strideQ + (s.seqK - 1) * fb.strideK;
    bias.assign(n, 0.0f);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.headsQ; ++h)
        for (int64_t i = 0; i < s.seqQ; ++i)
          for (int64_t j = 0; j < s.seqK; ++j)
            bias[b * fb.strideB + h * fb.strideH + i * fb.strideQ + j * fb.strideK] = c.biasInit(b, h, i, j);
  }
  const std::vector<double> want = reference(c, q, k, v, bias);

  const size_t es = s.dtype == AttnElemType::kF32 ? 4 : 2;
  const size_t outBytes = want.size() * es;
  std::vector<void *> bufs;
  auto upload = [&](const void *data, size_t bytes) {
    void *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 16)), cudaSuccess);
    if (data) cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice);
    bufs.push_back(p);
  };
  upload(q.bytes.data(), q.bytes.size());
  upload(k.bytes.data(), k.bytes.size());
  upload(v.bytes.data(), v.bytes.size());
  if (!bias.empty()) upload(bias.data(), bias.size() * 4);
  upload(nullptr, outBytes);
  cudaMemset(bufs.back(), 0xff, outBytes);  // NaN poison
  ASSERT_EQ(fn(bufs.data(), nullptr), 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint8_t> got(outBytes);
  cudaMemcpy(got.data(), bufs.back(), outBytes, cudaMemcpyDeviceToHost);
  for (void *p : bufs) cudaFree(p);

  const double atol = s.dtype == AttnElemType::kF32 ? 1e-5 : 2e-2;
  const double rtol = s.dtype == AttnElemType::kF32 ? 1e-5 : 2e-2;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    float g;
    if (es == 4) {
      std::memcpy(&g, &got[4 * i], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &got[2 * i], 2);
      g = s.dtype == AttnElemType::kBF16 ? fromBf16(h) : fromF16(h);
    }
    const bool ok = std::isnan(want[i]) ? std::isnan(g) : std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]);
    if (!std::isnan(want[i]) && !std::isnan(g)) worst = std::max(worst, std::fabs(g - want[i]));
    if (!ok && bad++ < 5) ADD_FAILURE() << c.name << ": element " << i << " got " << g << " want " << want[i];
  }
  EXPECT_EQ(bad, 0) << c.name << ": " << bad << " of " << want.size() << " elements off (max abs err " << worst << ")";
  std::printf("[ attn ] %-28s max abs err %.3g\n", c.name.c_str(), worst);
#endif
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionKernelTest, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t> &i) { return cases()[i.param].name; });

TEST(AttentionKernelErrors, RejectsBadSpecs) {
  FlashAttentionSpec s = base(AttnElemType::kBF16, 1, 3, 10, 10, 64);
  s.headsKv = 2;
  EXPECT_EQ(emitFlashAttention(s, "x").status().code(), absl::StatusCode::kInvalidArgument);
  s = base(AttnElemType::kBF16, 1, 1, 10, 10, 512);
  EXPECT_EQ(emitFlashAttention(s, "x").status().code(), absl::StatusCode::kUnimplemented);
  s = base(AttnElemType::kF32, 1, 1, 10, 10, 64);
  s.allowTf32 = true;
  EXPECT_EQ(emitFlashAttention(s, "x").status().code(), absl::StatusCode::kUnimplemented);
  s = base(AttnElemType::kBF16, 1, 1, 10, 10, 64);
  EXPECT_EQ(emitFlashAttention(s, "9bad").status().code(), absl::StatusCode::kInvalidArgument);
  s.window = 16;  // window without causal
  EXPECT_EQ(emitFlashAttention(s, "x").status().code(), absl::StatusCode::kInvalidArgument);
  AttentionTile bad{96, 64, 8, 2, true, 1};  // blockM != 16 * warps
  FlashEmitOptions opt;
  opt.override = &bad;
  s.window = 0;
  EXPECT_EQ(emitFlashAttention(s, "x", opt).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AttentionKernelErrors, HopperPathChoice) {
  FlashEmitOptions hopper;
  hopper.hopper = true;
  FlashAttentionSpec s = base(AttnElemType::kBF16, 1, 2, 100, 100, 128);
  EXPECT_EQ(hopperDecline(s, hopper), "");
  EXPECT_NE(describeFlashKernel(s, hopper).find("sm_90a warp-specialised"), std::string::npos);
  EXPECT_NE(hopperDecline(s, FlashEmitOptions{}).find("not sm_90a"), std::string::npos);
  EXPECT_NE(describeFlashKernel(s, FlashEmitOptions{}).find("sm_80 mma.sync"), std::string::npos);
  s.headDim = s.headDimV = 20;
  EXPECT_NE(hopperDecline(s, hopper).find("multiples of 8"), std::string::npos);
  s = base(AttnElemType::kF32, 1, 2, 100, 100, 64);
  EXPECT_NE(hopperDecline(s, hopper).find("fp32"), std::string::npos);
  s = base(AttnElemType::kBF16, 1, 2, 100, 100, 64);
  s.q = FlashLayout{2 * 100 * 68, 100 * 68, 68};  // rows of 68 elements: not 16-byte aligned
  EXPECT_NE(hopperDecline(s, hopper).find("stride"), std::string::npos);
  EXPECT_FALSE(emitFlashAttention(s, "x", hopper)->find("wgmma") != std::string::npos);
  // A warp-specialised tile where the kernel declines: an error, not a silent switch.
  const AttentionTile ws = lookupHopperTile(AttnElemType::kBF16, 64);
  FlashEmitOptions forced;
  forced.override = &ws;
  EXPECT_EQ(emitFlashAttention(s, "x", forced).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AttentionTileTable, HopperRows) {
  for (int64_t d : {64, 80, 96, 128, 256}) {
    const AttentionTile t = lookupHopperTile(AttnElemType::kBF16, d);
    EXPECT_TRUE(t.warpSpecialized);
    EXPECT_EQ(t.warps, 4 * (t.blockM / 64 + 1)) << d;
    EXPECT_LE(flashSharedBytes(base(AttnElemType::kBF16, 1, 1, 8, 8, d), t), 227 * 1024) << d;
  }
}

TEST(AttentionTileTable, Sm90Rows) {
  for (int64_t d : {32, 64, 80, 96, 128, 256}) {
    const AttentionTile t = lookupAttentionTile(90, AttnElemType::kBF16, d);
    EXPECT_EQ(t.blockM, t.warps * 16) << d;
    EXPECT_EQ(t.blockN % 16, 0) << d;
  }
  EXPECT_EQ(lookupAttentionTile(90, AttnElemType::kBF16, 256).qInRegisters, false);
}

}  // namespace
}  // namespace fusec::codegen::attention

namespace fusec::codegen::attention {
namespace {

// Builders for ScoreExpr ASTs (post-order node lists).
struct ExprBuilder {
  ir::ScoreExpr e;
  int add(ir::ScoreOp op, ir::ScoreType t, int a = -1, int b = -1, double value = 0) {
    ir::ScoreNode n;
    n.op = op;
    n.type = t;
    n.a = a;
    n.b = b;
    n.value = value;
    e.nodes.push_back(n);
    e.root = static_cast<int>(e.nodes.size()) - 1;
    return e.root;
  }
  int q() { return add(ir::ScoreOp::kQ, ir::ScoreType::kInt); }
  int k() { return add(ir::ScoreOp::kK, ir::ScoreType::kInt); }
  int c(double v) { return add(ir::ScoreOp::kConst, ir::ScoreType::kInt, -1, -1, v); }
  int bin(ir::ScoreOp op, int a, int b) {
    const bool cmp = op == ir::ScoreOp::kLt || op == ir::ScoreOp::kLe || op == ir::ScoreOp::kGt ||
                     op == ir::ScoreOp::kGe || op == ir::ScoreOp::kEq || op == ir::ScoreOp::kAnd;
    return add(op, cmp ? ir::ScoreType::kBool : ir::ScoreType::kInt, a, b);
  }
};

TEST(AttentionMaskAnalysis, CausalAndWindow) {
  {
    ExprBuilder x;  // k <= q
    int kk = x.k(), qq = x.q();
    x.bin(ir::ScoreOp::kLe, kk, qq);
    MaskStructure m = analyzeMask(x.e);
    EXPECT_TRUE(m.causal);
    EXPECT_EQ(m.offset, 0);
    EXPECT_EQ(m.window, 0);
    EXPECT_TRUE(m.residual.empty());
  }
  {
    ExprBuilder x;  // (q >= k) && (q - k < 256)
    int q1 = x.q(), k1 = x.k();
    int ge = x.bin(ir::ScoreOp::kGe, q1, k1);
    int q2 = x.q(), k2 = x.k();
    int d = x.bin(ir::ScoreOp::kSub, q2, k2);
    int w = x.c(256);
    int lt = x.bin(ir::ScoreOp::kLt, d, w);
    x.bin(ir::ScoreOp::kAnd, ge, lt);
    MaskStructure m = analyzeMask(x.e);
    EXPECT_TRUE(m.causal);
    EXPECT_EQ(m.offset, 0);
    EXPECT_EQ(m.window, 256);
    EXPECT_TRUE(m.residual.empty());
  }
  {
    ExprBuilder x;  // k < q + 5  ->  k <= q + 4; plus a residual (k == 3)
    int kk = x.k(), qq = x.q(), five = x.c(5);
    int sum = x.bin(ir::ScoreOp::kAdd, qq, five);
    int lt = x.bin(ir::ScoreOp::kLt, kk, sum);
    int k2 = x.k(), three = x.c(3);
    int eq = x.bin(ir::ScoreOp::kEq, k2, three);
    x.bin(ir::ScoreOp::kAnd, lt, eq);
    MaskStructure m = analyzeMask(x.e);
    EXPECT_TRUE(m.causal);
    EXPECT_EQ(m.offset, 4);
    ASSERT_EQ(m.residual.size(), 1u);
    EXPECT_EQ(m.residual[0], eq);
  }
  {
    ExprBuilder x;  // q - k < 8 alone: no causal bound, stays element-wise
    int qq = x.q(), kk = x.k();
    int d = x.bin(ir::ScoreOp::kSub, qq, kk);
    int eight = x.c(8);
    x.bin(ir::ScoreOp::kLt, d, eight);
    MaskStructure m = analyzeMask(x.e);
    EXPECT_FALSE(m.causal);
    EXPECT_EQ(m.residual.size(), 1u);
  }
}

}  // namespace
}  // namespace fusec::codegen::attention
