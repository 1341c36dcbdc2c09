//===- ShapeInferrer.h - Shape inference internals (ir/ only) ---*- C++ -*-===//
//
// The per-node inference state shared by ir/ShapeInference.cpp (dispatch,
// shape data propagation, broadcasting) and ir/shape/*.cpp (the op families'
// rules). Not part of the IR's interface.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_SHAPE_SHAPEINFERRER_H
#define FUSEC_IR_SHAPE_SHAPEINFERRER_H

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/Graph.h"

namespace fusec::ir::shape {

using Dims = std::vector<Dim>;

/// One element of a tracked integer value: a known integer (any sign), a
/// symbol, or unknown.
struct Elem {
  enum Kind { kInt, kSym, kUnknown } kind = kUnknown;
  int64_t v = 0;
  std::string sym;
  static Elem ofInt(int64_t x) { return Elem{kInt, x, {}}; }
  static Elem ofDim(const Dim &d) {
    if (d.isStatic()) return ofInt(d.value);
    if (d.isSymbolic()) return Elem{kSym, 0, d.symbol};
    return Elem{};
  }
  bool isInt() const { return kind == kInt; }
};
using Elems = std::vector<Elem>;

/// Per-run cache of tracked values (nullopt = not trackable).
using DataCache = absl::flat_hash_map<const Value *, std::optional<Elems>>;

constexpr int kMaxTrackedElems = 64;
constexpr int kMaxTrackDepth = 64;

class Inferrer {
 public:
  Inferrer(const Node &node, DataCache &cache) : node_(node), cache_(cache) {}

  absl::StatusOr<std::vector<TensorType>> run();

 private:
  // --- helpers -------------------------------------------------------------
  absl::Status error(const std::string &msg) const {
    return absl::InvalidArgumentError(absl::StrCat(node_.describe(), ": ", msg));
  }
  const Value *in(int i) const { return node_.input(i); }
  bool has(int i) const { return in(i) != nullptr; }
  TensorType inType(int i) const {
    const Value *v = in(i);
    if (!v) return TensorType::unranked(DType::kUndefined);
    return v->type();
  }
  /// Normalises axis \p a for rank \p r (valid range [-r, r-1]).
  absl::StatusOr<int64_t> normAxis(int64_t a, int64_t r, const char *what = "axis") const {
    if (a < -r || a >= r)
      return error(absl::StrCat(what, " ", a, " out of range for rank ", r));
    return a < 0 ? a + r : a;
  }
  /// The tracked elements of input \p i (constant or shape data).
  std::optional<Elems> data(int i) { return has(i) ? track(in(i), 0) : std::nullopt; }
  /// Input \p i as a list of known integers, or nullopt.
  std::optional<std::vector<int64_t>> ints(int i) {
    auto d = data(i);
    if (!d) return std::nullopt;
    std::vector<int64_t> out;
    for (const Elem &e : *d) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.v);
    }
    return out;
  }
  std::optional<Elems> track(const Value *v, int depth);
  std::optional<Elems> trackNode(const Node &n, int depth);

  absl::StatusOr<Dim> broadcastDim(const Dim &a, const Dim &b) const;
  absl::StatusOr<TensorType> broadcast(const std::vector<TensorType> &ts, DType dtype) const;
  absl::StatusOr<Dim> mergeEqual(const Dim &a, const Dim &b, const char *what) const;

  // --- op families ---------------------------------------------------------
  absl::StatusOr<std::vector<TensorType>> elementwiseNary(DType dtype, int first = 0);
  absl::StatusOr<TensorType> matmul();
  absl::StatusOr<TensorType> gemm();
  absl::StatusOr<TensorType> convOrPool(bool isConv);
  absl::StatusOr<TensorType> reduce();
  absl::StatusOr<TensorType> argReduce();
  absl::StatusOr<TensorType> reshape();
  absl::StatusOr<TensorType> transpose();
  absl::StatusOr<TensorType> flatten();
  absl::StatusOr<TensorType> squeeze();
  absl::StatusOr<TensorType> unsqueeze();
  absl::StatusOr<TensorType> concat();
  absl::StatusOr<std::vector<TensorType>> split();
  absl::StatusOr<TensorType> slice();
  absl::StatusOr<TensorType> gather();
  absl::StatusOr<TensorType> gatherND();
  absl::StatusOr<TensorType> expand();
  absl::StatusOr<TensorType> tile();
  absl::StatusOr<TensorType> pad();
  absl::StatusOr<TensorType> resize();
  absl::StatusOr<TensorType> gridSample();
  absl::StatusOr<TensorType> roiAlign();
  absl::StatusOr<TensorType> compress();
  absl::StatusOr<TensorType> nonMaxSuppression();
  absl::StatusOr<TensorType> det();
  absl::StatusOr<TensorType> bitCast();
  absl::StatusOr<TensorType> col2Im();
  absl::StatusOr<std::vector<TensorType>> unique();
  absl::StatusOr<TensorType> tensorScatter();
  absl::StatusOr<TensorType> convTranspose();
  /// TopK: Values (x's dtype) and Indices (i64), x's shape with the axis of
  /// length k (input 1: static, a symbol tracked from Shape data, or unknown).
  absl::StatusOr<std::vector<TensorType>> topK();
  /// OneHot: indices' shape with a new axis of length depth (input 1, a
  /// constant; unknown otherwise) at `axis`, in values' (input 2) dtype.
  absl::StatusOr<TensorType> oneHot();
  /// ScatterND: data's type, after checking indices' last dim against data's
  /// rank and updates' shape (indices.shape[:-1] + data.shape[k:]).
  absl::StatusOr<TensorType> scatterND();
  /// The scatter ops' reduction attribute: none, add, mul, max or min.
  absl::Status scatterReduction() const;
  absl::StatusOr<TensorType> shape();
  absl::StatusOr<TensorType> constantOfShape();
  absl::StatusOr<TensorType> range();
  absl::StatusOr<std::vector<TensorType>> layerNorm();
  absl::StatusOr<TensorType> constant();

  /// A shape from tracked elements of input \p i (for ConstantOfShape,
  /// Expand): static, symbolic or unknown dims; rank from the input's static
  /// length if the elements are unknown; unranked otherwise.
  std::optional<Elems> shapeElems(int i, bool *rankKnown, int64_t *rank);

  const Node &node_;
  DataCache &cache_;
};

/// Operand checks run before an op's rule (ir/shape/Checks.cpp): dtypes
/// against the op table's FUSEC_DTYPES rows and constant operand values
/// (indices, divisors, Dropout training_mode, BatchNormalization parameter
/// lengths). \returns InvalidArgument naming the node.
absl::Status checkNodeOperands(const Node &node);

/// Checks that no static result in \p types exceeds the tensor size limit
/// of ir/Tensor.h (kMaxTensorElements / kMaxTensorBytes).
absl::Status checkResultSizes(const Node &node, const std::vector<TensorType> &types);

}  // namespace fusec::ir::shape

#endif  // FUSEC_IR_SHAPE_SHAPEINFERRER_H
