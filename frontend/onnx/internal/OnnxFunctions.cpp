//===- OnnxFunctions.cpp - ONNX function ops from the ONNX library --------===//
//
// Version selection. The model's opset selects, for each op, the newest
// schema version <= opset of the pinned onnx release (the generated table
// lists every version of every op that is a function in some version). The
// linked library's schema for the same opset is used when its version is
// that one, or an older one such that every version in between kept the
// interface (attributes with defaults, inputs, outputs: only types changed).
// One more case is allowed by hand, checked against onnx 1.23.2's schemas:
// CastLike-15 serves CastLike-19..25, whose new attributes (saturate,
// round_mode) act only on float8/float4 targets, dtypes fusec refuses at
// import.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/OnnxFunctions.h"

#include <algorithm>
#include <exception>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "onnx/defs/data_type_utils.h"
#include "onnx/defs/schema.h"
#include "support/Escape.h"

namespace fusec::frontend::internal {
namespace {

/// One row of OnnxFunctionBodies.inc.
struct GeneratedRow {
  const char *op;
  int since;
  bool sameInterfaceAsPrevious;
  bool contextDependent;
  bool deprecated;
  const char *body;
  size_t bodySize;
  const char *defaults;
  size_t defaultsSize;
  const char *note;
};

#define FUSEC_ONNX_FUNCTION(op, since, same, cdf, dep, body, bodySize, defaults, defaultsSize, \
                            note)                                                           \
  GeneratedRow{op, since, same, cdf, dep, body, bodySize, defaults, defaultsSize, note},
constexpr GeneratedRow kGeneratedRows[] = {
#include "frontend/onnx/internal/OnnxFunctionBodies.inc"
};
#undef FUSEC_ONNX_FUNCTION

constexpr const char *kGeneratedSource = "onnx 1.23.2's schemas (OnnxFunctionBodies.inc)";
constexpr const char *kLinkedSource = "the linked onnx library's schemas";

/// A parsed row.
struct Version {
  int64_t since = 0;
  bool sameInterfaceAsPrevious = false;
  bool contextDependent = false;
  bool hasBody = false;
  onnx::FunctionProto body;
  std::vector<onnx::AttributeProto> defaults;
};

const std::map<std::string, std::vector<Version>> &generatedVersions() {
  static const std::map<std::string, std::vector<Version>> *table = [] {
    auto *t = new std::map<std::string, std::vector<Version>>();
    for (const GeneratedRow &r : kGeneratedRows) {
      Version v;
      v.since = r.since;
      v.sameInterfaceAsPrevious = r.sameInterfaceAsPrevious;
      v.contextDependent = r.contextDependent;
      v.hasBody = r.bodySize > 0 && v.body.ParseFromArray(r.body, static_cast<int>(r.bodySize));
      onnx::NodeProto d;
      if (d.ParseFromArray(r.defaults, static_cast<int>(r.defaultsSize)))
        v.defaults.assign(d.attribute().begin(), d.attribute().end());
      (*t)[r.op].push_back(std::move(v));
    }
    return t;
  }();
  return *table;
}

/// Reductions whose axes moved from an attribute to input 1 at opset 18.
bool isAxesInputReduction(const std::string &op) {
  return op == "ReduceL1" || op == "ReduceLogSum" || op == "ReduceLogSumExp";
}

/// The generated version \p opset selects, or null.
const Version *selectedVersion(const std::vector<Version> &versions, int64_t opset) {
  const Version *sel = nullptr;
  for (const Version &v : versions)
    if (v.since <= opset) sel = &v;
  return sel;
}

/// True if the linked schema of version \p linked may stand for version
/// \p wanted (see the file comment).
bool linkedServes(const std::string &op, const std::vector<Version> &versions, int64_t linked,
                  int64_t wanted) {
  if (linked == wanted) return true;
  if (linked > wanted) return false;
  if (op == "CastLike" && linked == 15 && wanted <= 25) return true;
  for (const Version &v : versions)
    if (v.since > linked && v.since <= wanted && !v.sameInterfaceAsPrevious) return false;
  return true;
}

/// The linked library's schema usable for \p op at \p wanted, or null.
/// With \p exactOnly, only a schema of version \p wanted itself.
const onnx::OpSchema *linkedSchema(const std::string &op, const std::vector<Version> &versions,
                                   int64_t opset, int64_t wanted, bool exactOnly) {
  const onnx::OpSchema *s = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset), "");
  if (!s || !(s->HasFunction() || s->HasContextDependentFunction())) return nullptr;
  if (exactOnly ? s->SinceVersion() != wanted
                : !linkedServes(op, versions, s->SinceVersion(), wanted))
    return nullptr;
  return s;
}

/// The first input whose element type \p s does not take ("" if none): an
/// older linked schema serving a newer version may lack the types the newer
/// version added, and its body may be written for its own types only.
std::string typeTheSchemaLacks(const onnx::OpSchema &s,
                               const std::vector<onnx::TypeProto> &inputTypes) {
  const auto &formals = s.inputs();
  for (size_t i = 0; i < inputTypes.size() && i < formals.size(); ++i) {
    const onnx::TypeProto &t = inputTypes[i];
    if (!t.has_tensor_type() || t.tensor_type().elem_type() == 0) continue;
    onnx::TypeProto bare;
    bare.mutable_tensor_type()->set_elem_type(t.tensor_type().elem_type());
    try {
      if (formals[i].GetTypes().count(onnx::Utils::DataTypeUtils::ToType(bare))) continue;
    } catch (const std::exception &) {
    }
    return absl::StrCat("input ", i, " (element type ", t.tensor_type().elem_type(), ")");
  }
  return "";
}

std::vector<onnx::AttributeProto> linkedDefaults(const onnx::OpSchema &s) {
  std::vector<onnx::AttributeProto> out;
  for (const auto &[name, attr] : s.attributes()) {
    if (attr.default_value.type() == onnx::AttributeProto::UNDEFINED) continue;
    onnx::AttributeProto a = attr.default_value;
    a.set_name(name);
    out.push_back(std::move(a));
  }
  return out;
}

int64_t onnxOpsetOf(const onnx::FunctionProto &f, int64_t fallback) {
  for (const auto &os : f.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") return os.version();
  return fallback;
}

}  // namespace

FunctionLookup lookupLibraryFunction(const std::string &opType, int64_t opset) {
  FunctionLookup out;
  const auto &table = generatedVersions();
  auto it = table.find(opType);
  if (it == table.end()) return out;
  const std::vector<Version> &versions = it->second;
  const Version *sel = selectedVersion(versions, opset);
  if (sel && sel->since < 18 && isAxesInputReduction(opType) && opset < 18)
    sel = selectedVersion(versions, 18);  // expanded in its opset-18 form
  if (!sel) return out;
  out.sinceVersion = sel->since;
  const int64_t lookupOpset = std::max<int64_t>(opset, sel->since);
  // The linked library first for the version itself; then the pinned
  // release's plain body; then an older linked version that still serves.
  const onnx::OpSchema *s =
      linkedSchema(opType, versions, lookupOpset, sel->since, /*exactOnly=*/true);
  if (!s && !sel->hasBody)
    s = linkedSchema(opType, versions, lookupOpset, sel->since, /*exactOnly=*/false);
  if (s) {
    out.source = kLinkedSource;
    if (s->HasFunction()) {
      out.kind = FunctionLookup::Kind::kBody;
      out.body = s->GetFunction();
    } else {
      out.kind = FunctionLookup::Kind::kContextDependent;
    }
    return out;
  }
  if (sel->hasBody) {
    out.kind = FunctionLookup::Kind::kBody;
    out.body = &sel->body;
    out.source = kGeneratedSource;
    return out;
  }
  bool anyFunction = false;
  for (const Version &v : versions) anyFunction |= v.hasBody || v.contextDependent;
  if (!sel->contextDependent && !anyFunction) return out;
  out.kind = FunctionLookup::Kind::kUnavailable;
  out.why = sel->contextDependent
                ? absl::StrCat(opType, "-", sel->since,
                               " is defined by a context-dependent function, which the linked onnx "
                               "library (opsets up to ",
                               onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                                   .Map()
                                   .at("")
                                   .second,
                               ") does not build")
                : absl::StrCat(opType, "-", sel->since, " has no function body");
  return out;
}

absl::StatusOr<LibraryFunction> libraryFunctionFor(
    const onnx::NodeProto &call, const std::string &callName, int64_t opset,
    const std::vector<onnx::TypeProto> &inputTypes,
    const std::function<std::string(const std::string &)> &freshValue) {
  const std::string &op = call.op_type();
  FunctionLookup look = lookupLibraryFunction(op, opset);
  if (look.kind == FunctionLookup::Kind::kNotAFunction)
    return absl::NotFoundError(absl::StrCat(printable(op), " is not an ONNX function"));
  if (look.kind == FunctionLookup::Kind::kUnavailable) return absl::UnimplementedError(look.why);

  LibraryFunction out;
  out.call = call;
  out.source = look.source;
  if (isAxesInputReduction(op) && opset < 18) {
    // The opset-18 form: axes as input 1, from a Constant node.
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> kept;
    for (const auto &a : call.attribute()) {
      if (a.name() != "axes") {
        *kept.Add() = a;
        continue;
      }
      if (call.input_size() > 1 && !call.input(1).empty())
        return absl::InvalidArgumentError("has both the attribute 'axes' and input 1");
      onnx::NodeProto c;
      c.set_op_type("Constant");
      c.set_name(absl::StrCat(callName, "/axes"));
      std::string axesName = freshValue(absl::StrCat(callName, "/axes"));
      c.add_output(axesName);
      auto *v = c.add_attribute();
      v->set_name("value_ints");
      v->set_type(onnx::AttributeProto::INTS);
      *v->mutable_ints() = a.ints();
      out.prelude.push_back(std::move(c));
      while (out.call.input_size() < 2) out.call.add_input("");
      out.call.set_input(1, axesName);
    }
    out.call.mutable_attribute()->Swap(&kept);
  }

  const onnx::OpSchema *schema = nullptr;
  if (look.source == kLinkedSource) {
    const auto &versions = generatedVersions().at(op);
    const int64_t lookupOpset = std::max<int64_t>(opset, look.sinceVersion);
    schema = linkedSchema(op, versions, lookupOpset, look.sinceVersion, true);
    if (!schema) {
      schema = linkedSchema(op, versions, lookupOpset, look.sinceVersion, false);
      std::string lacks = typeTheSchemaLacks(*schema, inputTypes);
      if (!lacks.empty())
        return absl::UnimplementedError(absl::StrCat(
            printable(op), "-", look.sinceVersion,
            " has a context-dependent function body that the linked onnx library builds only in "
            "its version ", schema->SinceVersion(), ", which does not take ", lacks));
    }
  }
  if (look.kind == FunctionLookup::Kind::kBody) {
    out.body = *look.body;
  } else {
    // Context-dependent: the library writes the body for this node. Its
    // builders read the required inputs' types without checking them, so a
    // missing or untyped required input is refused here.
    if (!schema) return absl::InternalError(absl::StrCat("no linked schema for ", printable(op)));
    const auto &formals = schema->inputs();
    for (size_t i = 0; i < formals.size(); ++i) {
      if (formals[i].GetOption() != onnx::OpSchema::FormalParameterOption::Single) continue;
      bool present = static_cast<int>(i) < out.call.input_size() && !out.call.input(i).empty();
      bool typed = i < inputTypes.size() && inputTypes[i].has_tensor_type() &&
                   inputTypes[i].tensor_type().elem_type() != 0;
      if (!present || !typed)
        return absl::InvalidArgumentError(absl::StrCat(
            printable(op), " input ", i, " ('", formals[i].GetName(), "') is ",
            present ? "of unknown element type" : "missing",
            "; the ONNX function body needs it"));
    }
    onnx::FunctionBodyBuildContextImpl ctx(out.call, inputTypes);
    bool built = false;
    std::string error;
    try {
      built = schema->BuildContextDependentFunction(ctx, out.body);
    } catch (const std::exception &e) {
      error = e.what();
    }
    if (!built)
      return absl::InvalidArgumentError(absl::StrCat(
          "the onnx library could not build the function body of ", printable(op),
          " for this node (its attributes or input types)", error.empty() ? "" : ": ",
          printable(error)));
  }
  if (schema) {
    out.defaults = linkedDefaults(*schema);
  } else {
    if (const Version *sel = selectedVersion(generatedVersions().at(op), look.sinceVersion))
      out.defaults = sel->defaults;
  }
  out.bodyOpset = onnxOpsetOf(out.body, look.sinceVersion);
  return out;
}

}  // namespace fusec::frontend::internal
