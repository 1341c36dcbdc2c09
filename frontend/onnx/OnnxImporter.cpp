//===- OnnxImporter.cpp - ONNX ModelProto to ir::Graph --------------------===//
//
// Parses the model with the protobuf classes only (no ONNX checker or shape
// inference: Debian's ONNX 1.12 rejects IR version 10 / opset 18+ models),
// checks every node against the op table and reports all unsupported ones at
// once, then builds the graph node by node: initializers and Constant nodes
// become constant values, older opset forms are rewritten to the op table's
// form (internal/OpsetUpgrade.cpp), and each node's result types are inferred
// (ir/ShapeInference.h) and refined by the model's value_info where that says
// more.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/OnnxImporter.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx/internal/ContribOps.h"
#include "frontend/onnx/internal/FunctionExpansion.h"
#include "frontend/onnx/internal/FunctionInline.h"
#include "frontend/onnx/internal/OnnxFunctions.h"
#include "frontend/onnx/internal/OnnxTensor.h"
#include "frontend/onnx/internal/OpsetUpgrade.h"
#include "frontend/onnx/internal/RecurrentOps.h"
#include "google/protobuf/io/coded_stream.h"
#include "interp/Interpreter.h"
#include "ir/ShapeInference.h"
#include "ir/Verifier.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::frontend {

namespace {

namespace fs = std::filesystem;
using internal::NodeSpec;
using internal::onnxDTypeName;
using ir::Attribute;
using ir::TensorType;

/// The ai.onnx opsets the op table's forms cover. Opset 11 is where Pad,
/// Clip, Slice and Range took their input forms; 28 is the newest opset of
/// the current onnx release (1.23). Between 23 and 28 the ops of the op table
/// changed only in ways the table does not see: new element types (float8,
/// int2/uint2, float6: refused as dtypes), Cast's round_mode (applies only to
/// float8e8m0 targets), Range's stash_type (accumulation type for f16/bf16;
/// fusec computes Range exactly in f64 and rounds once, so a 16-bit stash_type
/// is refused in OpsetUpgrade.cpp) and Mod's spelled-out IEEE special cases
/// (what the interpreter already does). Checked with onnx.defs.get_schema over
/// every row of ir/Ops.def. Function ops (not rows) are expanded per version
/// from that version's own body (internal/OnnxFunctions.h).
constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 28;
/// Models of ai.onnx opsets 1 to 10 are read as opset 11 when every ai.onnx
/// node's op has the same version at the model's opset as at opset 11 (the
/// linked onnx library's schemas say so: OpSchemaRegistry::Schema(op,
/// opset)->SinceVersion(); an op whose version did not change has the same
/// semantics by ONNX's versioning rules); each node whose op changed in
/// between is named (Importer::checkLegacyOpset).
constexpr int64_t kMinLegacyOpset = 1;

/// The ONNX IR versions fusec reads: 3 introduced opset_import (older files
/// have no way to say which op semantics they mean); 14 is the newest the
/// current onnx release writes (onnx 1.23). A newer IR version may carry
/// fields this parser would silently drop, so it is refused.
constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = 14;

/// "'name'" with the name made safe to print (support/Escape.h).
std::string quotedName(const std::string &s) { return absl::StrCat("'", printable(s), "'"); }

/// Ops of the op table that fusec's passes create and that a model may not
/// use (their semantics are fusec's, not ONNX's).
bool isInternalOp(const ir::OpInfo &info) { return info.kind == ir::OpKind::kFusedAttention; }

bool isOnnxDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

/// Maps any string onto [A-Za-z_][A-Za-z0-9_]*.
std::string toIdentifier(const std::string &s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

const char *attributeTypeName(onnx::AttributeProto::AttributeType t) {
  switch (t) {
    case onnx::AttributeProto::FLOAT: return "FLOAT";
    case onnx::AttributeProto::INT: return "INT";
    case onnx::AttributeProto::STRING: return "STRING";
    case onnx::AttributeProto::TENSOR: return "TENSOR";
    case onnx::AttributeProto::GRAPH: return "GRAPH";
    case onnx::AttributeProto::SPARSE_TENSOR: return "SPARSE_TENSOR";
    case onnx::AttributeProto::TYPE_PROTO: return "TYPE_PROTO";
    case onnx::AttributeProto::FLOATS: return "FLOATS";
    case onnx::AttributeProto::INTS: return "INTS";
    case onnx::AttributeProto::STRINGS: return "STRINGS";
    case onnx::AttributeProto::TENSORS: return "TENSORS";
    case onnx::AttributeProto::GRAPHS: return "GRAPHS";
    case onnx::AttributeProto::SPARSE_TENSORS: return "SPARSE_TENSORS";
    case onnx::AttributeProto::TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "UNDEFINED";
  }
}

/// The attribute's type; old models may leave `type` unset, in which case it
/// is deduced from the field that holds the value.
onnx::AttributeProto::AttributeType attributeType(const onnx::AttributeProto &a) {
  if (a.type() != onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return onnx::AttributeProto::FLOAT;
  if (a.has_i()) return onnx::AttributeProto::INT;
  if (a.has_s()) return onnx::AttributeProto::STRING;
  if (a.has_t()) return onnx::AttributeProto::TENSOR;
  if (a.has_g()) return onnx::AttributeProto::GRAPH;
  if (a.has_sparse_tensor()) return onnx::AttributeProto::SPARSE_TENSOR;
  if (a.floats_size()) return onnx::AttributeProto::FLOATS;
  if (a.ints_size()) return onnx::AttributeProto::INTS;
  if (a.strings_size()) return onnx::AttributeProto::STRINGS;
  if (a.tensors_size()) return onnx::AttributeProto::TENSORS;
  if (a.graphs_size()) return onnx::AttributeProto::GRAPHS;
  return onnx::AttributeProto::UNDEFINED;
}

bool isSupportedAttributeType(onnx::AttributeProto::AttributeType t) {
  switch (t) {
    case onnx::AttributeProto::FLOAT:
    case onnx::AttributeProto::INT:
    case onnx::AttributeProto::STRING:
    case onnx::AttributeProto::TENSOR:
    case onnx::AttributeProto::FLOATS:
    case onnx::AttributeProto::INTS:
    case onnx::AttributeProto::STRINGS:
      return true;
    default:
      return false;
  }
}

/// Takes the more precise of an inferred and a declared (value_info) type:
/// declared dims fill in dims inference left unknown; static inferred dims win.
TensorType refineType(const TensorType &inferred, const TensorType &declared) {
  TensorType out = inferred;
  if (out.dtype == ir::DType::kUndefined) out.dtype = declared.dtype;
  if (!declared.rankKnown) return out;
  if (!out.rankKnown) {
    out.shape = declared.shape;
    out.rankKnown = true;
    return out;
  }
  if (out.rank() != declared.rank()) return out;
  for (size_t i = 0; i < out.shape.size(); ++i)
    if (out.shape[i].isUnknown() && !declared.shape[i].isUnknown()) out.shape[i] = declared.shape[i];
  return out;
}

/// Nesting limit for function bodies whose ops are functions again.
constexpr int kMaxFunctionDepth = 16;

/// A Loop is unrolled into at most kMaxUnrolledSteps iterations and at most
/// this many body nodes in all (iterations x the body's nodes).
constexpr int64_t kMaxLoopUnrolledNodes = 65536;

/// The status payload naming the graph inputs a Loop needs bound.
constexpr char kInputValuesNeededPayload[] = "fusec.frontend.onnx/input-values-needed";

/// withContext (support/Status.h) that keeps the status's payloads: the
/// graph inputs a Loop needs bound (kInputValuesNeededPayload) travel up
/// through the nodes and bodies that contain it.
absl::Status withImportContext(const absl::Status &status, const std::string &prefix) {
  if (status.ok()) return status;
  absl::Status out = withContext(status, prefix);
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord &payload) { out.SetPayload(url, payload); });
  return out;
}

/// Whether Loop body \p body's condition output is its condition input
/// itself or a chain of Identity nodes of it (a Loop whose condition never
/// changes: "for" loops, the range expansion).
bool loopConditionPassesThrough(const onnx::GraphProto &body) {
  if (body.input_size() < 2 || body.output_size() < 1) return false;
  const std::string &in = body.input(1).name();
  std::string v = body.output(0).name();
  for (int hop = 0; hop <= body.node_size() && v != in; ++hop) {
    const onnx::NodeProto *p = nullptr;
    for (const auto &b : body.node())
      for (const auto &o : b.output())
        if (o == v) p = &b;
    if (!p || !isOnnxDomain(p->domain()) || p->op_type() != "Identity" || p->input_size() != 1)
      return false;
    v = p->input(0);
  }
  return v == in;
}

/// "sequence", "optional", ... for a TypeProto that is not a tensor; nullptr
/// for a tensor or an unset type.
const char *nonTensorKind(const onnx::TypeProto &t) {
  if (t.has_sequence_type()) return "sequence";
  if (t.has_optional_type()) return "optional";
  if (t.has_map_type()) return "map";
  if (t.has_sparse_tensor_type()) return "sparse tensor";
  return nullptr;
}

/// True if the importer accepts ai.onnx op \p opType at \p opset: a row of
/// the op table (not an internal op), an op expanded by FunctionExpansion.cpp,
/// or an ONNX function whose body the ONNX library gives (OnnxFunctions.h)
/// and whose ops are all accepted in turn (a context-dependent body is
/// accepted here and checked when it is built). \p why, if given, receives
/// the reason a function op is refused.
bool acceptsOnnxOp(const std::string &opType, int64_t opset, std::string *why, int depth = 0) {
  if (const ir::OpInfo *info = ir::lookupOp(opType)) return !isInternalOp(*info);
  if (internal::isExpandedFunctionOp(opType)) return true;
  internal::FunctionLookup f = internal::lookupLibraryFunction(opType, opset);
  using Kind = internal::FunctionLookup::Kind;
  switch (f.kind) {
    case Kind::kNotAFunction: return false;
    case Kind::kContextDependent: return true;
    case Kind::kUnavailable:
      if (why) *why = f.why;
      return false;
    case Kind::kBody: break;
  }
  if (depth >= kMaxFunctionDepth) return false;
  int64_t bodyOpset = f.sinceVersion;
  for (const auto &os : f.body->opset_import())
    if (isOnnxDomain(os.domain())) bodyOpset = os.version();
  for (const auto &n : f.body->node()) {
    if (!isOnnxDomain(n.domain())) {
      if (why) *why = absl::StrCat("its ONNX function body uses ", n.domain(), ".", n.op_type());
      return false;
    }
    if (n.op_type() == "Constant") continue;
    if (!acceptsOnnxOp(n.op_type(), bodyOpset, nullptr, depth + 1)) {
      if (why) *why = absl::StrCat("its ONNX function body uses '", n.op_type(), "'");
      return false;
    }
  }
  return true;
}

/// True if \p n is an ONNX Runtime contrib op that the importer maps onto
/// table ops (ContribOps.h).
bool isMappedContribNode(const onnx::NodeProto &n) {
  return n.domain() == internal::kContribDomain && internal::isMappedContribOp(n.op_type());
}

/// Why an unmapped com.microsoft op is refused, for the unsupported-op report.
std::string contribRefusal() {
  return absl::StrCat("an ONNX Runtime contrib op fusec does not map; it maps ",
                      internal::mappedContribOps());
}

/// The TypeProto of \p v (elem_type 0 and no shape where unknown), for the
/// ONNX library's context-dependent function builders.
onnx::TypeProto typeProtoOf(const ir::Value *v) {
  onnx::TypeProto t;
  auto *tt = t.mutable_tensor_type();
  if (!v) return t;
  const TensorType &type = v->type();
  tt->set_elem_type(static_cast<int32_t>(type.dtype));
  if (type.rankKnown) {
    auto *shape = tt->mutable_shape();
    for (const ir::Dim &d : type.shape) {
      auto *dim = shape->add_dim();
      if (d.isStatic()) dim->set_dim_value(d.value);
      else if (d.isSymbolic()) dim->set_dim_param(d.symbol);
    }
  }
  return t;
}

class Importer {
 public:
  Importer(const onnx::ModelProto &model, std::string modelDir, const ImportOptions &options)
      : model_(model), graphProto_(model.graph()), dir_(std::move(modelDir)), options_(options),
        graph_(std::make_unique<ir::Graph>()) {}

  absl::StatusOr<std::unique_ptr<ir::Graph>> run();

 private:
  absl::Status readOpsets();
  void assignNodeNames();
  absl::Status checkSupported();
  /// Whether If condition \p value is computed only from \p known constants,
  /// --input-value inputs and Shape/Size of values (so that it may fold while
  /// importing).
  bool conditionMayFold(const std::string &value,
                        const absl::flat_hash_map<std::string, const onnx::TensorProto *> &known) const;
  void collectUnsupportedInSubgraphs(const onnx::NodeProto &n, const std::string &path,
                                     std::vector<std::string> &problems) const;
  std::string domainName(const std::string &domain) const;
  std::string opsetText(const std::string &domain) const;
  std::string freshSymbol(const std::string &base);
  absl::Status readDeclaredTypes();
  absl::Status importInitializersAndInputs();
  absl::StatusOr<ir::Tensor> boundValueFor(const onnx::ValueInfoProto &in, const ir::Tensor &given);
  void checkAgainstOpsetSchema(const onnx::NodeProto &n, int numIn, std::vector<std::string> &reasons) const;
  absl::Status importNode(const onnx::NodeProto &n, const std::string &name, int64_t opset,
                          int depth);
  absl::Status expandLibraryFunction(const onnx::NodeProto &n, const std::string &name,
                                     int64_t opset, int depth);
  absl::Status importConstantIf(const onnx::NodeProto &n, const std::string &name, int64_t opset,
                                int depth);
  absl::Status importRuntimeIf(const onnx::NodeProto &n, const std::string &name, ir::Value &cond,
                               int64_t opset, int depth);
  absl::Status importStaticScan(const onnx::NodeProto &n, const std::string &name, int64_t opset,
                                int depth);
  absl::Status importStaticLoop(const onnx::NodeProto &n, const std::string &name, int64_t opset,
                                int depth);
  /// The values of Loop \p loop's scalar operands \p operands (its trip
  /// count, its condition: each a value and what it is) when they are known
  /// while importing (evaluateConstantChain); else Unimplemented, saying
  /// which depend on run-time data \p when ("", " at iteration 3") and
  /// naming every graph input they are computed from (also in the status's
  /// kInputValuesNeededPayload, for fusec-node-tests). InvalidArgument for a
  /// known operand that is not one number.
  absl::StatusOr<std::vector<ir::Tensor>> loopOperandsAtImport(
      const std::string &loop, const std::vector<std::pair<const ir::Value *, std::string>> &operands,
      const std::string &when);
  /// The graph inputs (not bound with --input-value) that \p v is computed
  /// from, in graph input order.
  std::vector<std::string> graphInputsFeeding(const ir::Value &v) const;
  /// Adds one node \p op of one output \p out (a node named after \p owner,
  /// the Scan or Loop being unrolled) and infers its type; \returns the output.
  absl::StatusOr<ir::Value *> addUnrolledNode(const std::string &op, std::vector<ir::Value *> in,
                                              ir::AttributeMap attrs, const std::string &out,
                                              const std::string &owner);
  /// Writes \p out as the per-iteration values \p parts (one or more, of one
  /// shape) stacked along a new axis \p axis: Unsqueeze + Concat (Scan's and
  /// Loop's scan outputs).
  absl::Status stackIterations(const std::vector<ir::Value *> &parts, int64_t axis,
                               const std::string &out, const std::string &owner);
  /// Imports the nodes of \p body (an If branch, a Scan iteration) with its
  /// inputs bound to \p inputs and its own values renamed apart under
  /// \p prefix (outer-scope names resolve to the enclosing graph); \returns
  /// the values of its outputs. \p where names it in errors.
  absl::StatusOr<std::vector<ir::Value *>> importBody(const onnx::GraphProto &body,
                                                      const std::string &prefix,
                                                      const std::vector<ir::Value *> &inputs,
                                                      int64_t opset, int depth,
                                                      const std::string &where);
  std::string freshValueName(const std::string &base);
  absl::Status importConstantNode(const onnx::NodeProto &node, const std::string &name);
  absl::Status importOutputs();

  absl::StatusOr<TensorType> typeFromValueInfo(const onnx::ValueInfoProto &vi,
                                               const char *what);
  absl::StatusOr<Attribute> convertAttribute(const onnx::AttributeProto &a);
  std::string symbolFor(const std::string &dimParam);
  absl::Status checkNewValueName(const std::string &name, const std::string &what);
  std::string uniqueNodeName(const std::string &base);
  bool foldMetadataOperands(ir::Node &node);

  const onnx::ModelProto &model_;
  const onnx::GraphProto &graphProto_;
  std::string dir_;
  const ImportOptions &options_;
  std::unique_ptr<ir::Graph> graph_;
  int64_t opset_ = 0;
  /// The model's ai.onnx opset when it is below kMinOpset (then opset_ is
  /// kMinOpset); 0 otherwise.
  int64_t legacyOpset_ = 0;
  void checkLegacyOpset(const onnx::GraphProto &g, const std::string &path,
                        std::vector<std::string> &problems, std::set<int> *flagged) const;
  std::map<std::string, int64_t> domainOpsets_;
  std::vector<std::string> nodeNames_;
  absl::flat_hash_set<std::string> usedNodeNames_;
  absl::flat_hash_map<std::string, std::string> symbols_;
  absl::flat_hash_set<std::string> usedSymbols_;
  absl::flat_hash_map<std::string, TensorType> declared_;
  absl::flat_hash_set<std::string> declaredOutputs_;  ///< names with a declared graph-output type
  /// Value names taken by the model's own values or handed out for the
  /// nodes of expanded function bodies (freshValueName()).
  absl::flat_hash_set<std::string> reservedValueNames_;
  /// Values evaluated while importing (evaluateConstantChain), kept for the
  /// whole import so that a shape chain read by many nodes is computed once.
  std::map<const ir::Value *, ir::Tensor> foldMemo_;
};

absl::Status Importer::readOpsets() {
  const int64_t irVersion = model_.ir_version();
  if (irVersion < kMinIrVersion)
    return absl::InvalidArgumentError(absl::StrCat(
        "model has IR version ", irVersion, "; fusec reads IR versions ", kMinIrVersion, " to ",
        kMaxIrVersion, " (files before IR version 3 do not say which opset they use)"));
  if (irVersion > kMaxIrVersion)
    return absl::UnimplementedError(absl::StrCat("model has IR version ", irVersion,
                                                 ", newer than fusec reads (", kMinIrVersion,
                                                 " to ", kMaxIrVersion, ")"));
  bool found = false;
  std::set<std::string> domainsSeen;
  for (const auto &os : model_.opset_import()) {
    const std::string domain = isOnnxDomain(os.domain()) ? std::string() : os.domain();
    if (!domainsSeen.insert(domain).second)
      return absl::InvalidArgumentError(absl::StrCat(
          "model imports domain ", quotedName(domain.empty() ? "ai.onnx" : domain),
          " twice (opset_import must name each domain once)"));
    if (os.domain() == internal::kContribDomain && os.version() != 1)
      return absl::UnimplementedError(absl::StrCat(
          "com.microsoft opset ", os.version(), " is not supported (ONNX Runtime's contrib ops are "
          "opset 1)"));
    domainOpsets_[os.domain()] = os.version();
    if (isOnnxDomain(os.domain())) {
      opset_ = os.version();
      found = true;
    }
  }
  if (!found) {
    // Allowed only when no node is in ai.onnx (e.g. a graph made of
    // ai.onnx.preview.training ops, which the unsupported-op check reports).
    for (const auto &n : graphProto_.node())
      if (isOnnxDomain(n.domain()))
        return absl::InvalidArgumentError(
            "model has no opset_import for the ai.onnx domain but uses ai.onnx ops");
    return absl::OkStatus();
  }
  if (opset_ >= kMinLegacyOpset && opset_ < kMinOpset) {
    legacyOpset_ = opset_;  // read as opset 11 (checkLegacyOpset)
    opset_ = kMinOpset;
  }
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    return absl::UnimplementedError(absl::StrCat("ai.onnx opset ", opset_,
                                                 " is not supported (fusec supports opsets ",
                                                 kMinLegacyOpset, " to ", kMaxOpset, "; below ",
                                                 kMinOpset, ", when no op changed up to opset ",
                                                 kMinOpset, ")"));
  graph_->setOpset(opset_);
  graph_->setOnnxNodeCount(graphProto_.node_size());
  return absl::OkStatus();
}

std::string Importer::uniqueNodeName(const std::string &base) {
  std::string n = base;
  for (int i = 1; usedNodeNames_.contains(n); ++i) n = absl::StrCat(base, "_", i);
  usedNodeNames_.insert(n);
  return n;
}

void Importer::assignNodeNames() {
  for (const auto &n : graphProto_.node())
    if (!n.name().empty()) usedNodeNames_.insert(n.name());
  for (int i = 0; i < graphProto_.node_size(); ++i) {
    const auto &n = graphProto_.node(i);
    nodeNames_.push_back(n.name().empty() ? uniqueNodeName(absl::StrCat(n.op_type(), "_", i))
                                          : n.name());
  }
}

void Importer::collectUnsupportedInSubgraphs(const onnx::NodeProto &n, const std::string &path,
                                             std::vector<std::string> &problems) const {
  for (const auto &a : n.attribute()) {
    std::vector<const onnx::GraphProto *> bodies;
    if (a.has_g()) bodies.push_back(&a.g());
    for (const auto &g : a.graphs()) bodies.push_back(&g);
    for (size_t b = 0; b < bodies.size(); ++b) {
      std::string sub = absl::StrCat(path, "/", printable(a.name()),
                                     bodies.size() > 1 ? absl::StrCat("[", b, "]") : "");
      for (int i = 0; i < bodies[b]->node_size(); ++i) {
        const auto &inner = bodies[b]->node(i);
        std::string name = inner.name().empty() ? absl::StrCat(inner.op_type(), "_", i) : inner.name();
        std::string innerPath = absl::StrCat(sub, "/", printable(name));
        const ir::OpInfo *info =
            isOnnxDomain(inner.domain()) ? ir::lookupOp(inner.op_type()) : nullptr;
        std::string why;
        bool expanded = !info && ((isOnnxDomain(inner.domain()) &&
                                   // their bodies are checked below
                                   (inner.op_type() == "If" || inner.op_type() == "Loop" ||
                                    (inner.op_type() == "Scan" && opset_ >= 9) ||
                                    acceptsOnnxOp(inner.op_type(), opset_, &why))) ||
                                  isMappedContribNode(inner));
        if (!info && !expanded && inner.domain() == internal::kContribDomain)
          why = contribRefusal();
        if ((!info && !expanded) || (info && isInternalOp(*info)))
          problems.push_back(absl::StrCat("  node '", innerPath, "' op ", quotedName(inner.op_type()),
                                          " domain ", quotedName(domainName(inner.domain())),
                                          " opset ", opsetText(inner.domain()),
                                          " (inside the body of ", quotedName(path),
                                          why.empty() ? "" : "; ", printable(why), ")"));
        collectUnsupportedInSubgraphs(inner, innerPath, problems);
      }
    }
  }
}

std::string Importer::domainName(const std::string &domain) const {
  return isOnnxDomain(domain) ? "ai.onnx" : domain;
}

/// One ai.onnx schema version newer than the linked registry (onnx 1.23.2's
/// schemas, generated into OnnxSchemas.inc by scripts/gen_onnx_functions.py).
struct NewerSchema {
  const char *op;
  int since;
  bool deprecated;
  int maxInputs;
  const char *attributes;  ///< space-separated names
};

constexpr NewerSchema kNewerSchemas[] = {
#define FUSEC_ONNX_SCHEMA(op, since, deprecated, maxInputs, attributes) {op, since, deprecated, maxInputs, attributes},
#include "frontend/onnx/internal/OnnxSchemas.inc"
#undef FUSEC_ONNX_SCHEMA
};

/// What the check needs of one schema version, from either source.
struct SchemaFacts {
  int since = 0;
  bool deprecated = false;
  int maxInputs = 0;
  std::function<bool(const std::string &)> hasAttribute;
};

/// The node against the ONNX schema of its op at the model's declared ai.onnx
/// opset: the op must exist at that opset, every attribute must be one of that
/// version's, and the inputs no more than it takes. onnxruntime refuses such
/// models; fusec's table describes the newest version, so an attribute an
/// older or newer version dropped (Split's 'split' after Split-13) or an input
/// a version lacks (ReduceSum's axes before ReduceSum-13) would otherwise be
/// misread. Up to opset 17 the schemas are the linked onnx library's
/// registry; the versions after it come from kNewerSchemas (onnx 1.23.2, up to
/// opset 28); an op unchanged since opset 17 is checked against its registry
/// version.
void Importer::checkAgainstOpsetSchema(const onnx::NodeProto &n, int numIn,
                                       std::vector<std::string> &reasons) const {
  if (!isOnnxDomain(n.domain())) return;
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = ranges.find(onnx::ONNX_DOMAIN);
  if (range == ranges.end()) return;
  const int registryMax = std::min(range->second.second, FUSEC_ONNX_SCHEMA_REGISTRY_OPSET);
  const int64_t declared = legacyOpset_ ? legacyOpset_ : opset_;
  if (declared > FUSEC_ONNX_SCHEMA_TABLE_OPSET) return;  // newer than every schema fusec knows
  const std::string &op = n.op_type();
  // The newest version at or before the declared opset, and the first one
  // after the registry (to say when an op appears).
  const NewerSchema *newer = nullptr;
  int firstNewer = 0;
  for (const NewerSchema &row : kNewerSchemas) {
    if (op != row.op) continue;
    if (!firstNewer || row.since < firstNewer) firstNewer = row.since;
    if (row.since <= declared && (!newer || row.since > newer->since)) newer = &row;
  }
  const onnx::OpSchema *reg =
      onnx::OpSchemaRegistry::Schema(op, static_cast<int>(std::min<int64_t>(declared, registryMax)), "");
  SchemaFacts facts;
  if (newer) {
    facts.since = newer->since;
    facts.deprecated = newer->deprecated;
    facts.maxInputs = newer->maxInputs;
    const std::vector<std::string> names = absl::StrSplit(newer->attributes, ' ', absl::SkipEmpty());
    facts.hasAttribute = [names](const std::string &a) {
      return std::find(names.begin(), names.end(), a) != names.end();
    };
  } else if (reg) {
    facts.since = reg->SinceVersion();
    facts.deprecated = reg->Deprecated();
    facts.maxInputs = reg->max_input();
    facts.hasAttribute = [reg](const std::string &a) { return reg->attributes().count(a) > 0; };
  } else {
    int from = firstNewer;
    if (!from)
      if (const onnx::OpSchema *later = onnx::OpSchemaRegistry::Schema(op, registryMax, ""))
        from = later->SinceVersion();
    if (from)
      reasons.push_back(absl::StrCat(printable(op), " is not an op of ai.onnx opset ", declared,
                                     " (it exists from opset ", from, ")"));
    return;
  }
  if (facts.deprecated) return;  // reported by the legacy-opset check
  for (const auto &a : n.attribute())
    if (!facts.hasAttribute(a.name()))
      reasons.push_back(absl::StrCat("attribute ", quotedName(a.name()), " is not an attribute of ",
                                     printable(op), "-", facts.since, " (opset ", declared, ")"));
  if (numIn > facts.maxInputs)
    reasons.push_back(absl::StrCat(numIn, " inputs; ", printable(op), "-", facts.since, " (opset ", declared,
                                   ") takes at most ", facts.maxInputs));
}

void Importer::checkLegacyOpset(const onnx::GraphProto &g, const std::string &path,
                                std::vector<std::string> &problems, std::set<int> *flagged) const {
  for (int i = 0; i < g.node_size(); ++i) {
    const auto &n = g.node(i);
    const std::string name = path.empty() ? nodeNames_[i]
                                          : absl::StrCat(path, "/", n.name().empty()
                                                                        ? absl::StrCat(n.op_type(), "_", i)
                                                                        : n.name());
    if (isOnnxDomain(n.domain())) {
      const onnx::OpSchema *old =
          onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(legacyOpset_), "");
      const onnx::OpSchema *now = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(kMinOpset), "");
      std::string why;
      // Upsample-7/9 (deprecated in opset 10) are written as Resize by
      // FunctionExpansion.cpp from their own semantics, so they need no
      // version conversion.
      const bool ownLegacyForm = old && n.op_type() == "Upsample" && old->SinceVersion() >= 7;
      if (!old)
        why = absl::StrCat("not an op of ai.onnx opset ", legacyOpset_);
      else if (ownLegacyForm)
        why.clear();
      else if (!now || now->SinceVersion() != old->SinceVersion())
        why = absl::StrCat(printable(n.op_type()), "-", old->SinceVersion(), " of opset ", legacyOpset_,
                           now ? absl::StrCat(" changed in ", printable(n.op_type()), "-", now->SinceVersion())
                               : std::string(" was removed"),
                           ", and fusec reads models of opset ", legacyOpset_, " only where no op changed up to opset ",
                           kMinOpset, "; convert the model (onnx.version_converter.convert_version(model, ", kMinOpset,
                           ") or newer) or re-export it");
      if (!why.empty()) {
        problems.push_back(absl::StrCat("  node ", quotedName(name), " op ", quotedName(n.op_type()),
                                        " domain 'ai.onnx' opset ", legacyOpset_, " (", why, ")"));
        if (flagged) flagged->insert(i);
      }
    }
    for (const auto &a : n.attribute()) {
      if (a.has_g())
        checkLegacyOpset(a.g(), absl::StrCat(printable(name), "/", printable(a.name())), problems, nullptr);
      for (int b = 0; b < a.graphs_size(); ++b)
        checkLegacyOpset(a.graphs(b), absl::StrCat(printable(name), "/", printable(a.name()), "[", b, "]"),
                         problems, nullptr);
    }
  }
}

std::string Importer::opsetText(const std::string &domain) const {
  if (isOnnxDomain(domain)) return absl::StrCat(legacyOpset_ ? legacyOpset_ : opset_);
  auto it = domainOpsets_.find(domain);
  return it == domainOpsets_.end() ? std::string("?") : absl::StrCat(it->second);
}

bool Importer::conditionMayFold(
    const std::string &value,
    const absl::flat_hash_map<std::string, const onnx::TensorProto *> &known) const {
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < graphProto_.node_size(); ++i)
    for (const auto &o : graphProto_.node(i).output()) producer[o] = i;
  std::vector<std::string> stack{value};
  absl::flat_hash_set<std::string> seen;
  int budget = 64;
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    if (v.empty() || !seen.insert(v).second) continue;
    if (known.contains(v) || options_.inputValues.count(v)) continue;
    auto it = producer.find(v);
    if (it == producer.end() || --budget < 0) return false;  // a graph input, or too long
    const auto &p = graphProto_.node(it->second);
    if (!isOnnxDomain(p.domain())) return false;
    if (p.op_type() == "Shape" || p.op_type() == "Size") continue;  // static once --shape binds it
    if (p.op_type() == "If" || p.op_type() == "Loop" || p.op_type() == "Scan") return false;
    for (const auto &in : p.input()) stack.push_back(in);
  }
  return true;
}

absl::Status Importer::checkSupported() {
  std::vector<std::string> problems;
  std::set<int> legacyRefused;  // reported once, not again below
  if (legacyOpset_) checkLegacyOpset(graphProto_, "", problems, &legacyRefused);
  // Values known while importing (initializers, Constant outputs with a
  // 'value' tensor), for the conditions of If nodes.
  absl::flat_hash_map<std::string, const onnx::TensorProto *> knownConstants;
  for (const auto &init : graphProto_.initializer()) knownConstants[init.name()] = &init;
  for (const auto &n : graphProto_.node())
    if (isOnnxDomain(n.domain()) && n.op_type() == "Constant" && n.output_size() == 1)
      for (const auto &a : n.attribute())
        if (a.name() == "value" && a.has_t()) knownConstants[n.output(0)] = &a.t();
  for (int i = 0; i < graphProto_.node_size(); ++i) {
    if (legacyRefused.count(i)) continue;
    const auto &n = graphProto_.node(i);
    std::string line = absl::StrCat("  node ", quotedName(nodeNames_[i]), " op ", quotedName(n.op_type()),
                                    " domain ", quotedName(domainName(n.domain())), " opset ",
                                    opsetText(n.domain()));
    const ir::OpInfo *info = isOnnxDomain(n.domain()) ? ir::lookupOp(n.op_type()) : nullptr;
    if (info && isInternalOp(*info)) {
      problems.push_back(absl::StrCat(line, " (", info->name,
                                      " is fusec's internal op, not an ONNX op)"));
      continue;
    }
    std::string why;
    if (!info && isOnnxDomain(n.domain()) && acceptsOnnxOp(n.op_type(), opset_, &why))
      continue;  // expanded into table ops while importing
    if (isMappedContribNode(n)) {  // mapped onto table ops (ContribOps.h)
      std::string refused = internal::refusedContribForm(n.op_type(), [&](bool output, int k) {
        return output ? k < n.output_size() && !n.output(k).empty()
                      : k < n.input_size() && !n.input(k).empty();
      });
      if (!refused.empty()) problems.push_back(absl::StrCat(line, " (", printable(refused), ")"));
      continue;
    }
    if (!info && isOnnxDomain(n.domain()) &&
        ((n.op_type() == "Scan" && opset_ >= 9) || n.op_type() == "Loop")) {
      // Unrolled over a static scan length (importStaticScan) or a trip
      // count known at import (importStaticLoop): their bodies' ops are
      // imported, so they are reported here, all at once.
      collectUnsupportedInSubgraphs(n, printable(nodeNames_[i]), problems);
      continue;
    }
    if (!info && isOnnxDomain(n.domain()) && n.op_type() == "If") {
      // Inlined when its condition is known while importing (importConstantIf).
      auto known = n.input_size() < 1 ? knownConstants.end() : knownConstants.find(n.input(0));
      auto bound = n.input_size() < 1 ? options_.inputValues.end()
                                      : options_.inputValues.find(n.input(0));
      absl::StatusOr<ir::Tensor> cond =
          bound != options_.inputValues.end() ? absl::StatusOr<ir::Tensor>(bound->second)
          : known == knownConstants.end()
              ? absl::StatusOr<ir::Tensor>(absl::NotFoundError(""))
              : internal::tensorFromProto(*known->second, dir_);
      if (!cond.ok() && n.input_size() >= 1 && conditionMayFold(n.input(0), knownConstants)) {
        // Computed from constants, bound inputs or shapes: evaluated while
        // importing (importConstantIf), which names it if it does not fold;
        // the branch taken is imported like the graph, so its unsupported
        // ops are reported then (the other branch's, nested Ifs on folding
        // conditions included, do not matter).
        continue;
      }
      if (!cond.ok() || cond->numElements() != 1) {
        // Known only at run time: both branches are imported, guarded
        // (importRuntimeIf), so the ops of both must be supported.
        collectUnsupportedInSubgraphs(n, printable(nodeNames_[i]), problems);
        continue;
      }
      // Only the branch taken is imported: only its ops must be supported.
      onnx::NodeProto taken = n;
      taken.clear_attribute();
      const char *branch = cond->getDouble(0) != 0.0 ? "then_branch" : "else_branch";
      for (const auto &a : n.attribute())
        if (a.name() == branch) *taken.add_attribute() = a;
      collectUnsupportedInSubgraphs(taken, printable(nodeNames_[i]), problems);
      continue;
    }
    if (!info) {
      if (n.domain() == internal::kContribDomain) why = contribRefusal();
      problems.push_back(why.empty() ? line : absl::StrCat(line, " (", printable(why), ")"));
      // The ops inside an If/Loop/Scan body are reported too, all at once.
      collectUnsupportedInSubgraphs(n, printable(nodeNames_[i]), problems);
      continue;
    }
    // A supported op can still use a form fusec does not handle.
    std::vector<std::string> reasons;
    for (const auto &a : n.attribute()) {
      auto t = attributeType(a);
      if (!isSupportedAttributeType(t))
        reasons.push_back(absl::StrCat("attribute ", quotedName(a.name()), " of type ",
                                       attributeTypeName(t), " is not supported"));
    }
    int numIn = n.input_size(), numOut = n.output_size();
    while (numIn > 0 && n.input(numIn - 1).empty()) --numIn;
    while (numOut > 0 && n.output(numOut - 1).empty()) --numOut;
    checkAgainstOpsetSchema(n, numIn, reasons);
    if (info->maxInputs >= 0 && numIn > info->maxInputs)
      reasons.push_back(absl::StrCat(numIn, " inputs; fusec supports at most ", info->maxInputs));
    if (info->maxOutputs >= 0 && numOut > info->maxOutputs)
      reasons.push_back(
          absl::StrCat(numOut, " outputs; fusec supports at most ", info->maxOutputs));
    if (!reasons.empty()) problems.push_back(absl::StrCat(line, " (", absl::StrJoin(reasons, "; "), ")"));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat("model uses ", problems.size(), " unsupported op",
                                               problems.size() == 1 ? "" : "s", ":\n",
                                               absl::StrJoin(problems, "\n")));
}

std::string Importer::freshSymbol(const std::string &base) {
  std::string id = toIdentifier(base);
  std::string s = id;
  for (int i = 1; usedSymbols_.contains(s); ++i) s = absl::StrCat(id, "_", i);
  usedSymbols_.insert(s);
  return s;
}

std::string Importer::symbolFor(const std::string &dimParam) {
  auto it = symbols_.find(dimParam);
  if (it != symbols_.end()) return it->second;
  std::string base = toIdentifier(dimParam);
  std::string s = base;
  // Two different dim_params must not collapse into one symbol.
  for (int i = 1; usedSymbols_.contains(s); ++i) s = absl::StrCat(base, "_", i);
  usedSymbols_.insert(s);
  symbols_[dimParam] = s;
  return s;
}

absl::StatusOr<TensorType> Importer::typeFromValueInfo(const onnx::ValueInfoProto &vi,
                                                       const char *what) {
  if (!vi.has_type())
    return absl::InvalidArgumentError(absl::StrCat(what, " ", quotedName(vi.name()), " has no type"));
  if (!vi.type().has_tensor_type())
    return absl::UnimplementedError(
        absl::StrCat(what, " ", quotedName(vi.name()), " is not a tensor (sequence, map, optional and "
                     "sparse types are not supported)"));
  const auto &tt = vi.type().tensor_type();
  if (!tt.has_elem_type() || tt.elem_type() == 0)
    return absl::InvalidArgumentError(absl::StrCat(what, " ", quotedName(vi.name()), " has no elem_type"));
  std::optional<ir::DType> dt = ir::dtypeFromOnnx(tt.elem_type());
  if (!dt)
    return internal::unsupportedDType(tt.elem_type(), absl::StrCat(what, " ", quotedName(vi.name())));
  if (!tt.has_shape()) return TensorType::unranked(*dt);
  std::vector<ir::Dim> dims;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      // The ONNX spec reads dim_value as the dimension's size, so 0 is a
      // static 0 (an empty tensor: test_castlike_*'s 'like', the
      // *_empty_set reductions). -1, which old paddle2onnx and some TF
      // converters write for "unknown", is not a size: it becomes a symbol
      // of its own, as a dim_param would. (Older TF / Caffe2 converters
      // also wrote 0 for "unknown"; before, 0 read as a symbol too, which
      // made every genuinely empty input need --shape and every declared
      // empty output non-static. Such a model now gets a static 0; its
      // real inputs are refused at run time by the shape check, and
      // --shape cannot rebind a static dim: README.md.)
      if (d.dim_value() == -1) {
        dims.push_back(ir::Dim::symbolic(freshSymbol(absl::StrCat(vi.name(), "_dim", i))));
        continue;
      }
      if (d.dim_value() < 0)
        return absl::InvalidArgumentError(absl::StrCat(what, " ", quotedName(vi.name()),
                                                       " has negative dimension ", d.dim_value(),
                                                       " at axis ", i));
      dims.emplace_back(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      // A dim_param names a dimension; two dims with one name are equal
      // (ONNX IR.md, "Tensor shapes"). A name with no letter or digit ("?",
      // as paddle2onnx writes for every unknown dim; "*", "-") names
      // nothing: each such dim is a symbol of its own, as for -1 above.
      // Otherwise a PaddleOCR classifier's [-1, 3, ?, ?] would force its
      // height and width to be equal (red team s28 M1).
      const std::string &p = d.dim_param();
      const bool anonymous =
          std::none_of(p.begin(), p.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
      dims.push_back(ir::Dim::symbolic(anonymous ? freshSymbol(absl::StrCat(vi.name(), "_dim", i))
                                                 : symbolFor(p)));
    } else {
      dims.push_back(ir::Dim::unknown());
    }
  }
  return TensorType(*dt, std::move(dims));
}

absl::Status Importer::readDeclaredTypes() {
  // value_info is a hint: entries fusec cannot represent are skipped.
  for (const auto &vi : graphProto_.value_info()) {
    absl::StatusOr<TensorType> t = typeFromValueInfo(vi, "value");
    if (t.ok()) declared_[vi.name()] = *t;
  }
  // Graph output types are part of the model's interface: a bad one is an
  // error, a missing one is allowed.
  for (const auto &vi : graphProto_.output()) {
    if (!vi.has_type()) continue;
    FUSEC_ASSIGN_OR_RETURN(TensorType t, typeFromValueInfo(vi, "graph output"));
    declared_[vi.name()] = t;
    declaredOutputs_.insert(vi.name());
  }
  return absl::OkStatus();
}

absl::Status Importer::checkNewValueName(const std::string &name, const std::string &what) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " has an empty name"));
  if (graph_->findValue(name))
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", quotedName(name), " redefines a value (names must be unique)"));
  return absl::OkStatus();
}

absl::Status Importer::importInitializersAndInputs() {
  if (graphProto_.sparse_initializer_size() > 0)
    return absl::UnimplementedError("sparse initializers are not supported");
  absl::flat_hash_set<std::string> initNames;
  for (const auto &init : graphProto_.initializer()) {
    FUSEC_RETURN_IF_ERROR(checkNewValueName(init.name(), "initializer"));
    FUSEC_ASSIGN_OR_RETURN(ir::Tensor t, internal::tensorFromProto(init, dir_));
    graph_->addConstant(init.name(), std::move(t));
    initNames.insert(init.name());
  }
  std::vector<std::string> frozen;  // inputs with an initializer, for the warning below
  for (const auto &in : graphProto_.input()) {
    // An input with an initializer is a constant: fusec compiles the model
    // with its weights, it does not let callers override them (README.md,
    // "Using it"). Its declared type must still agree with the initializer.
    if (initNames.contains(in.name())) {
      frozen.push_back(quotedName(in.name()));
      if (!in.has_type()) continue;
      FUSEC_ASSIGN_OR_RETURN(TensorType declared, typeFromValueInfo(in, "graph input"));
      const ir::Tensor *init = graph_->findValue(in.name())->constant();
      bool agrees = init && declared.dtype == init->dtype() &&
                    (!declared.rankKnown ||
                     declared.rank() == static_cast<int64_t>(init->shape().size()));
      for (int64_t i = 0; agrees && declared.rankKnown && i < declared.rank(); ++i)
        agrees = !declared.shape[i].isStatic() || declared.shape[i].value == init->shape()[i];
      if (!agrees)
        return absl::InvalidArgumentError(absl::StrCat(
            "graph input ", quotedName(in.name()), " is declared ", declared.str(),
            " but its initializer is ", TensorType::fromShape(init->dtype(), init->shape()).str()));
      continue;
    }
    FUSEC_RETURN_IF_ERROR(checkNewValueName(in.name(), "graph input"));
    auto bound = options_.inputValues.find(in.name());
    if (bound != options_.inputValues.end()) {  // --input-value: compiled as a constant
      FUSEC_ASSIGN_OR_RETURN(ir::Tensor value, boundValueFor(in, bound->second));
      graph_->addConstant(in.name(), std::move(value));
      continue;
    }
    FUSEC_ASSIGN_OR_RETURN(TensorType t, typeFromValueInfo(in, "graph input"));
    // A graph input's dim with neither dim_value nor dim_param is a size
    // the caller chooses (ONNX IR.md, "Tensor shapes": an unknown
    // dimension): a symbol of its own, as for -1 and "?" above, so that the
    // artifact runs any size of it and --shape may bound it.
    for (size_t i = 0; t.rankKnown && i < t.shape.size(); ++i)
      if (!t.shape[i].isStatic() && !t.shape[i].isSymbolic())
        t.shape[i] = ir::Dim::symbolic(freshSymbol(absl::StrCat(in.name(), "_dim", i)));
    graph_->addInput(in.name(), std::move(t));
  }
  for (const auto &[name, value] : options_.inputValues) {
    bool isInput = false;
    for (const auto &in : graphProto_.input()) isInput |= in.name() == name && !initNames.contains(name);
    if (!isInput)
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-value names ", quotedName(name),
          initNames.contains(name) ? ", which has an initializer (it is a constant already)"
                                   : ", which is not a graph input"));
    if (options_.inputShapes.count(name))
      return absl::InvalidArgumentError(absl::StrCat(
          "both --shape and --input-value name ", quotedName(name),
          " (a value binds the shape too: give only --input-value)"));
  }
  // --shape: bind input dims now, so that what the importer expands (an LSTM
  // unrolled over its sequence length, ConvInteger's geometry) sees them; the
  // shape-specialize pass checks the same bindings again.
  if (!options_.inputShapes.empty()) {
    std::map<std::string, int64_t> symbols;
    FUSEC_RETURN_IF_ERROR(ir::bindInputDims(*graph_, options_.inputShapes, symbols).status());
  }
  if (!frozen.empty()) {
    const size_t shown = std::min<size_t>(frozen.size(), 5);
    std::vector<std::string> head(frozen.begin(), frozen.begin() + shown);
    graph_->addImportWarning(absl::StrCat(
        frozen.size(), " graph input(s) have an initializer (", absl::StrJoin(head, ", "),
        frozen.size() > shown ? ", ..." : "",
        "): ONNX lets a caller override such a default, but fusec compiles the initializer in as a "
        "constant; the artifact has no such input"));
  }
  return absl::OkStatus();
}

// --input-value: the tensor a graph input is compiled with. \p given has the
// input's dtype, or is the inline form (f64, rank 1), converted here when
// every value converts exactly; its dims must agree with the declared ones
// (a declared fully static shape with as many elements reshapes the values).
absl::StatusOr<ir::Tensor> Importer::boundValueFor(const onnx::ValueInfoProto &in,
                                                   const ir::Tensor &given) {
  FUSEC_ASSIGN_OR_RETURN(TensorType declared, typeFromValueInfo(in, "graph input"));
  ir::Tensor value = given;
  const std::string what = absl::StrCat("--input-value ", quotedName(in.name()));
  if (value.dtype() != declared.dtype) {
    if (value.dtype() != ir::DType::kF64 || value.shape().size() != 1)
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": the value has dtype ", ir::dtypeName(value.dtype()), ", the input is declared ",
          declared.str()));
    std::vector<double> values(static_cast<size_t>(value.numElements()));
    for (int64_t i = 0; i < value.numElements(); ++i) values[static_cast<size_t>(i)] = value.getDouble(i);
    ir::Tensor converted = ir::Tensor::fromDoubles(declared.dtype, value.shape(), values);
    for (int64_t i = 0; i < value.numElements(); ++i) {
      const double a = converted.getDouble(i), b = values[static_cast<size_t>(i)];
      if (!(a == b || (a != a && b != b)))
        return absl::InvalidArgumentError(absl::StrCat(what, ": value ", b, " is not exactly a ",
                                                       ir::dtypeName(declared.dtype)));
    }
    value = std::move(converted);
  }
  auto shapeMismatch = [&] {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the value has shape [",
                                                   absl::StrJoin(value.shape(), ","),
                                                   "], the input is declared ", declared.str()));
  };
  if (declared.rankKnown && declared.rank() != static_cast<int64_t>(value.shape().size())) {
    bool allStatic = true;
    int64_t n = 1;
    ir::Shape shape;
    for (const ir::Dim &d : declared.shape) {
      allStatic &= d.isStatic();
      if (d.isStatic()) {
        n *= d.value;
        shape.push_back(d.value);
      }
    }
    if (!allStatic || n != value.numElements()) return shapeMismatch();
    value = value.reshaped(shape);
  }
  for (int64_t i = 0; declared.rankKnown && i < declared.rank(); ++i)
    if (declared.shape[i].isStatic() && declared.shape[i].value != value.shape()[static_cast<size_t>(i)])
      return shapeMismatch();
  return value;
}

absl::StatusOr<Attribute> Importer::convertAttribute(const onnx::AttributeProto &a) {
  switch (attributeType(a)) {
    case onnx::AttributeProto::FLOAT: return Attribute(a.f());
    case onnx::AttributeProto::INT: return Attribute(static_cast<int64_t>(a.i()));
    case onnx::AttributeProto::STRING: return Attribute(a.s());
    case onnx::AttributeProto::TENSOR: {
      FUSEC_ASSIGN_OR_RETURN(ir::Tensor t, internal::tensorFromProto(a.t(), dir_));
      return Attribute(std::move(t));
    }
    case onnx::AttributeProto::FLOATS:
      return Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
    case onnx::AttributeProto::INTS:
      return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::STRINGS:
      return Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    default:
      break;
  }
  return absl::UnimplementedError(absl::StrCat("attribute ", quotedName(a.name()), " of type ",
                                               attributeTypeName(attributeType(a)),
                                               " is not supported"));
}

absl::Status Importer::importConstantNode(const onnx::NodeProto &node, const std::string &name) {
  if (node.output_size() != 1 || node.input_size() != 0)
    return absl::InvalidArgumentError("Constant must have no inputs and one output");
  if (node.attribute_size() != 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "Constant must have exactly one value attribute, has ", node.attribute_size()));
  const auto &a = node.attribute(0);
  FUSEC_ASSIGN_OR_RETURN(Attribute attr, convertAttribute(a));
  ir::Tensor t;
  const std::string &an = a.name();
  using K = Attribute::Kind;
  if (an == "value" && attr.kind() == K::kTensor) {
    t = attr.t();
  } else if (an == "value_float" && attr.kind() == K::kFloat) {
    t = ir::Tensor::scalarDouble(ir::DType::kF32, attr.f());
  } else if (an == "value_floats" && attr.kind() == K::kFloats) {
    std::vector<double> v(attr.floats().begin(), attr.floats().end());
    t = ir::Tensor::fromDoubles(ir::DType::kF32, {static_cast<int64_t>(v.size())}, v);
  } else if (an == "value_int" && attr.kind() == K::kInt) {
    t = ir::Tensor::scalarInt(ir::DType::kI64, attr.i());
  } else if (an == "value_ints" && attr.kind() == K::kInts) {
    t = ir::Tensor::vectorI64(attr.ints());
  } else if (an == "value_string" && attr.kind() == K::kString) {
    t = ir::Tensor(ir::DType::kString, {});
    t.strings()[0] = attr.s();
  } else if (an == "value_strings" && attr.kind() == K::kStrings) {
    t = ir::Tensor(ir::DType::kString, {static_cast<int64_t>(attr.strings().size())});
    t.strings() = attr.strings();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("Constant has unexpected attribute ", quotedName(an), " of type ",
                     attributeTypeName(attributeType(a))));
  }
  FUSEC_RETURN_IF_ERROR(checkNewValueName(node.output(0), "Constant output"));
  graph_->addConstant(node.output(0), std::move(t));
  return absl::OkStatus();
}

std::string Importer::freshValueName(const std::string &base) {
  std::string s = base;
  for (int i = 1; graph_->findValue(s) || reservedValueNames_.contains(s); ++i)
    s = absl::StrCat(base, "_", i);
  reservedValueNames_.insert(s);
  return s;
}

namespace {

/// \p n with every input and output renamed through \p rename (names not in
/// it are outer-scope references and stay), also inside its subgraphs.
void renameValues(onnx::NodeProto &n, const absl::flat_hash_map<std::string, std::string> &rename) {
  auto fix = [&](std::string *s) {
    auto it = rename.find(*s);
    if (it != rename.end()) *s = it->second;
  };
  for (auto &in : *n.mutable_input()) fix(&in);
  for (auto &out : *n.mutable_output()) fix(&out);
  for (auto &a : *n.mutable_attribute()) {
    std::vector<onnx::GraphProto *> bodies;
    if (a.has_g()) bodies.push_back(a.mutable_g());
    for (auto &g : *a.mutable_graphs()) bodies.push_back(&g);
    for (onnx::GraphProto *g : bodies) {
      for (auto &inner : *g->mutable_node()) renameValues(inner, rename);
      for (auto &o : *g->mutable_output()) fix(o.mutable_name());
    }
  }
}

}  // namespace

namespace {

/// The value of \p v when the nodes that compute it read only constants
/// (and the shapes of values whose shape is static): evaluated with the
/// reference interpreter, as the const-fold pass would later. For If
/// conditions computed from an input bound with --input-value or from a
/// --shape-bound shape (`Equal(sr, 16000)`, `Greater(Shape(x)[0], 1)`).
/// At most 64 nodes and 4096 elements per value (results of a static size
/// checked before evaluating); nullopt otherwise.
std::optional<ir::Tensor> evaluateConstantChain(const ir::Value *v, int &budget,
                                                std::map<const ir::Value *, ir::Tensor> &memo) {
  if (v->isConstant()) return *v->constant();
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  const ir::Node *p = v->producer();
  if (!p || --budget < 0) return std::nullopt;
  std::vector<ir::Tensor> results;
  if (p->kind() == ir::OpKind::kShape || p->kind() == ir::OpKind::kSize) {
    std::optional<ir::Tensor> t = ir::foldShapeOf(*p);
    if (!t) return std::nullopt;
    results.push_back(std::move(*t));
  } else {
    if (!interp::supports(p->kind())) return std::nullopt;
    // Results must be small and of a known size before anything is
    // evaluated: a chain through ConstantOfShape or Expand could otherwise
    // allocate whatever its (model-chosen) shape says.
    for (const ir::Value *o : p->outputs()) {
      if (!o) continue;
      if (!o->type().isStatic()) return std::nullopt;
      int64_t n = 1;  // the product, stopped before it can overflow
      for (int64_t d : o->type().staticShape()) {
        if (d > 4096 || (n *= d) > 4096) return std::nullopt;
      }
    }
    std::vector<std::optional<ir::Tensor>> held(static_cast<size_t>(p->numInputs()));
    for (int i = 0; i < p->numInputs(); ++i) {
      if (!p->input(i)) continue;
      held[static_cast<size_t>(i)] = evaluateConstantChain(p->input(i), budget, memo);
      if (!held[static_cast<size_t>(i)] || held[static_cast<size_t>(i)]->numElements() > 4096)
        return std::nullopt;
    }
    std::vector<const ir::Tensor *> args;
    for (auto &t : held) args.push_back(t ? &*t : nullptr);
    absl::StatusOr<std::vector<ir::Tensor>> r = interp::evaluateNode(*p, args);
    if (!r.ok() || r->size() < p->outputs().size()) return std::nullopt;
    results = std::move(*r);
  }
  for (size_t i = 0; i < p->outputs().size(); ++i)
    if (p->outputs()[i]) memo[p->outputs()[i]] = results[i];
  auto it = memo.find(v);
  return it == memo.end() ? std::nullopt : std::optional<ir::Tensor>(it->second);
}

}  // namespace

// A metadata operand of \p node (ir::isMetadataOperand: Reshape's shape,
// Pad's pads, Slice's bounds, Expand's shape, ...) that a chain of nodes
// computes from constants and static shapes is evaluated now and replaced by
// a constant, so that the node's result shape is static while importing.
// Exporters write such chains (torch's reflect Pad builds its pads with
// ConstantOfShape / Concat / Slice / Transpose; shape arithmetic on static
// dims): what follows may need the static shape at import, as a recurrent
// op's sequence length or an If condition does. The chain's nodes stay in
// the graph; dead-code elimination removes those left unused. A chain that
// reads a symbolic dim or a graph input is left as it is.
//
// \returns whether an operand was replaced.
bool Importer::foldMetadataOperands(ir::Node &node) {
  bool changed = false;
  for (int i = 0; i < node.numInputs(); ++i) {
    ir::Value *v = node.input(i);
    if (!v || v->isConstant() || !v->producer() || !ir::isMetadataOperand(node.kind(), i)) continue;
    int budget = 64;
    std::optional<ir::Tensor> t = evaluateConstantChain(v, budget, foldMemo_);
    if (!t) continue;
    node.setInput(i, graph_->addConstant(freshValueName(absl::StrCat(v->name(), "_folded")),
                                         std::move(*t)));
    changed = true;
  }
  return changed;
}

// If (ONNX Operators.md "If"): when the condition is known while importing
// (computed from initializers, Constants, static shapes and --input-value
// inputs), the taken branch's nodes are imported in place of the If, its
// values renamed apart (outer-scope names resolve to the enclosing graph),
// and the If's outputs become Identity of the branch's outputs: no guard, no
// cost. Otherwise (importRuntimeIf) both branches are imported, guarded.
absl::Status Importer::importConstantIf(const onnx::NodeProto &n, const std::string &name,
                                        int64_t opset, int depth) {
  if (depth >= kMaxFunctionDepth)
    return absl::InvalidArgumentError(
        absl::StrCat("If bodies nest deeper than ", kMaxFunctionDepth, " levels"));
  ir::Value *c = n.input_size() > 0 ? graph_->findValue(n.input(0)) : nullptr;
  if (!c) return absl::InvalidArgumentError("If needs its condition input");
  int budget = 64;
  std::optional<ir::Tensor> cond = evaluateConstantChain(c, budget, foldMemo_);
  if (!cond || cond->numElements() != 1) return importRuntimeIf(n, name, *c, opset, depth);
  const bool taken = cond->getDouble(0) != 0.0;
  const onnx::GraphProto *branch = nullptr;
  for (const auto &a : n.attribute())
    if (a.name() == (taken ? "then_branch" : "else_branch") && a.has_g()) branch = &a.g();
  if (!branch)
    return absl::InvalidArgumentError(
        absl::StrCat("If has no ", taken ? "then_branch" : "else_branch", " graph"));
  if (branch->output_size() != n.output_size())
    return absl::InvalidArgumentError(absl::StrCat("If has ", n.output_size(), " outputs, its ",
                                                   taken ? "then" : "else", " branch ",
                                                   branch->output_size()));
  FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Value *> outs,
                         importBody(*branch, name, {}, opset, depth,
                                    absl::StrCat("the ", taken ? "then" : "else", " branch of If ",
                                                 quotedName(name))));
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    FUSEC_RETURN_IF_ERROR(checkNewValueName(n.output(i), "output"));
    ir::Node *id = graph_->addNode("Identity", {outs[static_cast<size_t>(i)]}, {n.output(i)}, {},
                                   uniqueNodeName(name));
    FUSEC_RETURN_IF_ERROR(ir::inferNodeTypes(*graph_, *id));
  }
  return absl::OkStatus();
}

// If whose condition is known only at run time: both branches are imported
// inline (values renamed apart under NAME/then and NAME/else), every node
// a branch adds carrying the guard term (cond, true) or (cond, false) in
// front of any guard it already has (a nested If's: the conjunction,
// outermost first; ir/Graph.h GuardTerm). Output i of the If is
// Where(cond, then_i, else_i), unguarded by this If (it carries the guard
// of an enclosing branch): the taken branch's value. The runtime skips the
// steps of the branch not taken (docs/RUNTIME.md "Guarded steps").
// Refused (Unimplemented, naming the If): a condition that is not a bool of
// one element; branch outputs of different dtypes or shapes (Where would
// broadcast them).
absl::Status Importer::importRuntimeIf(const onnx::NodeProto &n, const std::string &name,
                                       ir::Value &cond, int64_t opset, int depth) {
  auto refuse = [&](const std::string &why) {
    return absl::UnimplementedError(absl::StrCat("If ", quotedName(name), ": ", why));
  };
  const ir::TensorType &ct = cond.type();
  if (ct.dtype != ir::DType::kBool || ct.numElements().value_or(-1) != 1)
    return refuse(absl::StrCat("the condition ", quotedName(cond.name()), " is ", ct.str(),
                               "; a condition known only at run time must be a bool of one "
                               "element (or bind the input it is computed from with "
                               "--input-value to fold it)"));
  const onnx::GraphProto *bodies[2] = {nullptr, nullptr};
  for (const auto &a : n.attribute()) {
    if (a.name() == "then_branch" && a.has_g()) bodies[0] = &a.g();
    if (a.name() == "else_branch" && a.has_g()) bodies[1] = &a.g();
  }
  std::vector<ir::Value *> outs[2];
  for (int b = 0; b < 2; ++b) {
    const char *which = b == 0 ? "then" : "else";
    if (!bodies[b])
      return absl::InvalidArgumentError(absl::StrCat("If ", quotedName(name), " has no ", which,
                                                     "_branch graph"));
    if (bodies[b]->output_size() != n.output_size())
      return absl::InvalidArgumentError(absl::StrCat("If ", quotedName(name), " has ",
                                                     n.output_size(), " outputs, its ", which,
                                                     " branch ", bodies[b]->output_size()));
    std::vector<ir::Node *> before = graph_->nodes();
    absl::flat_hash_set<const ir::Node *> existing(before.begin(), before.end());
    absl::StatusOr<std::vector<ir::Value *>> body =
        importBody(*bodies[b], absl::StrCat(name, "/", which), {}, opset, depth,
                   absl::StrCat("the ", which, " branch of If ", quotedName(name)));
    if (!body.ok()) {
      // A branch that cannot be imported for these shapes is often the one
      // never taken for them (silero-VAD's 8 kHz branch given 512 samples):
      // name the graph inputs the condition comes from, so that binding them
      // imports only the taken branch (red team s28 M2). The payload lets
      // fusec-run --reference bind them from its data.
      std::vector<std::string> inputs = graphInputsFeeding(cond);
      if (inputs.empty() || !inputValuesNeeded(body.status()).empty()) return body.status();
      std::vector<std::string> quoted;
      for (const std::string &in : inputs) quoted.push_back(quotedName(in));
      absl::Status status = withImportContext(
          body.status(),
          absl::StrCat("If ", quotedName(name), " has a condition known only at run time, so both "
                       "branches are compiled; its condition is computed from graph input",
                       inputs.size() == 1 ? " " : "s ", absl::StrJoin(quoted, ", "),
                       ": to compile only the branch taken, fusec needs the value of graph input",
                       inputs.size() == 1 ? " " : "s ", absl::StrJoin(quoted, ", "),
                       " at compile time: bind ", inputs.size() == 1 ? "it" : "each",
                       " with --input-value NAME=@FILE.pb (a TensorProto) or NAME=v1,v2,...; "
                       "importing the ", which, " branch failed"));
      status.SetPayload(kInputValuesNeededPayload, absl::Cord(absl::StrJoin(inputs, "\n")));
      return status;
    }
    outs[b] = std::move(*body);
    for (ir::Node *node : graph_->nodes()) {
      if (existing.contains(node)) continue;
      ir::Guard g{ir::GuardTerm{&cond, b == 0}};
      g.insert(g.end(), node->guard().begin(), node->guard().end());
      node->setGuard(std::move(g));
    }
  }
  ir::Value *scalar = &cond;
  if (ct.rank() != 0) {
    ir::Value *shape = graph_->addConstant(freshValueName(absl::StrCat(name, "/cond_shape")),
                                           ir::Tensor::vectorI64({}));
    ir::Node *r = graph_->addNode("Reshape", {&cond, shape},
                                  {freshValueName(absl::StrCat(name, "/cond"))}, {},
                                  uniqueNodeName(absl::StrCat(name, "/cond")));
    FUSEC_RETURN_IF_ERROR(ir::inferNodeTypes(*graph_, *r));
    scalar = r->output(0);
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    ir::Value *t = outs[0][static_cast<size_t>(i)], *e = outs[1][static_cast<size_t>(i)];
    const ir::TensorType &tt = t->type(), &et = e->type();
    if (tt.dtype != et.dtype || !tt.rankKnown || !et.rankKnown || !(tt.shape == et.shape))
      return refuse(absl::StrCat(
          "output ", i, " ", quotedName(n.output(i)), " is ", tt.str(), " in the then branch and ",
          et.str(), " in the else branch; fusec selects the taken branch's value at run time "
          "only when both have the same dtype and shape (bind the condition's inputs with "
          "--input-value to fold it at compile time)"));
    FUSEC_RETURN_IF_ERROR(checkNewValueName(n.output(i), "output"));
    ir::Node *sel = t == e ? graph_->addNode("Identity", {t}, {n.output(i)}, {}, uniqueNodeName(name))
                           : graph_->addNode("Where", {scalar, t, e}, {n.output(i)}, {},
                                             uniqueNodeName(name));
    FUSEC_RETURN_IF_ERROR(ir::inferNodeTypes(*graph_, *sel));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ir::Value *>> Importer::importBody(
    const onnx::GraphProto &body, const std::string &prefix,
    const std::vector<ir::Value *> &inputs, int64_t opset, int depth, const std::string &where) {
  if (static_cast<int>(inputs.size()) != body.input_size())
    return absl::InvalidArgumentError(absl::StrCat(where, " has ", body.input_size(),
                                                   " inputs, ", inputs.size(), " are bound"));
  absl::flat_hash_map<std::string, std::string> rename;
  for (size_t i = 0; i < inputs.size(); ++i) rename[body.input(static_cast<int>(i)).name()] = inputs[i]->name();
  for (const auto &init : body.initializer()) {
    FUSEC_ASSIGN_OR_RETURN(ir::Tensor t, internal::tensorFromProto(init, dir_));
    std::string fresh = freshValueName(absl::StrCat(prefix, "/", init.name()));
    graph_->addConstant(fresh, std::move(t));
    rename[init.name()] = fresh;
  }
  for (const auto &b : body.node())
    for (const auto &o : b.output())
      if (!o.empty()) rename[o] = freshValueName(absl::StrCat(prefix, "/", o));
  for (int i = 0; i < body.node_size(); ++i) {
    onnx::NodeProto b = body.node(i);
    renameValues(b, rename);
    std::string bn = uniqueNodeName(
        absl::StrCat(prefix, "/", b.name().empty() ? absl::StrCat(b.op_type(), "_", i) : b.name()));
    b.set_name(bn);
    FUSEC_RETURN_IF_ERROR(withImportContext(importNode(b, bn, opset, depth + 1),
                                            absl::StrCat("in ", where, ": node ", quotedName(bn),
                                                         " (", printable(b.op_type()), ")")));
  }
  std::vector<ir::Value *> outs;
  for (const auto &o : body.output()) {
    auto it = rename.find(o.name());
    ir::Value *v = graph_->findValue(it == rename.end() ? o.name() : it->second);
    if (!v)
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": output ", quotedName(o.name()), " is not defined"));
    outs.push_back(v);
  }
  return outs;
}

// Scan (opsets 9+, ONNX Operators.md "Scan") over a static scan length:
// unrolled, iteration t binding the states and slice t (along
// scan_input_axes, reversed by scan_input_directions) of each scan input to
// the body's inputs; the final states and the stacked scan outputs
// (scan_output_axes / scan_output_directions) become the node's outputs.
absl::Status Importer::importStaticScan(const onnx::NodeProto &n, const std::string &name,
                                        int64_t opset, int depth) {
  auto err = [&](const std::string &why) {
    return absl::UnimplementedError(absl::StrCat("Scan: ", why));
  };
  if (opset < 9) return err("opset 8's batched form is not supported");
  if (depth >= kMaxFunctionDepth)
    return absl::InvalidArgumentError(
        absl::StrCat("Scan bodies nest deeper than ", kMaxFunctionDepth, " levels"));
  const onnx::GraphProto *body = nullptr;
  int64_t numScan = -1;
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
  for (const auto &a : n.attribute()) {
    if (a.name() == "body" && a.has_g()) body = &a.g();
    if (a.name() == "num_scan_inputs") numScan = a.i();
    auto ints = [&](std::vector<int64_t> &v) { v.assign(a.ints().begin(), a.ints().end()); };
    if (a.name() == "scan_input_axes") ints(inAxes);
    if (a.name() == "scan_input_directions") ints(inDirs);
    if (a.name() == "scan_output_axes") ints(outAxes);
    if (a.name() == "scan_output_directions") ints(outDirs);
  }
  const int numIn = n.input_size();
  if (!body || numScan < 1 || numScan > numIn)
    return absl::InvalidArgumentError("Scan needs a body and 1 <= num_scan_inputs <= its inputs");
  const int numState = numIn - static_cast<int>(numScan);
  const int numScanOut = body->output_size() - numState;
  if (numScanOut < 0 || n.output_size() != body->output_size())
    return absl::InvalidArgumentError("Scan's outputs do not match its body's");
  std::vector<ir::Value *> states, scans;
  for (int i = 0; i < numIn; ++i) {
    ir::Value *v = graph_->findValue(n.input(i));
    if (!v) return absl::InvalidArgumentError(absl::StrCat("Scan input ", i, " is not defined"));
    (i < numState ? states : scans).push_back(v);
  }
  int64_t T = -1;
  std::vector<int64_t> axes;
  for (size_t j = 0; j < scans.size(); ++j) {
    const TensorType &t = scans[j]->type();
    int64_t ax = j < inAxes.size() ? inAxes[j] : 0;
    if (!t.rankKnown) return err("scan inputs need a known rank");
    if (ax < 0) ax += t.rank();
    if (ax < 0 || ax >= t.rank() || !t.shape[static_cast<size_t>(ax)].isStatic())
      return err(absl::StrCat("the scan length (axis ", ax, " of input ", quotedName(scans[j]->name()),
                              ") must be static in the model: fusec unrolls Scan while importing"));
    const int64_t len = t.shape[static_cast<size_t>(ax)].value;
    if (T >= 0 && len != T) return absl::InvalidArgumentError("Scan inputs differ in scan length");
    T = len;
    axes.push_back(ax);
  }
  if (T > internal::kMaxUnrolledSteps)
    return err(absl::StrCat("scan length ", T, " is more than fusec's unrolling limit of ",
                            internal::kMaxUnrolledSteps));
  std::vector<std::vector<ir::Value *>> scanOuts(static_cast<size_t>(numScanOut));
  for (int64_t t = 0; t < T; ++t) {
    std::vector<ir::Value *> bound = states;
    for (size_t j = 0; j < scans.size(); ++j) {
      const bool rev = j < inDirs.size() && inDirs[j] != 0;
      ir::Value *idx = graph_->addConstant(freshValueName(absl::StrCat(name, "/t")),
                                           ir::Tensor::scalarInt(ir::DType::kI64, rev ? T - 1 - t : t));
      FUSEC_ASSIGN_OR_RETURN(ir::Value * slice,
                             addUnrolledNode("Gather", {scans[j], idx}, {{"axis", Attribute(axes[j])}},
                                             freshValueName(absl::StrCat(name, "/slice")), name));
      bound.push_back(slice);
    }
    FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Value *> outs,
                           importBody(*body, absl::StrCat(name, "/", t), bound, opset, depth,
                                      absl::StrCat("iteration ", t, " of Scan ", quotedName(name))));
    states.assign(outs.begin(), outs.begin() + numState);
    for (int k = 0; k < numScanOut; ++k) scanOuts[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(numState + k)]);
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    FUSEC_RETURN_IF_ERROR(checkNewValueName(n.output(i), "output"));
    if (i < numState) {
      FUSEC_RETURN_IF_ERROR(
          addUnrolledNode("Identity", {states[static_cast<size_t>(i)]}, {}, n.output(i), name).status());
      continue;
    }
    const size_t k = static_cast<size_t>(i - numState);
    const bool rev = k < outDirs.size() && outDirs[k] != 0;
    int64_t ax = k < outAxes.size() ? outAxes[k] : 0;
    if (T == 0) return err("a scan length of 0 is not supported");
    const int64_t r = scanOuts[k][0]->type().rankKnown ? scanOuts[k][0]->type().rank() + 1 : -1;
    if (ax < 0) {
      if (r < 0) return err("scan outputs need a known rank");
      ax += r;
    }
    std::vector<ir::Value *> parts = scanOuts[k];
    if (rev) std::reverse(parts.begin(), parts.end());
    FUSEC_RETURN_IF_ERROR(stackIterations(parts, ax, n.output(i), name));
  }
  return absl::OkStatus();
}

absl::StatusOr<ir::Value *> Importer::addUnrolledNode(const std::string &op,
                                                      std::vector<ir::Value *> in,
                                                      ir::AttributeMap attrs, const std::string &out,
                                                      const std::string &owner) {
  ir::Node *node = graph_->addNode(op, std::move(in), {out}, std::move(attrs),
                                   uniqueNodeName(absl::StrCat(owner, "/", op)));
  FUSEC_RETURN_IF_ERROR(ir::inferNodeTypes(*graph_, *node));
  return node->output(0);
}

absl::Status Importer::stackIterations(const std::vector<ir::Value *> &parts, int64_t axis,
                                       const std::string &out, const std::string &owner) {
  FUSEC_RET_CHECK(!parts.empty(), "stacking no iterations");
  std::vector<ir::Value *> stacked;
  for (ir::Value *v : parts) {
    ir::Value *axv = graph_->addConstant(freshValueName(absl::StrCat(owner, "/axes")),
                                         ir::Tensor::vectorI64({axis}));
    FUSEC_ASSIGN_OR_RETURN(ir::Value * u,
                           addUnrolledNode("Unsqueeze", {v, axv}, {},
                                           freshValueName(absl::StrCat(owner, "/stack")), owner));
    stacked.push_back(u);
  }
  return addUnrolledNode("Concat", std::move(stacked), {{"axis", Attribute(axis)}}, out, owner)
      .status();
}

std::vector<std::string> Importer::graphInputsFeeding(const ir::Value &v) const {
  absl::flat_hash_set<const ir::Value *> seen, found;
  std::vector<const ir::Value *> stack{&v};
  for (int budget = 4096; !stack.empty() && budget > 0; --budget) {
    const ir::Value *x = stack.back();
    stack.pop_back();
    if (!x || x->isConstant() || !seen.insert(x).second) continue;
    const ir::Node *p = x->producer();
    if (!p) {
      found.insert(x);
      continue;
    }
    for (int i = 0; i < p->numInputs(); ++i) stack.push_back(p->input(i));
  }
  std::vector<std::string> names;
  for (const ir::Value *in : graph_->inputs())
    if (found.contains(in)) names.push_back(in->name());
  return names;
}

absl::StatusOr<std::vector<ir::Tensor>> Importer::loopOperandsAtImport(
    const std::string &loop, const std::vector<std::pair<const ir::Value *, std::string>> &operands,
    const std::string &when) {
  std::vector<ir::Tensor> values;
  std::vector<std::string> unknown, inputs;
  for (const auto &[v, what] : operands) {
    int budget = 64;
    std::optional<ir::Tensor> t = evaluateConstantChain(v, budget, foldMemo_);
    if (!t) {
      unknown.push_back(what);
      for (const std::string &in : graphInputsFeeding(*v))
        if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
      continue;
    }
    if (t->numElements() != 1 || t->dtype() == ir::DType::kString)
      return absl::InvalidArgumentError(absl::StrCat(
          "Loop ", quotedName(loop), ": its ", what, " ", quotedName(v->name()), " is ",
          TensorType::fromShape(t->dtype(), t->shape()).str(), ", expected a scalar"));
    values.push_back(std::move(*t));
  }
  if (unknown.empty()) return values;
  std::string message = absl::StrCat(
      "Loop ", quotedName(loop), ": its ", absl::StrJoin(unknown, " and its "),
      unknown.size() == 1 ? " depends" : " depend", " on run-time data", when,
      "; fusec unrolls a Loop only when its trip count and condition are known at compile time "
      "(computed from initializers, Constants, --input-value inputs, static shapes and the "
      "iteration number)");
  if (inputs.empty()) return absl::UnimplementedError(message);
  std::vector<std::string> quoted;
  for (const std::string &in : inputs) quoted.push_back(quotedName(in));
  // The wording "needs the value of graph input(s) ... at compile time" is
  // what test/conformance/compile_node_tests.sh reads the names from.
  absl::StrAppend(&message, ", so it needs the value of graph input", inputs.size() == 1 ? " " : "s ",
                  absl::StrJoin(quoted, ", "), " at compile time: bind ",
                  inputs.size() == 1 ? "it" : "each",
                  " with --input-value NAME=@FILE.pb (a TensorProto) or NAME=v1,v2,...");
  absl::Status status = absl::UnimplementedError(message);
  status.SetPayload(kInputValuesNeededPayload, absl::Cord(absl::StrJoin(inputs, "\n")));
  return status;
}

// Loop (ONNX Operators.md "Loop", opsets 1 to 23+: inputs M, cond,
// v_initial...; body (iteration_num, cond_in, v...) -> (cond_out, v_out...,
// scan_outputs...); outputs the final v... then each scan output stacked
// along a new axis 0) whose trip count is known at import: unrolled.
// M and cond are evaluated while importing (initializers, Constants,
// --input-value inputs, static shapes: evaluateConstantChain); iteration i
// binds the constant i, the constant true (the loop only runs while cond
// is) and the values carried from iteration i-1 to the body, whose outer-
// scope names resolve to the enclosing graph. When cond is given, each
// iteration's cond_out must evaluate at import too (from the iteration
// number and constants, or cond_in passed through): the loop stops after the
// first iteration whose cond_out is false, as the spec's C form does; an
// absent cond ignores cond_out. Refused (Unimplemented, naming the node): M
// or a cond_out that depends on run-time data (naming the graph inputs to
// bind with --input-value), more than kMaxUnrolledSteps iterations or
// kMaxLoopUnrolledNodes body nodes, sequence / optional loop-carried values,
// and a loop that runs no iteration whose scan output's per-iteration shape
// is unknown (its empty [0, ...] result needs it). Malformed nodes (body
// arity, neither M nor cond, a non-scalar M) are InvalidArgument.
absl::Status Importer::importStaticLoop(const onnx::NodeProto &n, const std::string &name,
                                        int64_t opset, int depth) {
  auto refuse = [&](const std::string &why) {
    return absl::UnimplementedError(absl::StrCat("Loop ", quotedName(name), ": ", why));
  };
  auto invalid = [&](const std::string &why) {
    return absl::InvalidArgumentError(absl::StrCat("Loop ", quotedName(name), ": ", why));
  };
  if (depth >= kMaxFunctionDepth)
    return invalid(absl::StrCat("Loop bodies nest deeper than ", kMaxFunctionDepth, " levels"));
  const onnx::GraphProto *body = nullptr;
  for (const auto &a : n.attribute())
    if (a.name() == "body" && a.has_g()) body = &a.g();
  if (!body) return invalid("it has no body graph");
  if (n.input_size() < 2) return invalid("it needs the inputs M and cond (either may be empty)");
  const int numCarried = n.input_size() - 2;
  if (body->input_size() != numCarried + 2)
    return invalid(absl::StrCat("its body has ", body->input_size(), " inputs; with ", numCarried,
                                " loop-carried values it needs ", numCarried + 2,
                                " (iteration_num, cond, the values)"));
  const int numScanOut = body->output_size() - 1 - numCarried;
  if (numScanOut < 0)
    return invalid(absl::StrCat("its body has ", body->output_size(), " outputs; with ", numCarried,
                                " loop-carried values it needs at least ", numCarried + 1,
                                " (cond, the values)"));
  if (n.output_size() > numCarried + numScanOut)
    return invalid(absl::StrCat("it has ", n.output_size(), " outputs, its body gives ",
                                numCarried + numScanOut, " (the loop-carried values and the scan "
                                "outputs)"));
  for (const auto *list : {&body->input(), &body->output()})
    for (const auto &vi : *list)
      if (const char *kind = nonTensorKind(vi.type()))
        return refuse(absl::StrCat("its body's ", list == &body->input() ? "input " : "output ",
                                   quotedName(vi.name()), " is a ", kind,
                                   "; fusec unrolls a Loop whose loop-carried values and scan "
                                   "outputs are tensors"));
  std::vector<ir::Value *> carried;
  for (int i = 2; i < n.input_size(); ++i) {
    ir::Value *v = n.input(i).empty() ? nullptr : graph_->findValue(n.input(i));
    if (!v)
      return invalid(absl::StrCat("loop-carried input ", i, " ", quotedName(n.input(i)),
                                  " is not defined by an earlier node, an initializer or a graph "
                                  "input"));
    carried.push_back(v);
  }
  auto operand = [&](int i) -> absl::StatusOr<ir::Value *> {
    if (n.input(i).empty()) return nullptr;
    ir::Value *v = graph_->findValue(n.input(i));
    if (!v)
      return invalid(absl::StrCat("input ", i, " ", quotedName(n.input(i)),
                                  " is not defined by an earlier node, an initializer or a graph "
                                  "input"));
    return v;
  };
  FUSEC_ASSIGN_OR_RETURN(ir::Value * m, operand(0));
  FUSEC_ASSIGN_OR_RETURN(ir::Value * c, operand(1));
  if (!m && !c) return invalid("it has neither a trip count M nor a condition: it never stops");
  // Both are evaluated before either is refused, so that one error names
  // every graph input to bind.
  std::vector<std::pair<const ir::Value *, std::string>> operands;
  if (m) operands.emplace_back(m, "trip count M");
  if (c) operands.emplace_back(c, "condition cond");
  FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Tensor> known, loopOperandsAtImport(name, operands, ""));
  std::optional<int64_t> tripCount;
  if (m) {
    const ir::Tensor &t = known.front();
    if (!ir::isInteger(t.dtype()))
      return invalid(absl::StrCat("its trip count M is ", ir::dtypeName(t.dtype()), ", expected int64"));
    tripCount = std::max<int64_t>(0, t.getInt(0));
  }
  bool running = !c || known.back().getDouble(0) != 0.0;
  const int64_t bodyNodes = std::max(1, body->node_size());
  const int64_t maxIterations =
      std::min<int64_t>(internal::kMaxUnrolledSteps, kMaxLoopUnrolledNodes / bodyNodes);
  auto tooMany = [&](const std::string &count) {
    return refuse(absl::StrCat(
        "it runs ", count, " iterations of a body of ", body->node_size(),
        " nodes; fusec unrolls a Loop into at most ", internal::kMaxUnrolledSteps,
        " iterations and ", kMaxLoopUnrolledNodes, " body nodes in all (here at most ",
        maxIterations, " iterations)"));
  };
  // A trip count over the limit is refused before unrolling when nothing
  // can stop the loop earlier.
  if (running && tripCount && *tripCount > maxIterations && (!c || loopConditionPassesThrough(*body)))
    return tooMany(absl::StrCat("M = ", *tripCount));
  std::vector<std::vector<ir::Value *>> scanParts(static_cast<size_t>(numScanOut));
  // Binds iteration \p i's inputs and imports its body under NAME/i (or
  // \p prefix); \returns the body's outputs.
  auto iteration = [&](int64_t i, const std::string &prefix) {
    std::vector<ir::Value *> bound{
        graph_->addConstant(freshValueName(absl::StrCat(name, "/iteration_num")),
                            ir::Tensor::scalarInt(ir::DType::kI64, i)),
        graph_->addConstant(freshValueName(absl::StrCat(name, "/cond_in")),
                            ir::Tensor::scalarInt(ir::DType::kBool, 1))};
    bound.insert(bound.end(), carried.begin(), carried.end());
    return importBody(*body, prefix, bound, opset, depth,
                      absl::StrCat("iteration ", i, " of Loop ", quotedName(name)));
  };
  int64_t done = 0;
  while (running && (!tripCount || done < *tripCount)) {
    if (done >= maxIterations) return tooMany(absl::StrCat("more than ", maxIterations));
    FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Value *> outs,
                           iteration(done, absl::StrCat(name, "/", done)));
    if (c) {
      FUSEC_ASSIGN_OR_RETURN(
          std::vector<ir::Tensor> t,
          loopOperandsAtImport(name, {{outs[0], "condition (the body's cond_out)"}},
                               absl::StrCat(" at iteration ", done)));
      running = t[0].getDouble(0) != 0.0;
    }
    carried.assign(outs.begin() + 1, outs.begin() + 1 + numCarried);
    for (int k = 0; k < numScanOut; ++k)
      scanParts[static_cast<size_t>(k)].push_back(outs[static_cast<size_t>(1 + numCarried + k)]);
    ++done;
  }
  // With no iteration, a scan output is empty: [0, per-iteration shape...].
  // The shape is the body output's declared one, else what one iteration
  // imported aside (left unused, for dead-code elimination) infers.
  std::optional<std::vector<ir::Value *>> probe;
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    FUSEC_RETURN_IF_ERROR(checkNewValueName(n.output(i), "output"));
    if (i < numCarried) {
      FUSEC_RETURN_IF_ERROR(
          addUnrolledNode("Identity", {carried[static_cast<size_t>(i)]}, {}, n.output(i), name).status());
      continue;
    }
    const int k = i - numCarried;
    if (done > 0) {
      FUSEC_RETURN_IF_ERROR(stackIterations(scanParts[static_cast<size_t>(k)], 0, n.output(i), name));
      continue;
    }
    const onnx::ValueInfoProto &vi = body->output(1 + numCarried + k);
    TensorType per = TensorType::unranked(ir::DType::kUndefined);
    if (vi.has_type() && vi.type().has_tensor_type()) {
      absl::StatusOr<TensorType> declared = typeFromValueInfo(vi, "body output");
      if (declared.ok()) per = *declared;
    }
    if (!per.isStatic() && !probe) {
      absl::StatusOr<std::vector<ir::Value *>> outs = iteration(0, absl::StrCat(name, "/shape"));
      if (!outs.ok())
        return refuse(absl::StrCat(
            "it runs no iteration, and the shape of scan output ", quotedName(n.output(i)),
            " (an empty tensor of one iteration's shape) is not declared; importing one "
            "iteration to infer it failed: ", outs.status().message()));
      probe = std::move(*outs);
    }
    if (!per.isStatic() && probe)
      per = (*probe)[static_cast<size_t>(1 + numCarried + k)]->type();
    if (!per.isStatic() || per.dtype == ir::DType::kUndefined)
      return refuse(absl::StrCat("it runs no iteration, and the per-iteration shape of scan output ",
                                 quotedName(n.output(i)), " is not static (", per.str(),
                                 "): its empty result [0, ...] needs it"));
    ir::Shape shape{0};
    for (int64_t d : per.staticShape()) shape.push_back(d);
    graph_->addConstant(n.output(i), ir::Tensor(per.dtype, shape));
  }
  return absl::OkStatus();
}

absl::Status Importer::expandLibraryFunction(const onnx::NodeProto &n, const std::string &name,
                                             int64_t opset, int depth) {
  if (depth >= kMaxFunctionDepth)
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX function bodies nest deeper than ", kMaxFunctionDepth, " levels"));
  std::vector<onnx::TypeProto> inputTypes;
  for (const std::string &in : n.input())
    inputTypes.push_back(typeProtoOf(in.empty() ? nullptr : graph_->findValue(in)));
  FUSEC_ASSIGN_OR_RETURN(
      internal::LibraryFunction f,
      internal::libraryFunctionFor(n, name, opset, inputTypes,
                                   [this](const std::string &b) { return freshValueName(b); }));
  for (const onnx::NodeProto &p : f.prelude) FUSEC_RETURN_IF_ERROR(importConstantNode(p, p.name()));
  FUSEC_ASSIGN_OR_RETURN(
      std::vector<onnx::NodeProto> body,
      internal::instantiateFunctionBody(
          f.call, name, f.body, f.defaults,
          [this](const std::string &b) { return freshValueName(b); },
          [this](const std::string &b) { return uniqueNodeName(b); }));
  for (const onnx::NodeProto &b : body)
    FUSEC_RETURN_IF_ERROR_CTX(importNode(b, b.name(), f.bodyOpset, depth + 1),
                              "in the ONNX function body of ", printable(n.op_type()),
                              " (from ", f.source, "): node ", quotedName(b.name()), " (",
                              printable(b.op_type()), ")");
  return absl::OkStatus();
}

absl::Status Importer::importNode(const onnx::NodeProto &n, const std::string &name,
                                  int64_t opset, int depth) {
  if (isOnnxDomain(n.domain()) && n.op_type() == "Constant") return importConstantNode(n, name);
  if (isOnnxDomain(n.domain()) && n.op_type() == "If") return importConstantIf(n, name, opset, depth);
  if (isOnnxDomain(n.domain()) && n.op_type() == "Scan") return importStaticScan(n, name, opset, depth);
  if (isOnnxDomain(n.domain()) && n.op_type() == "Loop") return importStaticLoop(n, name, opset, depth);
  if (depth > 0) {
    // Nodes of a function body were not seen by checkSupported().
    std::string why;
    if (!isMappedContribNode(n) &&
        (!isOnnxDomain(n.domain()) || !acceptsOnnxOp(n.op_type(), opset, &why)))
      return absl::UnimplementedError(absl::StrCat(
          "op ", quotedName(n.op_type()), " domain ", quotedName(domainName(n.domain())),
          " is not supported", why.empty() ? "" : absl::StrCat(" (", printable(why), ")")));
  }
  if (isOnnxDomain(n.domain()) && !ir::lookupOp(n.op_type()) &&
      !internal::isExpandedFunctionOp(n.op_type()))
    return expandLibraryFunction(n, name, opset, depth);

  NodeSpec spec;
  spec.opType = n.op_type();
  spec.domain = isOnnxDomain(n.domain()) ? "" : n.domain();
  spec.name = name;
  int numIn = n.input_size();
  while (numIn > 0 && n.input(numIn - 1).empty()) --numIn;
  for (int i = 0; i < numIn; ++i) {
    if (n.input(i).empty()) {
      spec.inputs.push_back(nullptr);
      continue;
    }
    ir::Value *v = graph_->findValue(n.input(i));
    if (!v)
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " ", quotedName(n.input(i)),
          " is not defined by an earlier node, an initializer or a graph input"));
    spec.inputs.push_back(v);
  }
  int numOut = n.output_size();
  while (numOut > 0 && n.output(numOut - 1).empty()) --numOut;
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < numOut; ++i) {
    std::string out = n.output(i);
    if (out.empty()) {
      // An omitted optional output in the middle still needs a value.
      out = graph_->uniqueName(absl::StrCat(name, "_unused", i));
      spec.outputOmitted.push_back(true);
    } else {
      spec.outputOmitted.push_back(false);
      FUSEC_RETURN_IF_ERROR(checkNewValueName(out, "output"));
      if (!seen.insert(out).second)
        return absl::InvalidArgumentError(absl::StrCat("output ", quotedName(out), " is listed twice"));
    }
    spec.outputs.push_back(std::move(out));
  }
  // Attribute kinds against the op table's schema, before the upgrade reads
  // any (a wrong kind was read as the default, silently).
  const ir::OpInfo *schema = isOnnxDomain(n.domain()) ? ir::lookupOp(n.op_type()) : nullptr;
  for (const auto &a : n.attribute()) {
    FUSEC_ASSIGN_OR_RETURN(Attribute attr, convertAttribute(a));
    if (schema) FUSEC_RETURN_IF_ERROR(ir::verifyAttributeKind(schema->kind, a.name(), attr));
    // The IR verifier lets an int stand for a float (text IR writes
    // `alpha = 2`); an ONNX file must use the declared type (the checker
    // and ONNX Runtime refuse an INT where a FLOAT is declared).
    if (schema && attr.kind() == Attribute::Kind::kInt) {
      const ir::AttrSpec *as = ir::findAttrSpec(schema->kind, a.name());
      if (as && as->kind == Attribute::Kind::kFloat)
        return absl::InvalidArgumentError(absl::StrCat("attribute ", quotedName(a.name()),
                                                       " is INT, expected FLOAT"));
    }
    if (spec.attrs.count(a.name()))
      return absl::InvalidArgumentError(
          absl::StrCat("attribute ", quotedName(a.name()), " is given twice"));
    spec.attrs[a.name()] = std::move(attr);
  }

  FUSEC_ASSIGN_OR_RETURN(
      std::vector<ir::Node *> added,
      internal::addUpgradedNode(*graph_, std::move(spec), opset,
                                [this](const std::string &b) { return uniqueNodeName(b); }));
  for (ir::Node *node : added) {
    const ir::OpInfo *info = node->op();
    if (info && node->numInputs() < info->minInputs)
      return absl::InvalidArgumentError(absl::StrCat("has ", node->numInputs(),
                                                     " inputs, needs at least ", info->minInputs));
    if (info && node->numOutputs() < info->minOutputs)
      return absl::InvalidArgumentError(absl::StrCat(
          "has ", node->numOutputs(), " outputs, needs at least ", info->minOutputs));
    // Folding is tried only where the operands as they are leave a result
    // shape unknown (or fail inference), so that the imported IR keeps the
    // model's own form wherever it already has static shapes.
    absl::Status inferred = ir::inferNodeTypes(*graph_, *node);
    bool outputsStatic = inferred.ok();
    for (const ir::Value *out : node->outputs())
      outputsStatic = outputsStatic && (!out || out->type().isStatic());
    if (!outputsStatic && foldMetadataOperands(*node)) inferred = ir::inferNodeTypes(*graph_, *node);
    FUSEC_RETURN_IF_ERROR(inferred);
    for (ir::Value *out : node->outputs()) {
      auto it = declared_.find(out->name());
      if (it == declared_.end()) continue;
      // A graph output's declared type is part of the model's interface: a
      // dtype that contradicts what the op computes makes the model invalid.
      // A contradicting shape is a warning, and the computed shape is used,
      // as ONNX Runtime does (VerifyOutputSizes warns and runs): exporters
      // write stale output shapes (ddddocr's OCR declares [1, seqlen] for a
      // [T, 1, classes] result; red team s28 M5).
      if (declaredOutputs_.contains(out->name())) {
        const std::string what = absl::StrCat("graph output ", quotedName(out->name()));
        ir::TensorType declaredDtypeOnly = ir::TensorType::unranked(it->second.dtype);
        FUSEC_RETURN_IF_ERROR(ir::checkDeclaredType(out->type(), declaredDtypeOnly, what));
        if (!ir::checkDeclaredType(out->type(), it->second, what).ok()) {
          graph_->addImportWarning(absl::StrCat(
              what, " is declared ", it->second.str(), " but its op gives ", out->type().str(),
              ": fusec uses the computed shape (the artifact's manifest records it), as ONNX "
              "Runtime does"));
          continue;
        }
      }
      out->setType(refineType(out->type(), it->second));
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::importOutputs() {
  for (const auto &vi : graphProto_.output()) {
    ir::Value *v = graph_->findValue(vi.name());
    if (!v)
      return absl::InvalidArgumentError(
          absl::StrCat("graph output ", quotedName(vi.name()), " is not defined by any node"));
    graph_->markOutput(v);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ir::Graph>> Importer::run() {
  FUSEC_RETURN_IF_ERROR(readOpsets());
  if (!graphProto_.name().empty()) graph_->setName(toIdentifier(graphProto_.name()));
  assignNodeNames();
  for (const auto &v : graphProto_.input()) reservedValueNames_.insert(v.name());
  for (const auto &v : graphProto_.output()) reservedValueNames_.insert(v.name());
  for (const auto &t : graphProto_.initializer()) reservedValueNames_.insert(t.name());
  for (const auto &n : graphProto_.node())
    for (const auto &o : n.output()) reservedValueNames_.insert(o);
  FUSEC_RETURN_IF_ERROR(checkSupported());
  FUSEC_RETURN_IF_ERROR(importInitializersAndInputs());
  FUSEC_RETURN_IF_ERROR(readDeclaredTypes());
  for (int i = 0; i < graphProto_.node_size(); ++i) {
    const auto &n = graphProto_.node(i);
    FUSEC_RETURN_IF_ERROR(withImportContext(importNode(n, nodeNames_[i], opset_, 0),
                                            absl::StrCat("importing node ", quotedName(nodeNames_[i]),
                                                         " (", printable(n.op_type()), ")")));
  }
  FUSEC_RETURN_IF_ERROR(importOutputs());
  return std::move(graph_);
}

/// Parses \p bytes as a protobuf message without the 64 MiB default limit of
/// older protobuf releases (the format itself caps a message at 2 GiB).
template <typename Message>
bool parseLarge(const std::string &bytes, Message &msg) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return false;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  return msg.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

std::string parentDir(const std::string &path) {
  fs::path p = fs::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

}  // namespace

namespace {

absl::StatusOr<std::unique_ptr<ir::Graph>> importParsed(onnx::ModelProto &model,
                                                        const std::string &what,
                                                        const std::string &modelDir,
                                                        const ImportOptions &options) {
  if (!model.has_graph())
    return absl::InvalidArgumentError(
        absl::StrCat("failed to parse ", what, " as an ONNX ModelProto: it has no graph"));
  FUSEC_RETURN_IF_ERROR(internal::inlineLocalFunctions(model));
  Importer importer(model, modelDir, options);
  return importer.run();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ir::Graph>> importOnnxModel(const std::string &path) {
  return importOnnxModel(path, ImportOptions{});
}

absl::StatusOr<std::unique_ptr<ir::Graph>> importOnnxModel(const std::string &path,
                                                           const ImportOptions &options) {
  FUSEC_ASSIGN_OR_RETURN(std::string bytes, internal::readFileBytes(path));
  onnx::ModelProto model;
  if (!parseLarge(bytes, model))
    return absl::InvalidArgumentError(absl::StrCat(
        "failed to parse ", quotedName(path), " as an ONNX ModelProto (truncated or corrupt file?)"));
  bytes.clear();
  bytes.shrink_to_fit();
  return importParsed(model, quotedName(path), parentDir(path), options);
}

absl::StatusOr<std::unique_ptr<ir::Graph>> importOnnxModelFromBytes(
    const std::string &bytes, const std::string &modelDir, const ImportOptions &options) {
  onnx::ModelProto model;
  if (!parseLarge(bytes, model))
    return absl::InvalidArgumentError(
        "failed to parse the bytes as an ONNX ModelProto (truncated or corrupt?)");
  // With no folder, every external location resolves inside an empty,
  // non-existent one and is refused as not found.
  return importParsed(model, "the model bytes",
                      modelDir.empty() ? std::string("/nonexistent-fusec-model-dir") : modelDir,
                      options);
}

bool importerSupportsOp(const std::string &domain, const std::string &opType, int64_t opset) {
  if (domain == internal::kContribDomain) return internal::isMappedContribOp(opType);
  // Scan is unrolled over a static scan length (importStaticScan), Loop
  // over a trip count known at import (importStaticLoop); If is inlined on
  // a constant condition, else imported with both branches guarded
  // (importRuntimeIf).
  if (isOnnxDomain(domain) && opType == "Scan") return opset >= 9;
  if (isOnnxDomain(domain) && opType == "Loop") return true;
  if (isOnnxDomain(domain) && opType == "If") return true;
  return isOnnxDomain(domain) && acceptsOnnxOp(opType, opset, nullptr);
}

std::vector<std::string> inputValuesNeeded(const absl::Status &status) {
  auto payload = status.GetPayload(kInputValuesNeededPayload);
  if (!payload) return {};
  return absl::StrSplit(std::string(*payload), '\n', absl::SkipEmpty());
}

absl::StatusOr<ir::Tensor> loadTensorProtoFile(const std::string &path, std::string *name) {
  FUSEC_ASSIGN_OR_RETURN(std::string bytes, internal::readFileBytes(path));
  onnx::TensorProto proto;
  if (!parseLarge(bytes, proto))
    return absl::InvalidArgumentError(
        absl::StrCat("failed to parse ", quotedName(path), " as an ONNX TensorProto"));
  if (name) *name = proto.name();
  return internal::tensorFromProto(proto, parentDir(path));
}

}  // namespace fusec::frontend
