//===- Graph.h - The tensor graph IR ----------------------------*- C++ -*-===//
//
// A Graph is a list of Nodes in topological order over SSA Values. Each Value
// has exactly one definition: a graph input, a constant (ONNX initializer or
// folded Constant node; data held in the Value), or one result of one Node.
// Nodes name their op by ONNX op_type (ops fusec adds itself use names that
// ONNX does not, documented in ir/Ops.def) and keep their ONNX node name as
// their location. An omitted optional input is a null Value*.
//
// Ownership: the Graph owns all Nodes and Values. Erasing a node does not
// erase its result Values (they stay owned, unreachable, until compact()).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_GRAPH_H
#define FUSEC_IR_GRAPH_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "ir/Attribute.h"
#include "ir/OpTable.h"
#include "ir/Tensor.h"
#include "ir/Type.h"

namespace fusec::ir {

class Node;
class Value;

/// One condition of a node's guard (an If whose condition is known only at
/// run time, imported with both branches inline): the node runs only when
/// `cond`, a bool value of one element, equals `when`. A guard is a
/// conjunction of terms, outermost If first; the terms are evaluated in
/// order and a later term is read only when the earlier ones hold (an inner
/// If's condition is computed by nodes guarded by the outer terms).
///
/// Meaning: a guarded node *may be skipped* when its guard does not hold;
/// its results are then unspecified, and only nodes with the same guard or
/// a stronger one, or a select that discards them (the If's Where), read
/// them. Dropping a guard is therefore always correct (the node just runs
/// every time); merging nodes of different guards is not (fusion refuses
/// it, passes/fusion/Fusible.cpp canFuse).
struct GuardTerm {
  Value *cond = nullptr;
  bool when = true;
  bool operator==(const GuardTerm &o) const { return cond == o.cond && when == o.when; }
  bool operator!=(const GuardTerm &o) const { return !(*this == o); }
};
using Guard = std::vector<GuardTerm>;

class Value {
 public:
  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  const TensorType &type() const { return type_; }
  TensorType &mutableType() { return type_; }
  void setType(TensorType t) { type_ = std::move(t); }

  /// The node that defines this value, or null for graph inputs and constants.
  Node *producer() const { return producer_; }
  /// Which result of producer() this is.
  int resultIndex() const { return resultIndex_; }

  /// Constant data (initializers, folded values); null if not constant.
  const Tensor *constant() const { return constant_.get(); }
  std::shared_ptr<const Tensor> constantPtr() const { return constant_; }
  bool isConstant() const { return constant_ != nullptr; }

  /// Operand slots of nodes in the graph that read this value (a node that
  /// reads it twice counts twice; graph outputs are not counted). Kept by
  /// Node::setInput(s) and every Graph mutation, so replaceAllUsesWith()
  /// costs O(uses), not O(nodes).
  int64_t numUses() const { return static_cast<int64_t>(uses_.size()); }
  /// Nodes whose guard names this value (one entry per term; not operand
  /// uses, so numUses() and userMap() do not count them).
  const std::vector<Node *> &guardUsers() const { return guardUses_; }
  /// The operand uses behind numUses(), one entry per slot, unordered.
  const std::vector<Node *> &operandUsers() const { return uses_; }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  Node *producer_ = nullptr;
  int resultIndex_ = 0;
  std::shared_ptr<const Tensor> constant_;
  std::vector<Node *> uses_;  ///< one entry per operand slot, unordered
  std::vector<Node *> guardUses_;  ///< one entry per guard term naming it
};

class Node {
 public:
  /// ONNX op_type ("MatMul") or a fusec op name.
  const std::string &opType() const { return opType_; }
  /// The op table row, or null for ops not in the table (unregistered).
  const OpInfo *op() const { return op_; }
  OpKind kind() const { return op_ ? op_->kind : OpKind::kUnregistered; }
  /// ONNX domain ("" = ai.onnx).
  const std::string &domain() const { return domain_; }
  /// Location: the ONNX node name (may be empty for nodes fusec created).
  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }
  int numInputs() const { return static_cast<int>(inputs_.size()); }
  int numOutputs() const { return static_cast<int>(outputs_.size()); }
  /// Input \p i, or null if absent (omitted optional or i out of range).
  Value *input(int i) const { return i < numInputs() ? inputs_[i] : nullptr; }
  Value *output(int i) const { return outputs_[i]; }
  /// Rewires operand \p i (or all operands) to \p v, keeping use lists.
  void setInput(int i, Value *v);
  void setInputs(std::vector<Value *> v);

  AttributeMap &attrs() { return attrs_; }
  const AttributeMap &attrs() const { return attrs_; }
  bool hasAttr(const std::string &n) const { return attrs_.count(n) != 0; }
  const Attribute *attr(const std::string &n) const {
    auto it = attrs_.find(n);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  /// Attribute \p n of the op's schema (a FUSEC_ATTR row of ir/Ops.def):
  /// its value, or the schema's default when absent or of another kind (the
  /// verifier reports a wrong kind; attrF also reads an int). Asking for an
  /// attribute that has no FUSEC_ATTR default in the schema is a fusec bug
  /// and aborts with a message naming the op and attribute.
  int64_t attrI(std::string_view n) const;
  float attrF(std::string_view n) const;
  std::string attrS(std::string_view n) const;
  /// Typed attribute getters with a caller-given default (wrong kind ->
  /// default): for FUSEC_ATTR_DERIVED / FUSEC_ATTR_REQUIRED attributes and
  /// for unregistered ops.
  int64_t getInt(const std::string &n, int64_t dflt) const;
  float getFloat(const std::string &n, float dflt) const;
  std::string getString(const std::string &n, const std::string &dflt) const;
  std::vector<int64_t> getInts(const std::string &n, std::vector<int64_t> dflt = {}) const;
  std::vector<float> getFloats(const std::string &n, std::vector<float> dflt = {}) const;
  void setAttr(const std::string &n, Attribute a) { attrs_[n] = std::move(a); }

  /// The node's guard (GuardTerm); empty: it always runs.
  const Guard &guard() const { return guard_; }
  bool guarded() const { return !guard_.empty(); }
  /// Replaces the guard, keeping Value::guardUsers() in step. Terms must
  /// name non-null values.
  void setGuard(Guard g);

  /// "'name' (OpType)" for diagnostics.
  std::string describe() const;

 private:
  friend class Graph;
  std::string opType_;
  const OpInfo *op_ = nullptr;
  std::string domain_;
  std::string name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  AttributeMap attrs_;
  Guard guard_;
};

/// "when 'c' and not 'd'" for dumps and errors; "always" for an empty guard.
std::string describeGuard(const Guard &g);

class Graph;
/// Re-derives guards that rewrites dropped (a pass that replaces guarded
/// nodes creates unguarded ones, which is correct but runs them always):
/// visiting nodes in reverse order, a node whose results are not graph
/// outputs and not guard conditions, whose operand users all have one guard
/// G, and whose own guard is a strict prefix of G, gets G, provided each
/// added term's condition is a graph input, a constant or the result of an
/// earlier node. \returns the number of nodes whose guard changed.
int64_t propagateGuards(Graph &graph);

class Graph {
 public:
  Graph() = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  /// The ai.onnx opset the model was imported with (informational).
  int64_t opset() const { return opset_; }
  void setOpset(int64_t v) { opset_ = v; }
  /// Nodes in the ONNX model this graph was imported from (Constant nodes
  /// included); 0 if not imported. --dump-fusion reports it as "onnx_nodes".
  /// Warnings the importer leaves for the user (what it decided that the
  /// model could have meant otherwise); the driver prints them.
  const std::vector<std::string> &importWarnings() const { return importWarnings_; }
  void addImportWarning(std::string w) { importWarnings_.push_back(std::move(w)); }
  int64_t onnxNodeCount() const { return onnxNodeCount_; }
  void setOnnxNodeCount(int64_t n) { onnxNodeCount_ = n; }

  /// Creates a graph input.
  Value *addInput(std::string name, TensorType type);
  /// Creates a constant value holding \p data (type derived from data).
  Value *addConstant(std::string name, Tensor data);
  Value *addConstant(std::string name, std::shared_ptr<const Tensor> data);
  /// Appends a node at the end (or before \p before if given). Result values
  /// are created with \p outputNames and unknown types (shape inference or
  /// the caller fills them in). Names must be unique; use uniqueName().
  Node *addNode(std::string opType, std::vector<Value *> inputs,
                std::vector<std::string> outputNames, AttributeMap attrs = {},
                std::string nodeName = "", Node *before = nullptr,
                std::string domain = "");
  void markOutput(Value *v) { outputs_.push_back(v); }
  void setOutputs(std::vector<Value *> v) { outputs_ = std::move(v); }

  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }
  /// Nodes in topological order.
  std::vector<Node *> nodes() const;
  int64_t numNodes() const { return static_cast<int64_t>(nodes_.size()); }
  /// All constant values still referenced by nodes or outputs, in creation order.
  std::vector<Value *> constants() const;

  /// Looks a value up by name; null if none.
  Value *findValue(const std::string &name) const;
  /// \returns \p base if unused, else the first unused of base_1, base_2,
  /// ... after the suffixes this graph already handed out for \p base
  /// (amortised O(1): a pass that asks for the same base N times costs O(N)).
  std::string uniqueName(const std::string &base) const;
  /// Renames \p v to \p name (which must be unused, see uniqueName()),
  /// keeping findValue() in step.
  void renameValue(Value *v, std::string name);

  /// Nodes that use \p v as an input (a node appears once per use).
  std::vector<Node *> users(const Value *v) const;
  /// Map from each value to the nodes that use it.
  absl::flat_hash_map<const Value *, std::vector<Node *>> userMap() const;
  bool isGraphOutput(const Value *v) const;

  /// Replaces every use of \p from (node inputs, guard terms and graph
  /// outputs) with \p to.
  /// O(uses of from + graph outputs).
  void replaceAllUsesWith(Value *from, Value *to);
  /// Removes \p n from the graph. Its results must be unused. O(nodes).
  void eraseNode(Node *n);
  /// Clears the operands of \p n, whose results must be unused, so that it
  /// no longer counts as a use of them; it stays in the graph until
  /// removeDeadNodes(). O(operands): what a rewrite loop calls on each node
  /// it made dead, so that later replacements do not carry dead users along.
  void detachDeadNode(Node *n);
  /// Makes \p v a constant holding \p data, detaching it from its producer
  /// (which the caller erases if all its results became constants).
  void setConstant(Value *v, Tensor data);
  /// Removes nodes whose results are unused and that have no side effects,
  /// and drops unreferenced values. \returns the number of nodes removed.
  int64_t removeDeadNodes();
  /// Re-sorts nodes topologically (stable). Error if there is a cycle.
  absl::Status topoSort();

 private:
  Value *newValue(std::string name);

  std::string name_ = "main";
  std::vector<std::string> importWarnings_;
  int64_t opset_ = 0;
  int64_t onnxNodeCount_ = 0;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  absl::flat_hash_map<std::string, Value *> byName_;
  /// uniqueName(): the next suffix to try per base name.
  mutable absl::flat_hash_map<std::string, int64_t> nextSuffix_;
};

}  // namespace fusec::ir

#endif  // FUSEC_IR_GRAPH_H
