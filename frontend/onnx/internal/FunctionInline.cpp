//===- FunctionInline.cpp - Model-local functions expanded in place -------===//
#include "frontend/onnx/internal/FunctionInline.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "google/protobuf/unknown_field_set.h"
#include "absl/strings/str_cat.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::frontend::internal {
namespace {

bool isOnnxDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }
std::string domainKey(const std::string &d) { return isOnnxDomain(d) ? "" : d; }

constexpr int kMaxDepth = 64;
/// Nodes that inlining local functions may add to a model: the depth limit
/// alone does not bound the size (40 functions each calling the next twice
/// are 2^40 nodes from a 3 KB file).
constexpr int kMaxInlinedNodes = 1 << 18;

/// FunctionProto.attribute_proto (field 11, IR version 9: attributes with
/// default values). Debian's onnx.proto (1.12) predates the field, so the
/// parser keeps it among the unknown fields; it is read from there.
std::vector<onnx::AttributeProto> attributeDefaults(const onnx::FunctionProto &f) {
  constexpr int kAttributeProtoField = 11;
  std::vector<onnx::AttributeProto> out;
  const google::protobuf::UnknownFieldSet &unknown = f.GetReflection()->GetUnknownFields(f);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &uf = unknown.field(i);
    if (uf.number() != kAttributeProtoField ||
        uf.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::AttributeProto a;
    if (a.ParseFromString(uf.length_delimited()) && !a.name().empty()) out.push_back(std::move(a));
  }
  return out;
}

class Inliner {
 public:
  explicit Inliner(onnx::ModelProto &model) : model_(model) {
    for (const auto &f : model.functions()) functions_[{domainKey(f.domain()), f.name()}] = &f;
    for (const auto &os : model.opset_import())
      if (isOnnxDomain(os.domain())) modelOpset_ = os.version();
    collectNames(model.graph());
  }

  absl::Status run() {
    if (functions_.empty()) return absl::OkStatus();
    onnx::GraphProto *g = model_.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    maxNodes_ = static_cast<size_t>(g->node_size()) + kMaxInlinedNodes;
    for (const auto &n : g->node()) FUSEC_RETURN_IF_ERROR(expand(n, 0, out));
    g->mutable_node()->Swap(&out);
    return absl::OkStatus();
  }

 private:
  const onnx::FunctionProto *callee(const onnx::NodeProto &n) const {
    auto it = functions_.find({domainKey(n.domain()), n.op_type()});
    return it == functions_.end() ? nullptr : it->second;
  }

  void collectNames(const onnx::GraphProto &g) {
    for (const auto &v : g.input()) used_.insert(v.name());
    for (const auto &v : g.output()) used_.insert(v.name());
    for (const auto &t : g.initializer()) used_.insert(t.name());
    for (const auto &n : g.node()) {
      for (const auto &o : n.output()) used_.insert(o);
      usedNodes_.insert(n.name());
    }
  }

  std::string fresh(const std::string &base, absl::flat_hash_set<std::string> &used) {
    std::string s = base;
    for (int i = 1; used.contains(s); ++i) s = absl::StrCat(base, "_", i);
    used.insert(s);
    return s;
  }

  absl::Status expand(const onnx::NodeProto &n, int depth,
                      google::protobuf::RepeatedPtrField<onnx::NodeProto> &out) {
    const onnx::FunctionProto *f = callee(n);
    if (!f) {
      *out.Add() = n;
      return absl::OkStatus();
    }
    const std::string where = absl::StrCat("call '", printable(n.name()), "' of local function '",
                                           printable(f->name()), "'");
    if (depth >= kMaxDepth)
      return absl::InvalidArgumentError(
          absl::StrCat(where, " nests deeper than ", kMaxDepth, " calls (recursive functions?)"));
    if (static_cast<size_t>(out.size()) >= maxNodes_)
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": inlining the model's local functions adds more than ", kMaxInlinedNodes,
          " nodes (functions that call each other several times grow exponentially)"));
    for (const auto &os : f->opset_import())
      if (isOnnxDomain(os.domain()) && modelOpset_ && os.version() != modelOpset_)
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": the function imports ai.onnx opset ", os.version(), ", the model opset ",
            modelOpset_, "; fusec reads one opset per model"));
    if (n.input_size() > f->input_size() || n.output_size() > f->output_size())
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has ", n.input_size(), " inputs and ", n.output_size(),
          " outputs; the function declares ", f->input_size(), " and ", f->output_size()));

    const std::string prefix = n.name().empty() ? n.op_type() : n.name();
    FUSEC_ASSIGN_OR_RETURN(
        std::vector<onnx::NodeProto> body,
        instantiateFunctionBody(
            n, prefix, *f, attributeDefaults(*f),
            [this](const std::string &b) { return fresh(b, used_); },
            [this](const std::string &b) { return fresh(b, usedNodes_); }));
    for (const onnx::NodeProto &b : body) FUSEC_RETURN_IF_ERROR(expand(b, depth + 1, out));
    return absl::OkStatus();
  }

  onnx::ModelProto &model_;
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto *> functions_;
  int64_t modelOpset_ = 0;
  size_t maxNodes_ = 0;
  absl::flat_hash_set<std::string> used_;
  absl::flat_hash_set<std::string> usedNodes_;
};

}  // namespace

absl::StatusOr<std::vector<onnx::NodeProto>> instantiateFunctionBody(
    const onnx::NodeProto &call, const std::string &prefix, const onnx::FunctionProto &f,
    const std::vector<onnx::AttributeProto> &defaults,
    const std::function<std::string(const std::string &)> &freshValue,
    const std::function<std::string(const std::string &)> &freshNode) {
  if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
    return absl::InvalidArgumentError(absl::StrCat(
        "the call has ", call.input_size(), " inputs and ", call.output_size(),
        " outputs; the function declares ", f.input_size(), " and ", f.output_size()));
  // Every output the call uses must be computed by the body (else the
  // caller's value would be "not defined by any node", far from the cause).
  {
    std::set<std::string> defined;
    for (const auto &n : f.node())
      for (const auto &o : n.output()) defined.insert(o);
    for (int i = 0; i < call.output_size(); ++i)
      if (!call.output(i).empty() && !defined.count(f.output(i)))
        return absl::InvalidArgumentError(absl::StrCat(
            "function '", f.domain(), ".", f.name(), "' does not compute its output ", i, " ('",
            f.output(i), "'), which the call uses as '", call.output(i), "'"));
  }
  // Formal -> actual value names; everything else in the body is renamed.
  std::map<std::string, std::string> rename;
  for (int i = 0; i < f.input_size(); ++i)
    rename[f.input(i)] = i < call.input_size() ? call.input(i) : std::string();
  for (int i = 0; i < f.output_size(); ++i)
    rename[f.output(i)] = i < call.output_size() ? call.output(i) : std::string();
  auto mapName = [&](const std::string &v) -> std::string {
    if (v.empty()) return v;
    auto it = rename.find(v);
    if (it != rename.end()) return it->second;
    std::string s = freshValue(absl::StrCat(prefix, "/", v));
    rename[v] = s;
    return s;
  };
  // Attribute values of this call (with the defaults behind).
  std::map<std::string, const onnx::AttributeProto *> actual;
  for (const auto &a : defaults) actual[a.name()] = &a;
  for (const auto &a : call.attribute()) actual[a.name()] = &a;

  std::vector<onnx::NodeProto> out;
  for (int bi = 0; bi < f.node_size(); ++bi) {
    onnx::NodeProto body = f.node(bi);
    for (auto &in : *body.mutable_input()) in = mapName(in);
    for (auto &o : *body.mutable_output()) o = mapName(o);
    body.set_name(freshNode(absl::StrCat(
        prefix, "/", body.name().empty() ? absl::StrCat(body.op_type(), "_", bi) : body.name())));
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
    for (const auto &a : body.attribute()) {
      if (a.ref_attr_name().empty()) {
        *attrs.Add() = a;
        continue;
      }
      auto it = actual.find(a.ref_attr_name());
      if (it == actual.end()) continue;  // unset: the op's default applies
      onnx::AttributeProto v = *it->second;
      v.set_name(a.name());
      v.clear_ref_attr_name();
      *attrs.Add() = std::move(v);
    }
    body.mutable_attribute()->Swap(&attrs);
    out.push_back(std::move(body));
  }
  return out;
}

absl::Status inlineLocalFunctions(onnx::ModelProto &model) { return Inliner(model).run(); }

}  // namespace fusec::frontend::internal
