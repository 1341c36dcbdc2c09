//===- PatternUtils.h - Helpers for dataflow pattern matching ---*- C++ -*-===//
//
// Small, shared helpers for passes that recognise subgraphs by dataflow
// (canonicalisation, BatchNorm folding): reading a value as a scalar or splat
// constant, comparing constants within a tolerance, flattening product trees
// of Mul nodes, reading a value as a polynomial of degree <= 3 in another
// value, checking that a matched subgraph has no users outside itself, and
// replacing a value while keeping value names (graph output names in
// particular) stable.
//
// None of these helpers mutate the graph except replaceValue() and
// createNodeBefore().
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_UTILS_PATTERNUTILS_H
#define FUSEC_PASSES_UTILS_PATTERNUTILS_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "ir/Graph.h"

namespace fusec::passes {

/// Relative tolerance used when comparing a constant in a model with a known
/// mathematical constant (sqrt(2), 0.044715, ...). Exporters write these
/// rounded to f32 or to 4-5 decimal digits; 1e-3 accepts both while still
/// rejecting a different constant (1.5 for sqrt(2) is off by 6%).
inline constexpr double kConstantRtol = 1e-3;

/// \returns true if |a - b| <= rtol * max(|a|, |b|) (exact for b == 0).
bool approxEqual(double a, double b, double rtol = kConstantRtol);

/// \returns the value of \p v if it is a constant of a numeric dtype whose
/// elements all equal one number (a scalar, a [1] tensor, or a splat), else
/// nullopt. Looks through Cast nodes whose input is such a constant.
std::optional<double> splatConstant(const ir::Value *v);

/// \returns true if \p v is a splat constant approximately equal to \p expected.
bool isSplatConstant(const ir::Value *v, double expected, double rtol = kConstantRtol);

/// \returns the producer of \p v if it exists and has kind \p kind, else null.
ir::Node *producerOf(const ir::Value *v, ir::OpKind kind);

/// Use information for one snapshot of a graph (recompute after mutating).
class UseInfo {
 public:
  explicit UseInfo(const ir::Graph &graph);
  /// The nodes using \p v, once per use.
  const std::vector<ir::Node *> &users(const ir::Value *v) const;
  bool isGraphOutput(const ir::Value *v) const { return outputs_.contains(v); }
  /// True if \p v has exactly one use (one input slot of one node) and is not
  /// a graph output.
  bool hasOneUse(const ir::Value *v) const;

 private:
  absl::flat_hash_map<const ir::Value *, std::vector<ir::Node *>> users_;
  absl::flat_hash_set<const ir::Value *> outputs_;
  std::vector<ir::Node *> none_;
};

/// \returns true if every result of every node in \p nodes other than
/// \p root is used only by nodes in \p nodes and is not a graph output, so
/// that replacing root's result leaves the rest of the subgraph dead.
bool isSelfContained(const std::vector<ir::Node *> &nodes, const ir::Node *root,
                     const UseInfo &uses);

/// Flattens the product tree rooted at \p v: descends through Mul nodes (and
/// Div nodes whose divisor is a splat constant, recorded as a factor 1/c) and
/// appends the leaves to \p factors and the visited nodes to \p nodes. Inner
/// Mul/Div results must have one use; the root's node is always expanded.
/// \p constant receives the product of all splat-constant leaves (which are
/// not appended to \p factors).
void flattenProduct(ir::Value *v, const UseInfo &uses, std::vector<ir::Value *> &factors,
                    std::vector<ir::Node *> &nodes, double &constant);

/// Coefficients c0..c3 of a polynomial c0 + c1 x + c2 x^2 + c3 x^3.
using Poly3 = std::array<double, 4>;

/// Reads \p v as a polynomial of degree <= 3 in \p x, built from x, splat
/// constants, Add, Sub, Mul, Neg, Div by a splat constant and Pow by the
/// constant 2 or 3. Visited nodes are appended to \p nodes. \returns nullopt
/// if \p v is not such a polynomial (or its degree exceeds 3).
std::optional<Poly3> polynomialIn(ir::Value *v, ir::Value *x, std::vector<ir::Node *> &nodes,
                                  int depth = 0);

/// \returns true if polynomial \p p equals \p expected coefficient-wise:
/// approxEqual for nonzero expected coefficients, |c| <= 1e-12 otherwise.
bool polyMatches(const Poly3 &p, const Poly3 &expected, double rtol = kConstantRtol);

/// \returns the axes of a Reduce* node (constant input 1, or the legacy
/// "axes" attribute), normalised to [0, rank), sorted and unique; all axes
/// when none are given (unless noop_with_empty_axes). nullopt if the axes
/// are not constant, out of range, or \p rank is negative (unknown).
std::optional<std::vector<int64_t>> reduceAxes(const ir::Node &reduce, int64_t rank);

/// Replaces every use of \p from with \p to. When \p takeName is true, or
/// when \p from is a graph output, \p to takes \p from's name (and \p from is
/// renamed to a fresh name) so that names seen outside the pass do not
/// change. \returns false (and changes nothing) if \p from is a graph output
/// and \p to is a graph input or already a graph output: the rename would
/// change the model's interface.
bool replaceValue(ir::Graph &graph, ir::Value *from, ir::Value *to, bool takeName);

/// Creates node \p opType(\p inputs) with \p attrs immediately before
/// \p before, with \p before's location and one result named after
/// \p before's first result (made unique), and infers its result type.
/// Errors come from shape inference (the node is erased again).
absl::StatusOr<ir::Node *> createNodeBefore(ir::Graph &graph, ir::Node *before,
                                            const std::string &opType,
                                            std::vector<ir::Value *> inputs,
                                            ir::AttributeMap attrs = {});

/// \returns true if \p a and \p b have the same dtype and rank and no static
/// dim of one differs from the corresponding static dim of the other.
bool typesCompatible(const ir::TensorType &a, const ir::TensorType &b);

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_UTILS_PATTERNUTILS_H
