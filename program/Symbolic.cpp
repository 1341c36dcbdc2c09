//===- Symbolic.cpp - Dynamic shapes by generic instantiation and fitting --===//
#include "program/Symbolic.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/OpTable.h"
#include "support/Status.h"

namespace fusec::program {

namespace {

/// Primes tried as probe extents, preferred first: large enough to be
/// unlike the small dims models use (1, 2, 3, 4, 7, 17, 32, ...), small
/// enough that folding and lowering at the probes stay cheap.
constexpr int64_t kPreferredPrimes[] = {37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107,
                                        109, 113, 29, 31, 23, 19, 13, 11};

bool isPrime(int64_t v) {
  if (v < 2) return false;
  for (int64_t d = 2; d * d <= v; ++d)
    if (v % d == 0) return false;
  return true;
}

using i128 = __int128;

/// base^k, or 0 on overflow of 2^100.
i128 power(int64_t base, int k) {
  i128 r = 1;
  for (int i = 0; i < k; ++i) {
    r *= base;
    if (r > (i128(1) << 100) || r < -(i128(1) << 100)) return 0;
  }
  return r;
}

std::string idx(const std::string &field, size_t i) { return absl::StrCat(field, "[", i, "]"); }

void visitSpec(KernelSpec &s, const std::string &pre, const std::function<void(const std::string &, int64_t &)> &f) {
  for (size_t d = 0; d < s.dims.size(); ++d) f(idx(pre + "dims", d), s.dims[d].extent);
  for (size_t b = 0; b < s.buffers.size(); ++b)
    for (size_t k = 0; k < s.buffers[b].shape.size(); ++k)
      f(absl::StrCat(pre, "buffers[", b, "][", k, "]"), s.buffers[b].shape[k]);
  for (size_t e = 0; e < s.exprs.size(); ++e) {
    Expr &x = s.exprs[e];
    if (x.kind == ExprKind::kConst && (x.type == ScalarType::kIdx || x.type == ScalarType::kI64))
      f(idx(pre + "exprs", e), x.ival);
  }
  if (s.kind != SpecKind::kAttention) return;
  AttentionSpec &a = s.attention;
  f("attn.batch", a.batch);
  f("attn.numHeads", a.numHeads);
  f("attn.kvHeads", a.kvHeads);
  f("attn.seqQ", a.seqQ);
  f("attn.seqK", a.seqK);
  f("attn.headDim", a.headDim);
  f("attn.headDimV", a.headDimV);
  for (int i = 0; i < 4; ++i) {
    f(idx("attn.qStrides", i), a.qStrides[i]);
    f(idx("attn.kStrides", i), a.kStrides[i]);
    f(idx("attn.vStrides", i), a.vStrides[i]);
    f(idx("attn.oStrides", i), a.oStrides[i]);
  }
  for (size_t b = 0; b < a.biases.size(); ++b) {
    for (size_t k = 0; k < a.biases[b].shape.size(); ++k)
      f(absl::StrCat("attn.biases[", b, "].shape[", k, "]"), a.biases[b].shape[k]);
    for (int k = 0; k < 4; ++k) f(absl::StrCat("attn.biases[", b, "].strides[", k, "]"), a.biases[b].strides[k]);
  }
}

/// The structure of \p item apart from the integers visitItemInts visits
/// (they are zeroed in a copy), plus the names of the Values it names.
std::string structureKey(const WorkItem &item) {
  WorkItem z = item;
  visitItemInts(z, [](const std::string &, int64_t &v) { v = 0; });
  auto name = [](const ir::Value *v) { return v ? v->name() : std::string("-"); };
  std::string key = absl::StrCat(item.name, "|", static_cast<int>(item.kind), "|");
  for (const StridedAlias &a : z.aliases) absl::StrAppend(&key, "alias ", name(a.value), " of ", name(a.root), "|");
  switch (z.kind) {
    case WorkItem::Kind::kKernel:
      absl::StrAppend(&key, printKernelSpec(z.spec));
      for (const ir::Value *v : z.buffers) absl::StrAppend(&key, " ", name(v));
      break;
    case WorkItem::Kind::kGemm: {
      const GemmParams &g = z.gemm;
      absl::StrAppend(&key, name(g.a), " ", name(g.b), " ", name(g.c), " ", name(g.bias), " ", name(g.d), " ta",
                      g.transA, " tb", g.transB, " alpha", g.alpha, " beta", g.beta, " dt",
                      static_cast<int>(g.dtype), " ddt", static_cast<int>(g.dDtype), " ", g.compute, " bias",
                      g.epilogue.bias, " value", g.epilogue.value, "\n", printKernelSpec(g.epilogue.spec));
      for (const ir::Value *v : g.epilogueInputs) absl::StrAppend(&key, " ", name(v));
      break;
    }
    case WorkItem::Kind::kConv: {
      const ConvParams &c = z.conv;
      absl::StrAppend(&key, name(c.x), " ", name(c.w), " ", name(c.bias), " ", name(c.y), " rank",
                      c.xShape.size(), " dt", static_cast<int>(c.dtype), " bias", c.epilogue.bias, " value",
                      c.epilogue.value, "\n", printKernelSpec(c.epilogue.spec));
      for (const ir::Value *v : c.epilogueInputs) absl::StrAppend(&key, " ", name(v));
      break;
    }
  }
  return key;
}

/// The graph Values \p item reads or writes.
std::vector<const ir::Value *> namedValues(const WorkItem &item) {
  std::vector<const ir::Value *> out;
  switch (item.kind) {
    case WorkItem::Kind::kKernel: out = item.buffers; break;
    case WorkItem::Kind::kGemm:
      out = {item.gemm.a, item.gemm.b, item.gemm.c, item.gemm.bias, item.gemm.d};
      out.insert(out.end(), item.gemm.epilogueInputs.begin(), item.gemm.epilogueInputs.end());
      break;
    case WorkItem::Kind::kConv:
      out = {item.conv.x, item.conv.w, item.conv.bias, item.conv.y};
      out.insert(out.end(), item.conv.epilogueInputs.begin(), item.conv.epilogueInputs.end());
      break;
  }
  return out;
}

/// Records the fitted form \p e of the integer at \p path in \p item
/// (probe 0's), where the backends read it.
absl::Status record(WorkItem &item, const std::string &path, const SymExtent &e) {
  auto specField = [&](KernelSpec &s, const std::string &rest) -> absl::Status {
    int a = -1, b = -1;
    if (std::sscanf(rest.c_str(), "dims[%d]", &a) == 1) {
      s.dims[a].symbolic = e;
      return absl::OkStatus();
    }
    if (std::sscanf(rest.c_str(), "buffers[%d][%d]", &a, &b) == 2) {
      s.buffers[a].symbolicShape[b] = e;
      return absl::OkStatus();
    }
    if (std::sscanf(rest.c_str(), "exprs[%d]", &a) == 1) {
      Expr &x = s.exprs[a];
      x.kind = ExprKind::kSymbol;
      x.ival = static_cast<int64_t>(s.symbolics.size());
      s.symbolics.push_back(e);
      return absl::OkStatus();
    }
    return absl::InternalError(absl::StrCat("symbolic: unknown field ", rest));
  };
  if (path.rfind("aliases[", 0) == 0)  // the manifest's alias offsets are static
    return absl::FailedPreconditionError(
        absl::StrCat("a strided attention operand starts at ", e.str(), " elements (it must be static)"));
  if (path.rfind("spec.", 0) == 0) return specField(item.spec, path.substr(5));
  if (path.rfind("attn.", 0) == 0) {
    item.spec.attention.symbolic[path.substr(5)] = e;
    return absl::OkStatus();
  }
  if (path.rfind("gemm.epi.", 0) == 0) return specField(item.gemm.epilogue.spec, path.substr(9));
  if (path.rfind("conv.epi.", 0) == 0) return specField(item.conv.epilogue.spec, path.substr(9));
  if (path.rfind("gemm.", 0) == 0) {
    item.gemm.symbolic[path.substr(5)] = e;
    return absl::OkStatus();
  }
  if (path.rfind("conv.", 0) == 0) {
    item.conv.symbolic[path.substr(5)] = e;
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat("symbolic: unknown field ", path));
}

std::string bindingText(const std::map<std::string, int64_t> &b) {
  return absl::StrJoin(b, ", ", [](std::string *o, const auto &kv) { absl::StrAppend(o, kv.first, "=", kv.second); });
}

}  // namespace

std::set<int64_t> staticDimsOf(const ir::Graph &g) {
  std::set<int64_t> dims;
  auto add = [&](const ir::Value *v) {
    if (!v || !v->type().rankKnown) return;
    for (const ir::Dim &d : v->type().shape)
      if (d.isStatic()) dims.insert(d.value);
  };
  for (const ir::Value *v : g.inputs()) add(v);
  for (const ir::Node *n : g.nodes()) {
    for (const ir::Value *v : n->inputs()) add(v);
    for (const ir::Value *v : n->outputs()) add(v);
  }
  return dims;
}

absl::StatusOr<std::vector<std::map<std::string, int64_t>>> probeBindings(const std::vector<ShapeSymbol> &symbols,
                                                                          const std::set<int64_t> &avoid) {
  const size_t S = symbols.size();
  std::vector<std::map<std::string, int64_t>> probes(2 * S + 3);
  std::set<int64_t> used;  // distinct primes across symbols keep their products apart
  std::vector<std::array<int64_t, 3>> vals(S);
  for (size_t i = 0; i < S; ++i) {
    const ShapeSymbol &s = symbols[i];
    std::vector<int64_t> cands;
    auto add = [&](int64_t v) {
      if (v >= std::max<int64_t>(2, s.min) && v <= s.max && !used.count(v) &&
          std::find(cands.begin(), cands.end(), v) == cands.end())
        cands.push_back(v);
    };
    // Extents that are no model dim first (a probe batch of 2 in a model
    // with 2 KV heads makes kernels of the two coincide there), preferred
    // primes, then any primes of a narrow range, then any values >= 2;
    // model dims only where the range leaves nothing else.
    for (int64_t p : kPreferredPrimes)
      if (!avoid.count(p)) add(p);
    const int64_t lo = std::max<int64_t>(2, s.min), hi = std::min<int64_t>(s.max, lo + 4096);
    for (int pass = 0; pass < 4 && cands.size() < 3; ++pass)
      for (int64_t v = lo; v <= hi && cands.size() < 3; ++v) {
        const bool free = !avoid.count(v), prime = isPrime(v);
        if ((pass == 0 && free && prime) || (pass == 1 && free) || (pass == 2 && prime) || pass == 3) add(v);
      }
    if (cands.size() < 3)
      return absl::InvalidArgumentError(absl::StrCat(
          "symbol '", s.name, "' ranges over ", s.min, "..", s.max,
          ": a dynamic dim needs at least three extents >= 2 to be compiled for; bind it with --shape"));
    for (int k = 0; k < 3; ++k) {
      vals[i][k] = cands[k];
      used.insert(cands[k]);
    }
  }
  for (size_t p = 0; p < S + 2; ++p)
    for (size_t i = 0; i < S; ++i) {
      const int which = p == S + 1 ? 2 : (p == i + 1 ? 1 : 0);
      probes[p][symbols[i].name] = vals[i][which];
    }
  // Verification at both ends of the ranges: every symbol small, then each
  // symbol large with the others at base (one at a time keeps the sizes of
  // the probe's tensors moderate).
  // Small: the smallest primes that are no model dim, distinct per symbol
  // (so that symbols coincide neither with each other nor with the model's
  // dims); at least the range's minimum.
  std::set<int64_t> taken = avoid;
  {
    for (size_t i = 0; i < S; ++i) {
      int64_t v = std::max<int64_t>(2, symbols[i].min);
      while (v < symbols[i].max && (!isPrime(v) || taken.count(v))) ++v;
      v = std::min(v, symbols[i].max);
      taken.insert(v);
      probes[S + 2][symbols[i].name] = v;
    }
  }
  for (size_t i = 0; i < S; ++i) {
    const ShapeSymbol &s = symbols[i];
    int64_t large = std::min(s.max, kMaxProbeExtent);
    // A prime that is neither a model dim nor another symbol's small extent.
    while (large > s.min && (!isPrime(large) || taken.count(large))) --large;
    if (!isPrime(large) || taken.count(large)) {
      // A narrow range: its largest value that is no model dim or other
      // symbol's extent; else the base extent (this probe then repeats it).
      large = std::min(s.max, kMaxProbeExtent);
      while (large >= 2 && large > s.min && taken.count(large)) --large;
      if (large < 2 || taken.count(large)) large = vals[i][0];
    }
    // Large: the other symbols small, so that a [batch, heads, seq, seq]
    // score or mask tensor of the probe stays below the IR's tensor limits.
    for (size_t j = 0; j < S; ++j)
      probes[S + 3 + i][symbols[j].name] = j == i ? large : probes[S + 2][symbols[j].name];
  }
  return probes;
}

/// The values as c0 + c1 s1 + ... (integer coefficients, at least one
/// symbol with a coefficient and the form not a single monomial's), when
/// every probe agrees; for fitMonomial's refusal.
static std::optional<std::string> affineText(const std::vector<int64_t> &values, const ShapeProbes &probes) {
  const size_t S = probes.symbols.size();
  if (values.size() != probes.bindings.size() || values.size() < S + 2) return std::nullopt;
  std::vector<i128> coef(S, 0);
  for (size_t i = 0; i < S; ++i) {
    const int64_t b = probes.bindings[0].at(probes.symbols[i].name);
    const int64_t a = probes.bindings[i + 1].at(probes.symbols[i].name);
    if (a == b) continue;
    const i128 dv = i128(values[i + 1]) - i128(values[0]);
    if (dv % (i128(a) - i128(b)) != 0) return std::nullopt;
    coef[i] = dv / (i128(a) - i128(b));
  }
  i128 c0 = values[0];
  for (size_t i = 0; i < S; ++i) c0 -= coef[i] * i128(probes.bindings[0].at(probes.symbols[i].name));
  int terms = 0;
  for (size_t p = 0; p < values.size(); ++p) {
    i128 pred = c0;
    for (size_t i = 0; i < S; ++i) pred += coef[i] * i128(probes.bindings[p].at(probes.symbols[i].name));
    if (pred != i128(values[p])) return std::nullopt;
  }
  std::string text;
  for (size_t i = 0; i < S; ++i) {
    if (coef[i] == 0) continue;
    ++terms;
    const int64_t c = static_cast<int64_t>(coef[i]);
    absl::StrAppend(&text, text.empty() ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + "),
                    c == 1 || c == -1 ? "" : absl::StrCat(c < 0 ? -c : c, "*"), probes.symbols[i].name);
  }
  if (terms == 0 || (terms == 1 && c0 == 0)) return std::nullopt;
  if (c0 != 0) absl::StrAppend(&text, c0 < 0 ? " - " : " + ", static_cast<int64_t>(c0 < 0 ? -c0 : c0));
  return text;
}

absl::StatusOr<SymExtent> fitMonomial(const std::vector<int64_t> &values, const ShapeProbes &probes) {
  const size_t S = probes.symbols.size();
  auto fail = [&] {
    std::vector<std::string> at;
    for (size_t p = 0; p < values.size(); ++p)
      at.push_back(absl::StrCat(values[p], " at ", bindingText(probes.bindings[p])));
    std::string why = absl::StrCat("no product of symbols fits its values (", absl::StrJoin(at, "; "), ")");
    if (std::optional<std::string> sum = affineText(values, probes))
      absl::StrAppend(&why, ": it is ", *sum,
                      ", a sum of symbols (a KV cache's past + new length, or a dynamic dim minus a constant, "
                      "as x[:, 5:] makes), and a dim of a dynamic kernel must be a constant times a product of "
                      "symbols");
    return absl::FailedPreconditionError(why);
  };
  if (values.size() != probes.bindings.size() || values.size() < S + 2)
    return absl::InternalError("fitMonomial: one value per probe expected");
  const int64_t v0 = values[0];
  if (v0 == 0) {
    for (int64_t v : values)
      if (v != 0) return fail();
    return SymExtent::constant(0);
  }
  std::vector<int> exps(S, 0);
  for (size_t i = 0; i < S; ++i) {
    const int64_t b = probes.bindings[0].at(probes.symbols[i].name);
    const int64_t a = probes.bindings[i + 1].at(probes.symbols[i].name);
    int found = -1;
    for (int k = 0; k <= 4 && found < 0; ++k) {
      const i128 pa = power(a, k), pb = power(b, k);
      if (pa != 0 && pb != 0 && i128(v0) * pa == i128(values[i + 1]) * pb) found = k;
    }
    if (found < 0) return fail();
    exps[i] = found;
  }
  i128 denom = 1;
  for (size_t i = 0; i < S; ++i) denom *= power(probes.bindings[0].at(probes.symbols[i].name), exps[i]);
  if (denom == 0 || i128(v0) % denom != 0) return fail();
  const int64_t coeff = static_cast<int64_t>(i128(v0) / denom);
  SymExtent e = SymExtent::constant(coeff);
  for (size_t i = 0; i < S; ++i)
    for (int k = 0; k < exps[i]; ++k) e = e * SymExtent::symbol(probes.symbols[i].name);
  // Every probe, the verification one included, must agree.
  for (size_t p = 0; p < values.size(); ++p) {
    i128 pred = coeff;
    for (size_t i = 0; i < S; ++i) pred *= power(probes.bindings[p].at(probes.symbols[i].name), exps[i]);
    if (pred != i128(values[p])) return fail();
  }
  return e;
}

void visitItemInts(WorkItem &item, const std::function<void(const std::string &, int64_t &)> &f) {
  for (size_t i = 0; i < item.aliases.size(); ++i) f(absl::StrCat("aliases[", i, "].offset"), item.aliases[i].offset);
  switch (item.kind) {
    case WorkItem::Kind::kKernel: visitSpec(item.spec, "spec.", f); break;
    case WorkItem::Kind::kGemm: {
      GemmParams &g = item.gemm;
      f("gemm.m", g.m);
      f("gemm.n", g.n);
      f("gemm.k", g.k);
      f("gemm.batch", g.batch);
      f("gemm.strideA", g.strideA);
      f("gemm.strideB", g.strideB);
      f("gemm.strideC", g.strideC);
      f("gemm.strideD", g.strideD);
      visitSpec(g.epilogue.spec, "gemm.epi.", f);
      break;
    }
    case WorkItem::Kind::kConv: {
      ConvParams &c = item.conv;
      for (size_t i = 0; i < c.xShape.size(); ++i) f(idx("conv.xShape", i), c.xShape[i]);
      for (size_t i = 0; i < c.wShape.size(); ++i) f(idx("conv.wShape", i), c.wShape[i]);
      for (size_t i = 0; i < c.yShape.size(); ++i) f(idx("conv.yShape", i), c.yShape[i]);
      for (size_t i = 0; i < c.pads.size(); ++i) f(idx("conv.pads", i), c.pads[i]);
      for (size_t i = 0; i < c.strides.size(); ++i) f(idx("conv.strides", i), c.strides[i]);
      for (size_t i = 0; i < c.dilations.size(); ++i) f(idx("conv.dilations", i), c.dilations[i]);
      f("conv.group", c.group);
      visitSpec(c.epilogue.spec, "conv.epi.", f);
      break;
    }
  }
}

absl::StatusOr<Program> buildSymbolicProgram(const ShapeProbes &probes, const LoweringOptions &opts) {
  const size_t P = probes.graphs.size();
  if (P < probes.symbols.size() + 2 || probes.bindings.size() != P || probes.kernelNames.size() != P)
    return absl::InternalError("buildSymbolicProgram: one graph, binding and plan per probe expected");
  // Each probe's kernels with every integer constant its own expression:
  // the structure then does not depend on which values coincide.
  LoweringOptions probeOpts = opts;
  probeOpts.distinctIntConstants = true;
  std::vector<Program> progs;
  for (size_t p = 0; p < P; ++p) {
    FUSEC_ASSIGN_OR_RETURN(Program prog, buildProgram(*probes.graphs[p], probes.kernelNames[p], probeOpts));
    progs.push_back(std::move(prog));
  }
  auto where = [&](const WorkItem &it) {
    return absl::StrCat("kernel '", it.name, "'",
                        it.nodes.empty() ? "" : absl::StrCat(" (", it.nodes.front()->describe(), ")"));
  };
  auto refuse = [&](const std::string &what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dynamic shapes: ", what, ". Bind the dims it depends on with --shape INPUT=DIMS (INPUT a graph "
        "input's name, e.g. --shape input_ids=2x24), or report the model"));
  };
  Program &p0 = progs[0];
  // Equal items, not equal de-duplication: two kernels that coincide at
  // one probe (symbols at equal extents) are still two (assembleProgram
  // de-duplicates the fitted items again).
  for (size_t p = 1; p < P; ++p)
    if (progs[p].items.size() != p0.items.size())
      return refuse(absl::StrCat("the program's structure changes with the binding (", p0.items.size(), " steps at ",
                                 bindingText(probes.bindings[0]), ", ", progs[p].items.size(), " at ",
                                 bindingText(probes.bindings[p]), ")"));
  for (size_t i = 0; i < p0.items.size(); ++i) {
    WorkItem &item = p0.items[i];
    const std::string key = structureKey(item);
    std::vector<std::vector<int64_t>> vals(P);
    std::vector<std::string> paths;
    visitItemInts(item, [&](const std::string &path, int64_t &v) {
      paths.push_back(path);
      vals[0].push_back(v);
    });
    for (size_t p = 1; p < P; ++p) {
      WorkItem &other = progs[p].items[i];
      if (structureKey(other) != key) {
        // Attention whose recognised mask or score expression differs: name
        // both (a sliding window as wide as the smaller extents folds to a
        // plain causal mask there, and cannot be told apart).
        if (item.kind == WorkItem::Kind::kKernel && other.kind == WorkItem::Kind::kKernel &&
            item.spec.kind == SpecKind::kAttention && other.spec.kind == SpecKind::kAttention) {
          const AttentionSpec &a = item.spec.attention, &b = other.spec.attention;
          auto show = [](const ir::ScoreExpr &e, const char *none) { return e.empty() ? std::string(none) : e.str(); };
          if (a.mask.str() != b.mask.str() || a.scoreMod.str() != b.scoreMod.str())
            return refuse(absl::StrCat(
                where(item), " recognises its attention mask as '", show(a.mask, "none"), "' (score '",
                show(a.scoreMod, "score"), "') at ", bindingText(probes.bindings[0]), " but as '",
                show(b.mask, "none"), "' (score '", show(b.scoreMod, "score"), "') at ", bindingText(probes.bindings[p]),
                ": the mask the exporter computes from the shapes is not one expression of the positions at every "
                "extent (a query offset that depends on Sk - Sq, i.e. a cache length, cannot be; a window built "
                "by a form that folds, e.g. Trilu, shows only at extents above it). Bind the dims (a fixed cache "
                "length), or give the sequence dims a minimum above the window with --shape INPUT=...MIN..MAX"));
        }
        // Probe extents equal to a dim of the model (a narrow range leaves
        // no others): the two coincide there, and kernels differ.
        std::vector<std::string> clash;
        for (size_t q : {size_t{0}, p})
          for (const auto &[sym, ext] : probes.bindings[q])
            if (probes.modelDims.count(ext)) clash.push_back(absl::StrCat(sym, "=", ext));
        return refuse(absl::StrCat(
            where(item), " is built differently at ", bindingText(probes.bindings[p]), " than at ",
            bindingText(probes.bindings[0]), " (a decision or a float constant depends on the extents",
            clash.empty() ? std::string()
                          : absl::StrCat("; the probe extents ", absl::StrJoin(clash, ", "),
                                         " equal dims of the model, which a range this narrow could not avoid: "
                                         "widen it"),
            ")"));
      }
      visitItemInts(other, [&](const std::string &, int64_t &v) { vals[p].push_back(v); });
      if (vals[p].size() != paths.size()) return refuse(absl::StrCat(where(item), " changes structure"));
    }
    for (size_t k = 0; k < paths.size(); ++k) {
      bool same = true;
      std::vector<int64_t> col(P);
      for (size_t p = 0; p < P; ++p) {
        col[p] = vals[p][k];
        same = same && col[p] == col[0];
      }
      if (same) continue;
      absl::StatusOr<SymExtent> e = fitMonomial(col, probes);
      // Index bounds are often a product minus one (a clamp to n - 1): a
      // small constant offset, fitted and verified the same way. Loop
      // and buffer extents must be products.
      const bool extent = paths[k].find("dims[") != std::string::npos || paths[k].find("buffers[") != std::string::npos;
      for (int64_t d : {-1, 1, -2, 2, -3, 3, -4, 4}) {
        if (e.ok() || extent) break;
        std::vector<int64_t> shifted = col;
        for (int64_t &v : shifted) v -= d;
        absl::StatusOr<SymExtent> f = fitMonomial(shifted, probes);
        if (f.ok() && !f->isConstant()) e = f->plus(d);
      }
      if (!e.ok()) return refuse(absl::StrCat(where(item), ", ", paths[k], ": ", e.status().message()));
      if (absl::Status st = record(item, paths[k], *e); !st.ok())
        return st.code() == absl::StatusCode::kFailedPrecondition
                   ? refuse(absl::StrCat(where(item), ": ", st.message()))
                   : st;
    }
  }
  // Weights must not depend on the binding.
  std::vector<std::string> dependent = bindingDependentConstants(probes);
  std::set<std::string> read;
  for (const WorkItem &it : p0.items)
    for (const ir::Value *v : namedValues(it))
      if (v && v->isConstant()) read.insert(v->name());
  std::vector<std::string> bad;
  for (const std::string &n : dependent)
    if (read.count(n)) bad.push_back(n);
  if (!bad.empty())
    return refuse(absl::StrCat("constants computed from the shapes at compile time: '", absl::StrJoin(bad, "', '"),
                               "'"));
  return assembleProgram(std::move(p0.items));
}

absl::StatusOr<std::map<std::string, std::vector<SymExtent>>> fitValueShapes(const ShapeProbes &probes) {
  std::map<std::string, std::vector<SymExtent>> out;
  const ir::Graph &g0 = *probes.graphs[0];
  auto visit = [&](const ir::Value *v) -> absl::Status {
    if (!v || out.count(v->name()) || !v->type().isStatic()) return absl::OkStatus();
    const ir::Shape s0 = v->type().staticShape();
    std::vector<std::vector<int64_t>> per(probes.graphs.size());
    for (size_t p = 0; p < probes.graphs.size(); ++p) {
      const ir::Value *o = probes.graphs[p]->findValue(v->name());
      if (!o || !o->type().isStatic() || o->type().rank() != v->type().rank()) return absl::OkStatus();
      per[p] = o->type().staticShape();
    }
    std::vector<SymExtent> dims;
    for (size_t d = 0; d < s0.size(); ++d) {
      std::vector<int64_t> col;
      for (auto &s : per) col.push_back(s[d]);
      absl::StatusOr<SymExtent> e = fitMonomial(col, probes);
      if (!e.ok())
        return absl::FailedPreconditionError(absl::StrCat("dynamic shapes: value '", v->name(), "' dim ", d, ": ",
                                                          e.status().message(),
                                                          ". Bind the symbols it depends on with --shape"));
      dims.push_back(*e);
    }
    out.emplace(v->name(), std::move(dims));
    return absl::OkStatus();
  };
  for (const ir::Value *v : g0.inputs()) FUSEC_RETURN_IF_ERROR(visit(v));
  for (const ir::Value *v : g0.outputs()) FUSEC_RETURN_IF_ERROR(visit(v));
  for (const ir::Node *n : g0.nodes()) {
    for (const ir::Value *v : n->inputs()) FUSEC_RETURN_IF_ERROR(visit(v));
    for (const ir::Value *v : n->outputs()) FUSEC_RETURN_IF_ERROR(visit(v));
  }
  return out;
}

std::vector<std::string> bindingDependentConstants(const ShapeProbes &probes) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  const ir::Graph &g0 = *probes.graphs[0];
  for (const ir::Node *n : g0.nodes())
    for (int i = 0; i < static_cast<int>(n->inputs().size()); ++i) {
      const ir::Value *v = n->inputs()[i];
      // Shapes, axes and the like are read at compile time only.
      // Range's scalars decide its length; the lowering inlines them as
      // literals, which the fit covers.
      if (!v || !v->isConstant() || ir::isMetadataOperand(n->kind(), i) || n->kind() == ir::OpKind::kRange ||
          !seen.insert(v->name()).second)
        continue;
      for (size_t p = 1; p < probes.graphs.size(); ++p) {
        const ir::Value *o = probes.graphs[p]->findValue(v->name());
        if (!o || !o->isConstant() || !(*o->constant() == *v->constant())) {
          out.push_back(v->name());
          break;
        }
      }
    }
  return out;
}

}  // namespace fusec::program
