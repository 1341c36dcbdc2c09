//===- Symbolic.h - Dynamic shapes: one program for every binding of the symbols -*- C++ -*-===//
//
// A model compiled without binding its symbolic input dims (fusec MODEL
// with no --shape for them, or --shape NAME=1..64x1..4096) gets one program
// that runs every allowed binding (DESIGN.md, "Symbolic shapes").
//
// How the program is found: generic instantiation, then fitting. The whole
// pipeline (import, passes, fusion, lowering) runs once per *probe
// binding*: each symbol bound to a prime chosen so that values of different
// origin do not coincide. The probes are
//   probe 0       every symbol at its base prime     (the program emitted)
//   probe 1 + i   symbol i at another prime, the others at base
//   probe S + 1   every symbol at a third prime      (verification only)
// All probes must give the same program structure: the same work items,
// kernels, expressions, buffers and fusion decisions, differing only in
// integers. Each integer that differs is fitted as a monomial
// coeff * s1^k1 * s2^k2 ... (SymExtent; k read off the ratio between probe 0
// and probe 1 + i, coeff from probe 0) and must predict the verification
// probes exactly. Besides probe S + 1 they are: every symbol at a small
// extent (the smallest primes that are no static dim of the model, one
// per symbol, at least the range's minimum), and each
// symbol in turn at a large one (the largest prime <= min(its maximum,
// 4099)) with the others small. A value the model
// clamps (a Slice to the first K positions: min(seq, K)) is a product of
// symbols only on one side of K; with probes at both ends of the range one
// of them is on the other side, so the clamp is refused, not fitted. (A
// clamp below the small probe, K smaller than the smallest prime that is
// no dim of the model, is not seen: min(seq, 2) in a model with 2 heads.) An integer that is not such a monomial (seq - 1, a mean's
// 1/seq as a float, a folded constant whose contents depend on the
// binding, a fusion decision that depends on the size) is refused, naming
// the kernel or value, and the user binds that symbol with --shape.
// Nothing is assumed: every symbolic form was checked against a probe it
// was not fitted on.
//
// The fitted forms are recorded where the backends read them: LoopDim::
// symbolic, BufferDesc::symbolicShape, ExprKind::kSymbol expressions, and
// the `symbolic` maps of GemmParams, ConvParams and AttentionSpec.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_SYMBOLIC_H
#define FUSEC_PROGRAM_SYMBOLIC_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"
#include "program/Program.h"
#include "program/SymExtent.h"

namespace fusec::program {

/// Largest extent a symbol may take (2^31 - 1; the runtime checks it).
inline constexpr int64_t kMaxSymbolExtent = (int64_t{1} << 31) - 1;
/// The range of a symbol no --shape bounds: 1..2048. Causal masks that an
/// exporter builds from the shapes fold to constants (and are recognised
/// as index masks) up to 2048 x 2048 (passes/ConstantFolding.cpp), so the
/// default range compiles them; a larger maximum is given with --shape
/// NAME=1..MAX.
inline constexpr int64_t kDefaultSymbolMax = 2048;
/// The largest extent a probe takes (see the file comment): a symbol is
/// verified at the largest prime <= min(its maximum, 4099).
inline constexpr int64_t kMaxProbeExtent = 4099;

/// One symbolic dim left for run time, with its allowed range (inclusive).
struct ShapeSymbol {
  std::string name;
  int64_t min = 1;
  int64_t max = kDefaultSymbolMax;
  int64_t opt = 0;  ///< the extent to optimise for (--shape ..@opt); 0 = none
};

/// The probe bindings for \p symbols (see the file comment): 2S + 3 maps
/// symbol -> extent, probe 0 first, then one per symbol, then the
/// verification probes. Each symbol's three values are
/// distinct primes inside its range (preferring 23..113, away from the
/// small dims models use). Errors: InvalidArgument when a range holds
/// fewer than three usable values (bind that symbol with --shape).
absl::StatusOr<std::vector<std::map<std::string, int64_t>>> probeBindings(
    const std::vector<ShapeSymbol> &symbols, const std::set<int64_t> &avoid = {});

/// The static dims of \p g's values (inputs, constants, node results): the
/// extents probeBindings() avoids for its small probe, so that a symbol at
/// a small extent does not coincide with a model dim (kernels would then
/// share expressions they do not share at other extents).
std::set<int64_t> staticDimsOf(const ir::Graph &g);

/// The compiled probes of one model: graph i was optimised with the
/// inputs' symbols bound to bindings[i]; kernelNames[i] its fusion plan's
/// kernel names.
struct ShapeProbes {
  std::vector<ShapeSymbol> symbols;
  std::vector<std::map<std::string, int64_t>> bindings;
  std::vector<const ir::Graph *> graphs;
  std::vector<std::vector<std::string>> kernelNames;
  /// The model's static dims (staticDimsOf): a refusal names the probe
  /// extents that coincide with one.
  std::set<int64_t> modelDims;
};

/// The monomial through \p values (one per probe of \p probes, in order),
/// verified on the last probe. Errors: FailedPrecondition when no monomial
/// with exponents 0..4 fits (the message shows the values).
absl::StatusOr<SymExtent> fitMonomial(const std::vector<int64_t> &values, const ShapeProbes &probes);

/// Calls \p f(path, value) for every integer of \p item that may depend on
/// the shapes: loop extents, buffer dims, integer constants of the
/// expression DAG, attention, GEMM and convolution parameters (and their
/// epilogues). Paths name the field ("spec.dims[2]", "gemm.m",
/// "attn.qStrides[0]"); the order is fixed, so two items of the same
/// structure visit the same paths.
void visitItemInts(WorkItem &item, const std::function<void(const std::string &, int64_t &)> &f);

/// Lowers every probe (buildProgram with \p opts) and returns probe 0's
/// program with every integer that differs across probes replaced by its
/// fitted form (see the file comment). Errors: FailedPrecondition naming
/// the kernel and field that has no symbolic form or a structure that
/// changes with the binding; lowering errors as buildProgram().
absl::StatusOr<Program> buildSymbolicProgram(const ShapeProbes &probes, const LoweringOptions &opts);

/// The symbolic shape of every value of probe 0's graph that has a
/// static shape in every probe, by value name (values whose dims are all
/// static in the model map to constants). Errors: FailedPrecondition
/// naming a value whose dims have no symbolic form.
absl::StatusOr<std::map<std::string, std::vector<SymExtent>>> fitValueShapes(const ShapeProbes &probes);

/// Constants read as data (not as metadata operands, ir::isMetadataOperand)
/// by nodes of the probes' graphs, by name, whose shape or contents differ
/// between probes: data computed from the shapes and
/// folded at compile time (a position-id range, a causal mask). The
/// driver compiles again without folding them.
std::vector<std::string> bindingDependentConstants(const ShapeProbes &probes);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_SYMBOLIC_H
