//===- TiledAttention.cpp - AttentionSpec -> tiled tensor-core kernel -===//
#include "codegen/cuda/attention/TiledAttention.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cuda/SymText.h"
#include "support/Status.h"

namespace fusec::codegen::attention {
namespace {

using ir::ScoreExpr;

std::optional<std::string> cTypeOf(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return "float";
    case ir::DType::kF64: return "double";
    case ir::DType::kF16: return "__half";
    case ir::DType::kBF16: return "__nv_bfloat16";
    case ir::DType::kBool: return "bool";
    case ir::DType::kI8: return "signed char";
    case ir::DType::kU8: return "unsigned char";
    case ir::DType::kI16: return "short";
    case ir::DType::kU16: return "unsigned short";
    case ir::DType::kI32: return "int";
    case ir::DType::kU32: return "unsigned int";
    case ir::DType::kI64: return "long long";
    case ir::DType::kU64: return "unsigned long long";
    default: return std::nullopt;
  }
}

}  // namespace

MaskStructure analyzeMask(const ScoreExpr &mask) {
  MaskStructure m;
  if (mask.empty()) return m;
  std::vector<int> windows;
  std::vector<int64_t> windowBounds;
  for (int id : ir::scoreConjuncts(mask, mask.root)) {
    const std::optional<ir::DiagonalBound> d = ir::diagonalBound(mask, id);
    if (!d) {
      m.residual.push_back(id);
    } else if (d->kind == ir::DiagonalBound::kUpper) {
      m.offset = m.causal ? std::min(m.offset, d->bound) : d->bound;
      m.causal = true;
    } else {
      windows.push_back(id);
      windowBounds.push_back(d->bound);
    }
  }
  // Windows are q - k < w; in the generator's terms q + offset - k < w + offset.
  for (size_t i = 0; i < windows.size(); ++i) {
    const int64_t w = windowBounds[i] + m.offset;
    if (!m.causal || w <= 0) {
      m.residual.push_back(windows[i]);
      continue;
    }
    if (m.window == 0 || w < m.window) {
      if (m.window != 0) {
        // The looser window stays exact by keeping it element-wise (harmless).
      }
      m.window = w;
    }
  }
  return m;
}

absl::StatusOr<FlashAttentionSpec> toFlashSpec(const AttentionSpec &spec, const ScorePrinter &print) {
  FlashAttentionSpec f;
  if (spec.qType != spec.kType || spec.qType != spec.vType || spec.qType != spec.oType)
    return absl::UnimplementedError("tiled attention: Q, K, V and O must share one dtype");
  switch (spec.qType) {
    case ir::DType::kBF16: f.dtype = AttnElemType::kBF16; break;
    case ir::DType::kF16: f.dtype = AttnElemType::kF16; break;
    case ir::DType::kF32: f.dtype = AttnElemType::kF32; break;
    default: return absl::UnimplementedError("tiled attention: dtype not bf16/f16/f32");
  }
  for (const auto *st : {&spec.qStrides, &spec.kStrides, &spec.vStrides, &spec.oStrides})
    if ((*st)[3] != 1) return absl::UnimplementedError("tiled attention: innermost stride must be 1");
  if (spec.headDim > 256 || spec.headDimV > 256) return absl::UnimplementedError("tiled attention: head dim > 256");
  f.batch = spec.batch;
  f.headsQ = spec.numHeads;
  f.headsKv = spec.kvHeads;
  f.seqQ = spec.seqQ;
  f.seqK = spec.seqK;
  f.headDim = spec.headDim;
  f.headDimV = spec.headDimV;
  f.scale = spec.scale;
  f.q = FlashLayout{spec.qStrides[0], spec.qStrides[1], spec.qStrides[2]};
  f.k = FlashLayout{spec.kStrides[0], spec.kStrides[1], spec.kStrides[2]};
  f.v = FlashLayout{spec.vStrides[0], spec.vStrides[1], spec.vStrides[2]};
  f.o = FlashLayout{spec.oStrides[0], spec.oStrides[1], spec.oStrides[2]};
  f.fullyMaskedNaN = true;
  f.fullyMaskedMean = spec.maskedRowsMean;
  f.tables = spec.tables;
  for (const AttentionBias &b : spec.biases) {
    auto ct = cTypeOf(b.dtype);
    if (!ct) return absl::UnimplementedError("tiled attention: bias dtype without a C type");
    FlashBias fb;
    fb.cType = *ct;
    fb.strideB = b.strides[0];
    fb.strideH = b.strides[1];
    fb.strideQ = b.strides[2];
    fb.strideK = b.strides[3];
    f.biases.push_back(fb);
  }
  f.keyMask = spec.keyMask;
  if (!spec.scoreMod.empty()) f.scoreMod = print(spec.scoreMod, false);
  const MaskStructure ms = analyzeMask(spec.mask);
  f.causal = ms.causal;
  f.causalOffset = ms.offset;
  f.window = ms.window;
  std::vector<std::string> rest;
  for (int id : ms.residual) {
    ScoreExpr sub = spec.mask;
    sub.root = id;
    rest.push_back(absl::StrCat("(", print(sub, true), ")"));
  }
  f.maskExpr = absl::StrJoin(rest, " && ");
  return f;
}

absl::StatusOr<FlashAttentionSpec> toFlashSpec(const AttentionSpec &spec, const ScorePrinter &print,
                                               const std::vector<std::string> &symbolNames) {
  FUSEC_ASSIGN_OR_RETURN(FlashAttentionSpec f, toFlashSpec(spec, print));
  static const std::map<std::string, std::string> direct = {
      {"batch", "batch"},           {"seqQ", "seqQ"},             {"seqK", "seqK"},
      {"qStrides[0]", "q.strideB"}, {"qStrides[1]", "q.strideH"}, {"qStrides[2]", "q.strideS"},
      {"kStrides[0]", "k.strideB"}, {"kStrides[1]", "k.strideH"}, {"kStrides[2]", "k.strideS"},
      {"vStrides[0]", "v.strideB"}, {"vStrides[1]", "v.strideH"}, {"vStrides[2]", "v.strideS"},
      {"oStrides[0]", "o.strideB"}, {"oStrides[1]", "o.strideH"}, {"oStrides[2]", "o.strideS"}};
  static const char *const kBiasStride[4] = {"strideB", "strideH", "strideQ", "strideK"};
  SymText sym;
  sym.names = symbolNames;
  for (const auto &[field, e] : spec.symbolic) {
    std::string target;
    int bias = -1, dim = -1, pos = 0;
    if (auto it = direct.find(field); it != direct.end()) {
      target = it->second;
    } else if (std::sscanf(field.c_str(), "biases[%d].strides[%d]%n", &bias, &dim, &pos) == 2 &&
               pos == static_cast<int>(field.size()) && dim >= 0 && dim < 4) {
      target = absl::StrCat("biases[", bias, "].", kBiasStride[dim]);
    } else if (std::sscanf(field.c_str(), "biases[%d].shape[%d]%n", &bias, &dim, &pos) == 2 &&
               pos == static_cast<int>(field.size())) {
      continue;  // the kernel reads biases through their strides only
    } else {
      return absl::UnimplementedError(absl::StrCat("tiled attention: ", field, " = ", e.str(),
                                                   " is bound at run time (only batch, sequence lengths and "
                                                   "strides may be)"));
    }
    if (!sym.knows(e))
      return absl::InternalError(absl::StrCat("tiled attention: ", e.str(), " names an unknown symbol"));
    const std::string expr = sym.of(e, "symbols");
    f.dynamic[target] = FlashAttentionSpec::DynamicField{expr, e.offset() == 0 ? e.coeff() : 1};
  }
  return f;
}

absl::StatusOr<std::string> emitTiledAttention(const AttentionSpec &spec, const std::string &symbol,
                                               const ScorePrinter &print, const TiledAttentionOptions &options) {
  auto f = options.symbolNames.empty() ? toFlashSpec(spec, print) : toFlashSpec(spec, print, options.symbolNames);
  if (!f.ok()) return f.status();
  FlashEmitOptions opt;
  opt.smVersion = options.smVersion;
  opt.includePrelude = options.prelude.empty();
  opt.symbolsParam = !options.symbolNames.empty();
  opt.hopper = options.hopper;
  auto text = emitFlashAttention(*f, symbol, opt);
  if (!text.ok()) return text.status();
  return absl::StrCat(options.prelude, *text);
}

}  // namespace fusec::codegen::attention
