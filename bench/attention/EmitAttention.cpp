//===- EmitAttention.cpp - Writes the benchmark's attention kernels -===//
//
// fusec-emit-attention OUT_DIR: emits one .cu per benchmark variant (and
// per tile candidate for the tuning sweep) plus OUT_DIR/manifest.tsv with
//   name  symbol  file  B  H  S  D  variant  tile
// bench_attention.py compiles and times them against PyTorch.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/attention/FlashAttentionEmitter.h"

using namespace fusec::codegen::attention;

namespace {

struct Variant {
  std::string name, variant;
  int64_t b, h, s, d;
  std::vector<AttentionTile> tiles;  // empty = the TileTable's choice
};

FlashAttentionSpec makeSpec(const Variant &v) {
  FlashAttentionSpec s;
  s.batch = v.b;
  s.headsQ = s.headsKv = v.h;
  s.seqQ = s.seqK = v.s;
  s.headDim = s.headDimV = v.d;
  s.dtype = AttnElemType::kBF16;
  s.scale = 1.0 / std::sqrt(static_cast<double>(v.d));
  if (v.variant == "causal") {
    s.causal = true;
  } else if (v.variant == "alibi_causal") {
    s.causal = true;
    std::vector<float> slope;
    for (int64_t i = 0; i < v.h; ++i) slope.push_back(std::exp2(-8.0 * (i + 1) / v.h));
    s.tables["slope"] = slope;
    s.scoreMod = "s + tab_slope[h] * (float)(k - q)";
  } else if (v.variant == "softcap") {
    s.scoreMod = "30.0f * fastTanh(s * (1.0f / 30.0f))";
  } else if (v.variant == "window") {
    s.causal = true;
    s.window = 256;
  }
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fusec-emit-attention OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  // Tile candidates timed beside the TileTable's choice (first entry = table).
  const AttentionTile t128 = lookupAttentionTile(90, AttnElemType::kBF16, 128);
  const std::vector<AttentionTile> sweep = {t128, {128, 64, 8, 2, true, 1}};
  const std::vector<Variant> variants = {
      {"plain", "plain", 4, 16, 4096, 128, sweep},
      {"causal", "causal", 4, 16, 4096, 128, sweep},
      {"alibi_causal", "alibi_causal", 4, 16, 4096, 128, sweep},
      {"softcap", "softcap", 4, 16, 4096, 128, sweep},
      {"window", "window", 4, 16, 4096, 128, sweep},
      {"plain_d64", "plain", 4, 16, 4096, 64, {}},
      {"plain_s1024", "plain", 4, 16, 1024, 128, sweep},
  };
  std::ofstream manifest(out + "/manifest.tsv");
  int n = 0;
  for (const Variant &v : variants) {
    // The sm_90a warp-specialised kernel first (the table's, then with
    // ping-pong / intra-warpgroup overlap / 3 stages), then the sm_80 tiles.
    const AttentionTile ws = lookupHopperTile(AttnElemType::kBF16, v.d);
    std::vector<AttentionTile> tiles = {ws};
    for (int variant = 0; variant < 4; ++variant) {
      AttentionTile t = ws;
      t.pingPong = variant == 0 || variant >= 2;
      t.intraOverlap = variant >= 1;
      if (variant == 3) t.stages = 3;
      if (t.pingPong == ws.pingPong && t.intraOverlap == ws.intraOverlap && t.stages == ws.stages) continue;
      if (flashSharedBytes(makeSpec(v), t) <= 227 * 1024) tiles.push_back(t);
    }
    if (v.tiles.empty()) tiles.push_back(lookupAttentionTile(90, AttnElemType::kBF16, v.d));
    tiles.insert(tiles.end(), v.tiles.begin(), v.tiles.end());
    for (size_t t = 0; t < tiles.size(); ++t) {
      const std::string sym = absl::StrCat("fa_bench_", n++);
      FlashEmitOptions opt;
      opt.override = &tiles[t];
      opt.hopper = tiles[t].warpSpecialized;
      auto src = emitFlashAttention(makeSpec(v), sym, opt);
      if (!src.ok()) {
        std::fprintf(stderr, "%s: %s\n", v.name.c_str(), std::string(src.status().message()).c_str());
        return 1;
      }
      const std::string file = sym + ".cu";
      std::ofstream(out + "/" + file) << *src;
      std::string tileName = describeTile(tiles[t]);
      for (char &c : tileName) if (c == ' ') c = '_';
      manifest << v.name << '\t' << sym << '\t' << file << '\t' << v.b << '\t' << v.h << '\t' << v.s << '\t' << v.d
               << '\t' << v.variant << '\t' << tileName << '\n';
    }
  }
  std::printf("wrote %d kernels to %s\n", n, out.c_str());
  return 0;
}
