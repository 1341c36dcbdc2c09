//===- Verifier.cpp - Structural and type checks of a Graph ---------------===//
//
// Checks, in order: unique value names (unnamed values are allowed; the
// printer names them), every node input defined before use (graph inputs,
// constants, results of earlier nodes), every graph output defined, each
// result's producer link, arity within the op table's [min, max] for inputs
// and results (required inputs present), attribute kinds against the op's
// schema in ir/Ops.def (an int where a float is expected is accepted, as
// ONNX exporters write whole floats as ints; attributes outside the schema
// are kept and not checked: ONNX models carry attributes fusec ignores),
// and that result types agree with
// what shape inference computes (computeNodeTypes; the graph is not changed):
// dtypes when both are defined, ranks when both are known, dims when static
// on both sides; and every guard term (ir::Guard) names a bool value of
// one element defined before the node.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/ShapeInference.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::ir {

namespace {

absl::Status nodeError(const Node &n, const std::string &msg) {
  return absl::InvalidArgumentError(absl::StrCat("node ", n.describe(), ": ", msg));
}

std::string arityText(int lo, int hi) {
  if (hi < 0) return absl::StrCat("at least ", lo);
  if (lo == hi) return absl::StrCat(lo);
  return absl::StrCat(lo, " to ", hi);
}

absl::Status checkArity(const Node &n) {
  const OpInfo *op = n.op();
  if (!op) return absl::OkStatus();
  int ni = n.numInputs(), no = n.numOutputs();
  if (ni < op->minInputs || (op->maxInputs >= 0 && ni > op->maxInputs))
    return nodeError(n, absl::StrCat("has ", ni, " inputs, expected ",
                                     arityText(op->minInputs, op->maxInputs)));
  if (no < op->minOutputs || (op->maxOutputs >= 0 && no > op->maxOutputs))
    return nodeError(n, absl::StrCat("has ", no, " results, expected ",
                                     arityText(op->minOutputs, op->maxOutputs)));
  for (int i = 0; i < op->minInputs; ++i)
    if (!n.input(i)) return nodeError(n, absl::StrCat("required input ", i, " is missing"));
  return absl::OkStatus();
}

absl::Status checkAttributes(const Node &n) {
  for (const auto &[name, a] : n.attrs())
    if (absl::Status s = verifyAttributeKind(n.kind(), name, a); !s.ok())
      return nodeError(n, std::string(s.message()));
  return absl::OkStatus();
}

absl::Status checkTypes(const Node &n) {
  if (!n.op()) return absl::OkStatus();
  absl::StatusOr<std::vector<TensorType>> inferred = computeNodeTypes(n);
  if (!inferred.ok()) return inferred.status();
  for (int i = 0; i < n.numOutputs() && i < static_cast<int>(inferred->size()); ++i) {
    const TensorType &have = n.output(i)->type();
    const TensorType &want = (*inferred)[i];
    auto mismatch = [&]() {
      return nodeError(n, absl::StrCat("result ", i, " (%", n.output(i)->name(), ") has type ",
                                       have.str(), " but shape inference gives ", want.str()));
    };
    if (have.dtype != DType::kUndefined && want.dtype != DType::kUndefined &&
        have.dtype != want.dtype)
      return mismatch();
    if (!have.rankKnown || !want.rankKnown) continue;
    if (have.rank() != want.rank()) return mismatch();
    for (int64_t d = 0; d < have.rank(); ++d)
      if (have.shape[d].isStatic() && want.shape[d].isStatic() &&
          have.shape[d].value != want.shape[d].value)
        return mismatch();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status verifyNodeArity(const Node &node) { return checkArity(node); }

absl::Status verifyAttributeKind(OpKind kind, std::string_view name, const Attribute &attr) {
  const AttrSpec *spec = findAttrSpec(kind, name);
  if (!spec || attr.kind() == spec->kind) return absl::OkStatus();
  if (spec->kind == Attribute::Kind::kFloat && attr.kind() == Attribute::Kind::kInt)
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("attribute '", printable(name), "' is ",
                                                 attributeKindName(attr.kind()), ", expected ",
                                                 attributeKindName(spec->kind)));
}

absl::Status verifyGraph(const Graph &graph) {
  absl::flat_hash_set<std::string> names;
  absl::flat_hash_set<const Value *> defined;
  auto define = [&](const Value *v) -> absl::Status {
    if (!v->name().empty() && !names.insert(v->name()).second)
      return absl::InvalidArgumentError(
          absl::StrCat("value name '", v->name(), "' is defined more than once"));
    defined.insert(v);
    return absl::OkStatus();
  };
  for (const Value *v : graph.inputs()) FUSEC_RETURN_IF_ERROR(define(v));
  for (const Value *v : graph.constants()) FUSEC_RETURN_IF_ERROR(define(v));

  for (const Node *n : graph.nodes()) {
    for (int i = 0; i < n->numInputs(); ++i) {
      const Value *v = n->inputs()[i];
      if (!v || defined.contains(v) || v->isConstant()) continue;
      return nodeError(*n, absl::StrCat("input ", i, " (%", v->name(),
                                        ") is used before it is defined"));
    }
    for (const GuardTerm &t : n->guard()) {
      if (!t.cond) return nodeError(*n, "a guard term names no value");
      if (!defined.contains(t.cond) && !t.cond->isConstant())
        return nodeError(*n, absl::StrCat("guard %", t.cond->name(), " is used before it is defined"));
      const TensorType &ct = t.cond->type();
      if (ct.dtype != DType::kBool || ct.numElements().value_or(-1) != 1)
        return nodeError(*n, absl::StrCat("guard %", t.cond->name(), " has type ", ct.str(),
                                          "; a guard is a bool of one element"));
    }
    FUSEC_RETURN_IF_ERROR(checkArity(*n));
    FUSEC_RETURN_IF_ERROR(checkAttributes(*n));
    for (int i = 0; i < n->numOutputs(); ++i) {
      const Value *v = n->output(i);
      if (!v) return nodeError(*n, absl::StrCat("result ", i, " is null"));
      if (v->producer() != n || v->resultIndex() != i)
        return nodeError(*n, absl::StrCat("result ", i, " (%", v->name(),
                                          ") does not point back to its node"));
      if (defined.contains(v))
        return nodeError(*n, absl::StrCat("result %", v->name(), " is defined twice"));
      FUSEC_RETURN_IF_ERROR(define(v));
    }
    FUSEC_RETURN_IF_ERROR(checkTypes(*n));
  }
  for (const Value *v : graph.outputs()) {
    if (!v) return absl::InvalidArgumentError("graph output is null");
    if (!defined.contains(v) && !v->isConstant())
      return absl::InvalidArgumentError(
          absl::StrCat("graph output %", v->name(), " is not defined"));
  }
  return absl::OkStatus();
}

}  // namespace fusec::ir
