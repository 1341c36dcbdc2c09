//===- ConstantFolding.cpp - Fold ops whose operands are constants -------===//
//
// Replaces every node whose inputs are all constants by its results, computed
// with the reference interpreter (interp::evaluateNode), so each op has one
// definition. Shape and Size fold from the input's *type* when the dims they
// read are static, even though the input itself is not constant; together
// with the shape bindings of shape-specialize this makes the shape and mask
// arithmetic exporters emit (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape; Range / Equal / Where / Expand / ConstantOfShape / Trilu / Cast
// for causal and padding masks) vanish.
//
// Algorithm: a sweep evaluates foldable nodes in topological order into a
// side table (so one sweep folds whole chains), then turns all their results
// into constants at once (the result Values are kept, so folded values keep
// their names) and erases the nodes. Shape inference then re-runs, since a
// folded Reshape target or Expand shape can make downstream dims static and
// new Shape nodes foldable; sweeps repeat until nothing folds. Finally dead
// nodes are removed.
//
// Size limit: a result is materialised only if it has at most
// kMaxFoldElements (1 << 22, 16 MiB of f32) elements, or no more elements
// than the node's constant inputs together (folding that does not grow the
// weights, e.g. Transpose or Cast of a weight, is always allowed). 1 << 22
// keeps causal masks of [1,1,S,S] foldable up to S = 2048 while refusing to
// expand weights to a batch-sized broadcast.
//
// Nodes the interpreter cannot evaluate, or whose evaluation fails (e.g. an
// index out of range), are left in place; the error surfaces when the graph
// runs. Statistics: "const-fold.folded" (nodes folded).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "interp/Interpreter.h"
#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

/// Results larger than this (in elements) are not materialised, unless they
/// are no larger than the node's constant inputs. See the file comment.
constexpr int64_t kMaxFoldElements = int64_t{1} << 22;
/// Upper bound on fold / re-infer rounds (each round folds whole chains;
/// more than a few rounds means shapes keep refining, which is bounded by
/// the graph's depth).
constexpr int kMaxRounds = 64;

/// Folds Shape / Size from the input's static dims. \returns nullopt if the
/// dims read are not all static.
std::optional<ir::Tensor> foldShapeOf(const ir::Node &node) {
  const ir::Value *in = node.input(0);
  if (!in) return std::nullopt;
  const ir::TensorType &ty = in->type();
  if (!ty.rankKnown) return std::nullopt;
  int64_t rank = ty.rank();
  if (node.kind() == ir::OpKind::kSize) {
    std::optional<int64_t> n = ty.numElements();
    if (!n) return std::nullopt;
    return ir::Tensor::scalarInt(ir::DType::kI64, *n);
  }
  // Shape (opset 15+): start / end, negative counts from the back, clamped.
  auto clampAxis = [&](int64_t a) {
    if (a < 0) a += rank;
    return std::clamp<int64_t>(a, 0, rank);
  };
  int64_t start = clampAxis(node.attrI("start"));
  int64_t end = node.hasAttr("end") ? clampAxis(node.getInt("end", rank)) : rank;
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) {
    if (!ty.shape[d].isStatic()) return std::nullopt;
    dims.push_back(ty.shape[d].value);
  }
  return ir::Tensor::vectorI64(dims);
}

class ConstantFolding : public Pass {
 public:
  const char *name() const override { return "const-fold"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    int64_t folded = 0;
    for (int round = 0; round < kMaxRounds; ++round) {
      FUSEC_ASSIGN_OR_RETURN(int64_t n, foldOnce(graph));
      if (n == 0) break;
      folded += n;
      FUSEC_RETURN_IF_ERROR_CTX(ir::inferShapes(graph), "re-inferring shapes after folding");
    }
    int64_t removed = graph.removeDeadNodes();
    ctx.statistics["const-fold.folded"] += folded;
    return folded > 0 || removed > 0;
  }

 private:
  /// One sweep: evaluates what can be folded, then commits. \returns the
  /// number of nodes folded.
  absl::StatusOr<int64_t> foldOnce(ir::Graph &graph) {
    absl::flat_hash_map<const ir::Value *, std::shared_ptr<const ir::Tensor>> env;
    std::vector<ir::Node *> foldedNodes;
    auto valueOf = [&](const ir::Value *v) -> const ir::Tensor * {
      auto it = env.find(v);
      if (it != env.end()) return it->second.get();
      return v->constant();
    };
    for (ir::Node *node : graph.nodes()) {
      std::vector<ir::Tensor> results;
      if (node->kind() == ir::OpKind::kShape || node->kind() == ir::OpKind::kSize) {
        std::optional<ir::Tensor> t = foldShapeOf(*node);
        if (!t) continue;
        results.push_back(std::move(*t));
      } else {
        if (!interp::supports(node->kind())) continue;
        std::vector<const ir::Tensor *> args;
        bool allConstant = true;
        int64_t inputElements = 0;
        for (const ir::Value *in : node->inputs()) {
          const ir::Tensor *t = in ? valueOf(in) : nullptr;
          if (in && !t) {
            allConstant = false;
            break;
          }
          if (t) inputElements += t->numElements();
          args.push_back(t);
        }
        if (!allConstant) continue;
        int64_t limit = std::max(kMaxFoldElements, inputElements);
        bool tooLarge = false;
        for (const ir::Value *out : node->outputs()) {
          std::optional<int64_t> n = out->type().numElements();
          if (n && *n > limit) tooLarge = true;
        }
        if (tooLarge) continue;
        absl::StatusOr<std::vector<ir::Tensor>> r = interp::evaluateNode(*node, args);
        if (!r.ok() || r->size() < node->outputs().size()) continue;
        for (const ir::Tensor &t : *r)
          if (t.numElements() > limit) tooLarge = true;
        if (tooLarge) continue;
        results = std::move(*r);
      }
      for (size_t i = 0; i < node->outputs().size(); ++i)
        env[node->outputs()[i]] = std::make_shared<const ir::Tensor>(std::move(results[i]));
      foldedNodes.push_back(node);
    }
    for (ir::Node *node : foldedNodes) {
      for (ir::Value *out : node->outputs()) graph.setConstant(out, *env[out]);
      graph.eraseNode(node);
    }
    return static_cast<int64_t>(foldedNodes.size());
  }
};

}  // namespace

std::unique_ptr<Pass> createConstantFolding() { return std::make_unique<ConstantFolding>(); }

}  // namespace fusec::passes
