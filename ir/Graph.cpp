//===- Graph.cpp - The tensor graph IR ------------------------------------===//
#include "ir/Graph.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace fusec::ir {

//===----------------------------------------------------------------------===//
// Node
//===----------------------------------------------------------------------===//

int64_t Node::getInt(const std::string &n, int64_t dflt) const {
  const Attribute *a = attr(n);
  return a && a->kind() == Attribute::Kind::kInt ? a->i() : dflt;
}
float Node::getFloat(const std::string &n, float dflt) const {
  const Attribute *a = attr(n);
  if (!a) return dflt;
  if (a->kind() == Attribute::Kind::kFloat) return a->f();
  if (a->kind() == Attribute::Kind::kInt) return static_cast<float>(a->i());
  return dflt;
}
std::string Node::getString(const std::string &n, const std::string &dflt) const {
  const Attribute *a = attr(n);
  return a && a->kind() == Attribute::Kind::kString ? a->s() : dflt;
}
std::vector<int64_t> Node::getInts(const std::string &n, std::vector<int64_t> dflt) const {
  const Attribute *a = attr(n);
  return a && a->kind() == Attribute::Kind::kInts ? a->ints() : dflt;
}
std::vector<float> Node::getFloats(const std::string &n, std::vector<float> dflt) const {
  const Attribute *a = attr(n);
  return a && a->kind() == Attribute::Kind::kFloats ? a->floats() : dflt;
}

namespace {

/// The schema default of attribute \p n of \p node (see Node::attrI).
const Attribute &schemaDefault(const Node &node, std::string_view n) {
  const AttrSpec *spec = findAttrSpec(node.kind(), n);
  if (!spec || spec->presence != AttrSpec::Default::kValue) {
    std::fprintf(stderr, "fusec bug: attribute '%.*s' of %s has no default in ir/Ops.def\n",
                 static_cast<int>(n.size()), n.data(), node.opType().c_str());
    std::abort();
  }
  return spec->value;
}

}  // namespace

int64_t Node::attrI(std::string_view n) const {
  const Attribute &d = schemaDefault(*this, n);
  return getInt(std::string(n), d.kind() == Attribute::Kind::kInt ? d.i() : 0);
}
float Node::attrF(std::string_view n) const {
  const Attribute &d = schemaDefault(*this, n);
  return getFloat(std::string(n), d.kind() == Attribute::Kind::kFloat ? d.f() : 0.0f);
}
std::string Node::attrS(std::string_view n) const {
  const Attribute &d = schemaDefault(*this, n);
  return getString(std::string(n), d.kind() == Attribute::Kind::kString ? d.s() : std::string());
}

std::string Node::describe() const {
  return absl::StrCat("'", name_, "' (", domain_.empty() ? "" : domain_ + ".", opType_, ")");
}

namespace {

void addUse(Value *v, Node *n, std::vector<Node *> &uses) {
  if (v) uses.push_back(n);
}

/// Removes one entry of \p n from \p uses (order is not kept).
void removeUse(std::vector<Node *> &uses, const Node *n) {
  auto it = std::find(uses.begin(), uses.end(), n);
  if (it == uses.end()) return;
  *it = uses.back();
  uses.pop_back();
}

}  // namespace

void Node::setInput(int i, Value *v) {
  if (inputs_[i]) removeUse(inputs_[i]->uses_, this);
  inputs_[i] = v;
  if (v) addUse(v, this, v->uses_);
}

void Node::setInputs(std::vector<Value *> v) {
  for (Value *in : inputs_)
    if (in) removeUse(in->uses_, this);
  inputs_ = std::move(v);
  for (Value *in : inputs_)
    if (in) addUse(in, this, in->uses_);
}

void Node::setGuard(Guard g) {
  for (const GuardTerm &t : guard_)
    if (t.cond) removeUse(t.cond->guardUses_, this);
  guard_ = std::move(g);
  for (const GuardTerm &t : guard_)
    if (t.cond) t.cond->guardUses_.push_back(this);
}

std::string describeGuard(const Guard &g) {
  if (g.empty()) return "always";
  std::string out = "when ";
  for (size_t i = 0; i < g.size(); ++i)
    absl::StrAppend(&out, i ? " and " : "", g[i].when ? "" : "not ",
                    "'", g[i].cond ? g[i].cond->name() : "?", "'");
  return out;
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Value *Graph::newValue(std::string name) {
  values_.push_back(std::make_unique<Value>());
  Value *v = values_.back().get();
  v->name_ = std::move(name);
  if (!v->name_.empty()) byName_[v->name_] = v;
  return v;
}

Value *Graph::addInput(std::string name, TensorType type) {
  Value *v = newValue(std::move(name));
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

Value *Graph::addConstant(std::string name, Tensor data) {
  return addConstant(std::move(name), std::make_shared<const Tensor>(std::move(data)));
}

Value *Graph::addConstant(std::string name, std::shared_ptr<const Tensor> data) {
  Value *v = newValue(std::move(name));
  v->type_ = TensorType::fromShape(data->dtype(), data->shape());
  v->constant_ = std::move(data);
  return v;
}

Node *Graph::addNode(std::string opType, std::vector<Value *> inputs,
                     std::vector<std::string> outputNames, AttributeMap attrs,
                     std::string nodeName, Node *before, std::string domain) {
  auto node = std::make_unique<Node>();
  Node *n = node.get();
  n->opType_ = std::move(opType);
  n->domain_ = std::move(domain);
  n->op_ = n->domain_.empty() || n->domain_ == "ai.onnx" ? lookupOp(n->opType_) : nullptr;
  n->name_ = std::move(nodeName);
  n->inputs_ = std::move(inputs);
  for (Value *in : n->inputs_)
    if (in) in->uses_.push_back(n);
  n->attrs_ = std::move(attrs);
  for (size_t i = 0; i < outputNames.size(); ++i) {
    Value *v = newValue(std::move(outputNames[i]));
    v->producer_ = n;
    v->resultIndex_ = static_cast<int>(i);
    n->outputs_.push_back(v);
  }
  if (before) {
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [&](const std::unique_ptr<Node> &p) { return p.get() == before; });
    nodes_.insert(it, std::move(node));
  } else {
    nodes_.push_back(std::move(node));
  }
  return n;
}

std::vector<Node *> Graph::nodes() const {
  std::vector<Node *> out;
  out.reserve(nodes_.size());
  for (const auto &n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value *> Graph::constants() const {
  absl::flat_hash_set<const Value *> used(outputs_.begin(), outputs_.end());
  for (const auto &n : nodes_) {
    for (Value *v : n->inputs_)
      if (v) used.insert(v);
    for (const GuardTerm &t : n->guard_)
      if (t.cond) used.insert(t.cond);
  }
  std::vector<Value *> out;
  for (const auto &v : values_)
    if (v->constant_ && used.contains(v.get())) out.push_back(v.get());
  return out;
}

Value *Graph::findValue(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

std::string Graph::uniqueName(const std::string &base) const {
  if (!byName_.contains(base)) return base;
  int64_t &next = nextSuffix_[base];
  for (int64_t i = std::max<int64_t>(next, 1);; ++i) {
    std::string n = absl::StrCat(base, "_", i);
    if (!byName_.contains(n)) {
      next = i + 1;
      return n;
    }
  }
}

void Graph::renameValue(Value *v, std::string name) {
  auto it = byName_.find(v->name_);
  if (it != byName_.end() && it->second == v) byName_.erase(it);
  v->name_ = std::move(name);
  if (!v->name_.empty()) byName_[v->name_] = v;
}

std::vector<Node *> Graph::users(const Value *v) const {
  std::vector<Node *> out;
  for (const auto &n : nodes_)
    for (Value *in : n->inputs_)
      if (in == v) out.push_back(n.get());
  return out;
}

absl::flat_hash_map<const Value *, std::vector<Node *>> Graph::userMap() const {
  absl::flat_hash_map<const Value *, std::vector<Node *>> m;
  for (const auto &n : nodes_)
    for (Value *in : n->inputs_)
      if (in) m[in].push_back(n.get());
  return m;
}

bool Graph::isGraphOutput(const Value *v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  if (from == to || !from) return;
  std::vector<Node *> users = std::move(from->uses_);
  from->uses_.clear();
  for (Node *n : users)  // a node listed once per slot: later visits find nothing left
    for (Value *&in : n->inputs_)
      if (in == from) {
        in = to;
        if (to) to->uses_.push_back(n);
      }
  std::vector<Node *> guarded = std::move(from->guardUses_);
  from->guardUses_.clear();
  for (Node *n : guarded)
    for (GuardTerm &t : n->guard_)
      if (t.cond == from) {
        t.cond = to;
        if (to) to->guardUses_.push_back(n);
      }
  for (Value *&o : outputs_)
    if (o == from) o = to;
}

void Graph::eraseNode(Node *n) {
  for (Value *in : n->inputs_)
    if (in) removeUse(in->uses_, n);
  n->setGuard({});
  for (Value *v : n->outputs_)
    if (v->producer_ == n) v->producer_ = nullptr;
  nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(),
                              [&](const std::unique_ptr<Node> &p) { return p.get() == n; }),
               nodes_.end());
}

void Graph::detachDeadNode(Node *n) {
  n->setInputs({});
  n->setGuard({});
}

void Graph::setConstant(Value *v, Tensor data) {
  v->type_ = TensorType::fromShape(data.dtype(), data.shape());
  v->constant_ = std::make_shared<const Tensor>(std::move(data));
  v->producer_ = nullptr;
}

int64_t Graph::removeDeadNodes() {
  absl::flat_hash_set<const Value *> live(outputs_.begin(), outputs_.end());
  std::vector<bool> keep(nodes_.size(), false);
  for (int64_t i = static_cast<int64_t>(nodes_.size()) - 1; i >= 0; --i) {
    Node *n = nodes_[i].get();
    bool used = false;
    for (Value *v : n->outputs_)
      if (v->producer_ == n && live.contains(v)) used = true;
    if (!used) continue;
    keep[i] = true;
    for (Value *in : n->inputs_)
      if (in) live.insert(in);
    for (const GuardTerm &t : n->guard_)
      if (t.cond) live.insert(t.cond);
  }
  int64_t removed = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(nodes_[i]));
    } else {
      for (Value *in : nodes_[i]->inputs_)
        if (in) removeUse(in->uses_, nodes_[i].get());
      nodes_[i]->setGuard({});
      for (Value *v : nodes_[i]->outputs_) v->producer_ = nullptr;
      ++removed;
    }
  }
  nodes_ = std::move(kept);
  // Drop values nothing refers to any more (keep graph inputs).
  absl::flat_hash_set<const Value *> referenced(inputs_.begin(), inputs_.end());
  referenced.insert(live.begin(), live.end());
  for (const auto &n : nodes_)
    for (Value *v : n->outputs_) referenced.insert(v);
  std::vector<std::unique_ptr<Value>> keptValues;
  for (auto &v : values_) {
    if (referenced.contains(v.get())) {
      keptValues.push_back(std::move(v));
    } else if (!v->name_.empty()) {
      auto it = byName_.find(v->name_);
      if (it != byName_.end() && it->second == v.get()) byName_.erase(it);
    }
  }
  values_ = std::move(keptValues);
  return removed;
}

absl::Status Graph::topoSort() {
  absl::flat_hash_map<const Node *, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  // Kahn's algorithm, always taking the earliest ready node (stable).
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    absl::flat_hash_set<const Node *> deps;
    for (Value *in : nodes_[i]->inputs_)
      if (in && in->producer_ && index.contains(in->producer_)) deps.insert(in->producer_);
    for (const GuardTerm &t : nodes_[i]->guard_)
      if (t.cond && t.cond->producer_ && index.contains(t.cond->producer_))
        deps.insert(t.cond->producer_);
    for (const Node *d : deps) {
      consumers[index[d]].push_back(i);
      ++pending[i];
    }
  }
  std::vector<size_t> order;
  std::vector<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    size_t i = *it;
    ready.erase(it);
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.push_back(c);
  }
  if (order.size() != nodes_.size())
    return absl::InvalidArgumentError("graph has a cycle");
  std::vector<std::unique_ptr<Node>> sorted;
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
  return absl::OkStatus();
}

int64_t propagateGuards(Graph &graph) {
  const std::vector<Node *> nodes = graph.nodes();
  absl::flat_hash_map<const Node *, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  int64_t changed = 0;
  for (size_t i = nodes.size(); i-- > 0;) {
    Node *n = nodes[i];
    const Guard *common = nullptr;
    bool ok = n->numOutputs() > 0;
    for (Value *v : n->outputs()) {
      if (!ok) break;
      if (!v || graph.isGraphOutput(v) || !v->guardUsers().empty() || v->numUses() == 0) {
        ok = false;
        break;
      }
      for (Node *u : v->operandUsers()) {
        if (!common) common = &u->guard();
        if (u->guard() != *common) {
          ok = false;
          break;
        }
      }
    }
    if (!ok || !common || common->size() <= n->guard().size()) continue;
    if (!std::equal(n->guard().begin(), n->guard().end(), common->begin())) continue;
    for (size_t t = n->guard().size(); t < common->size() && ok; ++t) {
      const Value *c = (*common)[t].cond;
      if (c->producer() && (!index.contains(c->producer()) || index.at(c->producer()) >= i)) ok = false;
    }
    if (!ok) continue;
    n->setGuard(*common);
    ++changed;
  }
  return changed;
}

}  // namespace fusec::ir
