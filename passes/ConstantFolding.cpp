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
// Guards (ir/Graph.h GuardTerm, an If whose condition was not known at
// import): a term whose condition has become constant is settled. A term
// that holds is dropped; a node with a term that fails never runs, so it
// keeps its guard (never read: canonicalize replaces the If's Where on a
// constant condition by the taken operand, and dce then removes the branch
// not taken). "const-fold.guards" counts the terms dropped.
//
// Nodes the interpreter cannot evaluate, or whose evaluation fails (e.g. an
// index out of range), are left in place; the error surfaces when the graph
// runs. Statistics: "const-fold.folded" (nodes folded).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <memory>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "interp/Interpreter.h"
#include "ir/OpTable.h"
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

class ConstantFolding : public Pass {
 public:
  const char *name() const override { return "const-fold"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    int64_t folded = 0;
    int64_t settled = 0;
    for (int round = 0; round < kMaxRounds; ++round) {
      settled += settleGuards(graph);
      FUSEC_ASSIGN_OR_RETURN(int64_t n, foldOnce(graph, ctx.noFold));
      if (n == 0) break;
      folded += n;
      FUSEC_RETURN_IF_ERROR_CTX(ir::inferShapes(graph), "re-inferring shapes after folding");
    }
    int64_t removed = graph.removeDeadNodes();
    settled += settleGuards(graph);
    ctx.statistics["const-fold.folded"] += folded;
    if (settled) ctx.statistics["const-fold.guards"] += settled;
    return folded > 0 || removed > 0 || settled > 0;
  }

 private:
  /// Drops the guard terms whose condition is a constant that holds (see
  /// the file comment). \returns how many were dropped.
  static int64_t settleGuards(ir::Graph &graph) {
    int64_t dropped = 0;
    for (ir::Node *node : graph.nodes()) {
      if (!node->guarded()) continue;
      ir::Guard kept;
      for (const ir::GuardTerm &t : node->guard()) {
        const ir::Tensor *c = t.cond->constant();
        if (c && c->numElements() == 1 && (c->getDouble(0) != 0.0) == t.when) {
          ++dropped;
          continue;
        }
        kept.push_back(t);
      }
      if (kept.size() != node->guard().size()) node->setGuard(std::move(kept));
    }
    return dropped;
  }

  /// One sweep: evaluates what can be folded, then commits. \returns the
  /// number of nodes folded.
  absl::StatusOr<int64_t> foldOnce(ir::Graph &graph, const std::set<std::string> &noFold) {
    absl::flat_hash_map<const ir::Value *, std::shared_ptr<const ir::Tensor>> env;
    std::vector<ir::Node *> foldedNodes, keptNodes;
    auto valueOf = [&](const ir::Value *v) -> const ir::Tensor * {
      auto it = env.find(v);
      if (it != env.end()) return it->second.get();
      return v->constant();
    };
    for (ir::Node *node : graph.nodes()) {
      std::vector<ir::Tensor> results;
      bool kept = false;
      for (const ir::Value *out : node->outputs()) kept = kept || (out && noFold.count(out->name()));
      if (node->kind() == ir::OpKind::kShape || node->kind() == ir::OpKind::kSize) {
        std::optional<ir::Tensor> t = ir::foldShapeOf(*node);
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
      (kept ? keptNodes : foldedNodes).push_back(node);
    }
    // A kept node (PassContext::noFold: data a dynamic-shape compile
    // computes at run time) stays; where its value decides only a shape
    // (a metadata operand: a Range's limit, a Reshape's target) that use
    // reads a folded copy, as for any other foldable value.
    int64_t rewired = 0;
    if (!keptNodes.empty()) {
      for (ir::Node *user : graph.nodes())
        for (int i = 0; i < user->numInputs(); ++i) {
          ir::Value *in = user->input(i);
          // Range's operands decide its length (and, folded per binding,
          // its values: start + i * delta).
          const bool shapeOnly = ir::isMetadataOperand(user->kind(), i) || user->kind() == ir::OpKind::kRange;
          if (!in || !shapeOnly || in->isConstant()) continue;
          auto it = env.find(in);
          if (it == env.end() || std::find(keptNodes.begin(), keptNodes.end(), in->producer()) == keptNodes.end())
            continue;
          std::string name = in->name() + "_shape";
          for (int k = 1; graph.findValue(name); ++k) name = absl::StrCat(in->name(), "_shape", k);
          user->setInput(i, graph.addConstant(name, it->second));
          ++rewired;
        }
    }
    for (ir::Node *node : foldedNodes) {
      for (ir::Value *out : node->outputs()) graph.setConstant(out, *env[out]);
      graph.eraseNode(node);
    }
    return static_cast<int64_t>(foldedNodes.size()) + rewired;
  }
};

}  // namespace

std::unique_ptr<Pass> createConstantFolding() { return std::make_unique<ConstantFolding>(); }

}  // namespace fusec::passes
