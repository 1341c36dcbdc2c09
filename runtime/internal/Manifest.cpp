//===- Manifest.cpp - Parse and check an artifact's manifest.json -===//
//
// Field names and meanings follow docs/ARTIFACT.md (format version 1). Every
// error names the offending entry ("buffers[3] 'h0'", "steps[1] 'k1_gemm'")
// and field, so a code-generator bug is easy to find from the message alone.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/Manifest.h"

#include "fusert/fusert_cpu_kernel.h"
#include "runtime/ArtifactFormat.h"
#include "runtime/cpu/CpuFeatures.h"
#include "runtime/internal/Checksum.h"
#include "runtime/internal/ManifestDigest.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace fusec::rt {
namespace {

using Json = nlohmann::json;

const char *typeName(const Json &v) { return v.type_name(); }

Status missing(const std::string &where, const char *key) {
  return invalidArgument(where, ": missing field '", key, "'");
}

Status mistyped(const std::string &where, const char *key, const char *want,
                const Json &v) {
  return invalidArgument(where, ": field '", key, "' must be ", want,
                         ", got ", typeName(v));
}

/// Looks up \p key; \returns false in \p found if absent.
const Json *lookup(const Json &obj, const char *key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Status getString(const Json &obj, const char *key, const std::string &where,
                 std::string &out, bool required = true) {
  const Json *v = lookup(obj, key);
  if (!v)
    return required ? missing(where, key) : Status();
  if (!v->is_string())
    return mistyped(where, key, "a string", *v);
  out = v->get<std::string>();
  return Status();
}

Status getInt(const Json &obj, const char *key, const std::string &where,
              int64_t &out, bool required = true) {
  const Json *v = lookup(obj, key);
  if (!v)
    return required ? missing(where, key) : Status();
  if (!v->is_number_integer())
    return mistyped(where, key, "an integer", *v);
  out = v->get<int64_t>();
  return Status();
}

Status getNonNegative(const Json &obj, const char *key,
                      const std::string &where, uint64_t &out,
                      bool required = true) {
  int64_t v = static_cast<int64_t>(out);
  FUSERT_RETURN_IF_ERROR(getInt(obj, key, where, v, required));
  if (v < 0)
    return invalidArgument(where, ": field '", key, "' must be >= 0, got ", v);
  out = static_cast<uint64_t>(v);
  return Status();
}

Status getId(const Json &obj, const char *key, const std::string &where,
             int &out, bool required = true) {
  int64_t v = out;
  FUSERT_RETURN_IF_ERROR(getInt(obj, key, where, v, required));
  if (v < -1 || v > INT32_MAX)
    return invalidArgument(where, ": field '", key, "' out of range: ", v);
  out = static_cast<int>(v);
  return Status();
}

Status getBool(const Json &obj, const char *key, const std::string &where,
               bool &out) {
  const Json *v = lookup(obj, key);
  if (!v)
    return Status();
  if (!v->is_boolean())
    return mistyped(where, key, "a boolean", *v);
  out = v->get<bool>();
  return Status();
}

Status getDouble(const Json &obj, const char *key, const std::string &where,
                 double &out) {
  const Json *v = lookup(obj, key);
  if (!v)
    return Status();
  if (!v->is_number())
    return mistyped(where, key, "a number", *v);
  out = v->get<double>();
  return Status();
}

Status getIntArray(const Json &obj, const char *key, const std::string &where,
                   std::vector<int64_t> &out, bool required = true) {
  const Json *v = lookup(obj, key);
  if (!v)
    return required ? missing(where, key) : Status();
  if (!v->is_array())
    return mistyped(where, key, "an array of integers", *v);
  out.clear();
  for (const Json &e : *v) {
    if (!e.is_number_integer())
      return mistyped(where, key, "an array of integers", e);
    out.push_back(e.get<int64_t>());
  }
  return Status();
}

Status getDType(const Json &obj, const char *key, const std::string &where,
                fusert_dtype &out) {
  std::string name;
  FUSERT_RETURN_IF_ERROR(getString(obj, key, where, name));
  if (!parseDType(name, out))
    return invalidArgument(where, ": unknown dtype '", name, "'");
  return Status();
}

Status getShape(const Json &obj, const std::string &where,
                std::vector<int64_t> &out) {
  FUSERT_RETURN_IF_ERROR(getIntArray(obj, "shape", where, out));
  for (int64_t d : out)
    if (d < 0)
      return invalidArgument(where, ": negative dim ", d,
                             " (shapes are static in format version 1)");
  return Status();
}

/// A dim or size of a dynamic manifest: an integer >= 0, or the text of a
/// product "4*batch*seq" of a positive coefficient and symbol names.
Status parseExtent(const Json &v, const std::vector<SymbolDesc> &syms, const std::string &where,
                   const char *what, Extent &out) {
  out = Extent();
  if (v.is_number_integer()) {
    out.coeff = v.get<int64_t>();
    if (out.coeff < 0)
      return invalidArgument(where, ": negative ", what, " ", out.coeff);
    return Status();
  }
  if (!v.is_string())
    return invalidArgument(where, ": ", what, " must be an integer or a product of symbols, not ",
                           typeName(v));
  const std::string text = v.get<std::string>();
  out.coeff = 1;
  size_t at = 0;
  bool first = true;
  while (at <= text.size()) {
    size_t star = text.find('*', at);
    if (star == std::string::npos)
      star = text.size();
    const std::string factor = text.substr(at, star - at);
    bool digits = !factor.empty();
    for (char c : factor)
      digits = digits && c >= '0' && c <= '9';
    if (first && digits && factor.size() <= 15) {
      out.coeff = std::stoll(factor);
    } else {
      size_t k = 0;
      while (k < syms.size() && syms[k].name != factor)
        ++k;
      if (k == syms.size())
        return invalidArgument(where, ": ", what, " '", text, "' names '", factor,
                               "', which is not one of the manifest's symbols");
      out.symbols.push_back(static_cast<int>(k));
    }
    first = false;
    at = star + 1;
  }
  if (out.symbols.empty() || out.coeff < 1)
    return invalidArgument(where, ": ", what, " '", text, "' is not a product of symbols");
  return Status();
}

std::string entry(const char *list, size_t i, const std::string &name) {
  return strCat(list, "[", i, "]", name.empty() ? "" : " '", name,
                name.empty() ? "" : "'");
}

/// Dynamic shapes: "shape" as extents into \p dims (values come from
/// applyBinding).
Status getDims(const Json &j, const std::vector<SymbolDesc> &syms, const std::string &where,
               std::vector<Extent> &dims) {
  const Json *v = lookup(j, "shape");
  if (!v)
    return missing(where, "shape");
  if (!v->is_array())
    return mistyped(where, "shape", "an array", *v);
  dims.assign(v->size(), Extent());
  for (size_t k = 0; k < v->size(); ++k)
    FUSERT_RETURN_IF_ERROR(parseExtent((*v)[k], syms, where, "dim", dims[k]));
  return Status();
}

Status parseBuffer(const Json &j, size_t i, const std::vector<SymbolDesc> &syms, BufferDesc &b) {
  std::string where = entry("buffers", i, "");
  if (!j.is_object())
    return invalidArgument(where, ": must be an object");
  getString(j, "name", where, b.name, /*required=*/false);
  where = entry("buffers", i, b.name);
  FUSERT_RETURN_IF_ERROR(getId(j, "id", where, b.id));
  FUSERT_RETURN_IF_ERROR(getDType(j, "dtype", where, b.dtype));
  if (syms.empty()) {
    FUSERT_RETURN_IF_ERROR(getShape(j, where, b.shape));
    FUSERT_RETURN_IF_ERROR(getNonNegative(j, "bytes", where, b.bytes));
  } else {
    FUSERT_RETURN_IF_ERROR(getDims(j, syms, where, b.dims));
    const Json *bytes = lookup(j, "bytes");
    if (!bytes)
      return missing(where, "bytes");
    FUSERT_RETURN_IF_ERROR(parseExtent(*bytes, syms, where, "bytes", b.size));
    if (const Json *live = lookup(j, "live")) {
      if (!live->is_array() || live->size() != 2 || !(*live)[0].is_number_integer() ||
          !(*live)[1].is_number_integer())
        return mistyped(where, "live", "[first step, last step]", *live);
      const int64_t f = (*live)[0].get<int64_t>(), l = (*live)[1].get<int64_t>();
      if (f < 0 || l < f || l > INT32_MAX)
        return invalidArgument(where, ": live range [", f, ", ", l, "] is not a step range");
      b.liveFirst = static_cast<int>(f);
      b.liveLast = static_cast<int>(l);
    }
  }
  std::string storage;
  FUSERT_RETURN_IF_ERROR(getString(j, "storage", where, storage));
  if (storage == fusec::artifact_format::kStorageInput || storage == fusec::artifact_format::kStorageOutput) {
    b.storage = storage == fusec::artifact_format::kStorageInput ? Storage::kInput : Storage::kOutput;
    FUSERT_RETURN_IF_ERROR(getId(j, "index", where, b.index));
  } else if (storage == fusec::artifact_format::kStorageWeight || storage == fusec::artifact_format::kStorageArena) {
    b.storage = storage == fusec::artifact_format::kStorageWeight ? Storage::kWeight : Storage::kArena;
    FUSERT_RETURN_IF_ERROR(getNonNegative(j, "offset", where, b.offset));
  } else if (storage == fusec::artifact_format::kStorageAlias) {
    b.storage = Storage::kAlias;
    FUSERT_RETURN_IF_ERROR(getId(j, "of", where, b.of));
    FUSERT_RETURN_IF_ERROR(getNonNegative(j, "offset", where, b.offset));
  } else {
    return invalidArgument(where, ": unknown storage '", storage,
                           "' (expected input, output, weight, arena, alias)");
  }
  return Status();
}

Status parseTensor(const Json &j, const char *list, size_t i, const std::vector<SymbolDesc> &syms,
                   TensorDesc &t) {
  std::string where = entry(list, i, "");
  if (!j.is_object())
    return invalidArgument(where, ": must be an object");
  FUSERT_RETURN_IF_ERROR(getString(j, "name", where, t.name));
  where = entry(list, i, t.name);
  FUSERT_RETURN_IF_ERROR(getDType(j, "dtype", where, t.dtype));
  if (syms.empty())
    FUSERT_RETURN_IF_ERROR(getShape(j, where, t.shape));
  else
    FUSERT_RETURN_IF_ERROR(getDims(j, syms, where, t.dims));
  return getId(j, "buffer", where, t.buffer);
}

Status parseEpilogue(const std::string &name, Epilogue &out) {
  static const std::pair<const char *, Epilogue> kNames[] = {
      {"none", Epilogue::kNone},       {"bias", Epilogue::kBias},
      {"relu", Epilogue::kRelu},       {"relu_bias", Epilogue::kReluBias},
      {"gelu", Epilogue::kGelu},       {"gelu_bias", Epilogue::kGeluBias}};
  for (const auto &[n, e] : kNames)
    if (name == n) {
      out = e;
      return Status();
    }
  return invalidArgument("unknown epilogue '", name, "'");
}

/// An integer field of a gemm step: in a dynamic manifest (\p syms not
/// empty) it may also be a product of symbols, kept in \p ext (an absent
/// optional field is \p out's default there too); applyBinding sets \p out.
Status getGemmExtent(const Json &obj, const char *key, const std::string &where,
                     const std::vector<SymbolDesc> &syms, int64_t &out, Extent &ext,
                     bool required = true) {
  if (syms.empty())
    return getInt(obj, key, where, out, required);
  const Json *v = lookup(obj, key);
  if (!v) {
    if (required)
      return missing(where, key);
    ext = Extent();
    ext.coeff = out;
    return Status();
  }
  FUSERT_RETURN_IF_ERROR(parseExtent(*v, syms, where, key, ext));
  out = ext.isStatic() ? ext.coeff : 0;
  return Status();
}

Status parseGemm(const Json &j, const std::string &where, const std::vector<SymbolDesc> &syms,
                 GemmDesc &g) {
  FUSERT_RETURN_IF_ERROR(getId(j, "a", where, g.a));
  FUSERT_RETURN_IF_ERROR(getId(j, "b", where, g.b));
  FUSERT_RETURN_IF_ERROR(getId(j, "d", where, g.d));
  FUSERT_RETURN_IF_ERROR(getId(j, "c", where, g.c, /*required=*/false));
  FUSERT_RETURN_IF_ERROR(getId(j, "bias", where, g.bias, false));
  GemmDesc::Extents &e = g.extents;
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "m", where, syms, g.m, e.m));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "n", where, syms, g.n, e.n));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "k", where, syms, g.k, e.k));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "batch", where, syms, g.batch, e.batch, false));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "stride_a", where, syms, g.strideA, e.strideA, false));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "stride_b", where, syms, g.strideB, e.strideB, false));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "stride_c", where, syms, g.strideC, e.strideC, false));
  FUSERT_RETURN_IF_ERROR(getGemmExtent(j, "stride_d", where, syms, g.strideD, e.strideD, false));
  FUSERT_RETURN_IF_ERROR(getBool(j, "trans_a", where, g.transA));
  FUSERT_RETURN_IF_ERROR(getBool(j, "trans_b", where, g.transB));
  FUSERT_RETURN_IF_ERROR(getDouble(j, "alpha", where, g.alpha));
  FUSERT_RETURN_IF_ERROR(getDouble(j, "beta", where, g.beta));
  std::string epilogue = "none", compute = "f32";
  FUSERT_RETURN_IF_ERROR(getString(j, "epilogue", where, epilogue, false));
  FUSERT_RETURN_IF_ERROR(parseEpilogue(epilogue, g.epilogue).withContext(where));
  FUSERT_RETURN_IF_ERROR(getDType(j, "dtype", where, g.dtype));
  g.dDtype = g.dtype;
  if (lookup(j, "d_dtype"))
    FUSERT_RETURN_IF_ERROR(getDType(j, "d_dtype", where, g.dDtype));
  FUSERT_RETURN_IF_ERROR(getString(j, "compute", where, compute, false));
  if (compute != "f32" && compute != "tf32")
    return invalidArgument(where, ": unknown compute '", compute,
                           "' (expected f32 or tf32)");
  g.tf32 = compute == "tf32";
  return Status();
}

/// A conv's "x_shape" or "y_shape" in a dynamic manifest: integers or
/// products of symbols (applyBinding evaluates them).
Status getConvDims(const Json &j, const char *key, const std::string &where,
                   const std::vector<SymbolDesc> &syms, std::vector<Extent> &dims) {
  const Json *v = lookup(j, key);
  if (!v)
    return missing(where, key);
  if (!v->is_array())
    return mistyped(where, key, "an array", *v);
  dims.assign(v->size(), Extent());
  for (size_t k = 0; k < v->size(); ++k)
    FUSERT_RETURN_IF_ERROR(parseExtent((*v)[k], syms, where, key, dims[k]));
  return Status();
}

Status parseConv(const Json &j, const std::string &where, const std::vector<SymbolDesc> &syms,
                 ConvDesc &c) {
  FUSERT_RETURN_IF_ERROR(getId(j, "x", where, c.x));
  FUSERT_RETURN_IF_ERROR(getId(j, "w", where, c.w));
  FUSERT_RETURN_IF_ERROR(getId(j, "y", where, c.y));
  FUSERT_RETURN_IF_ERROR(getId(j, "bias", where, c.bias, /*required=*/false));
  if (syms.empty()) {
    FUSERT_RETURN_IF_ERROR(getIntArray(j, "x_shape", where, c.xShape));
    FUSERT_RETURN_IF_ERROR(getIntArray(j, "y_shape", where, c.yShape));
  } else {
    FUSERT_RETURN_IF_ERROR(getConvDims(j, "x_shape", where, syms, c.xDims));
    FUSERT_RETURN_IF_ERROR(getConvDims(j, "y_shape", where, syms, c.yDims));
    // The filter and the window are static; only the activations' dims
    // follow the binding.
    for (const char *key : {"w_shape", "pads", "strides", "dilations", "group"}) {
      const Json *v = lookup(j, key);
      bool symbolic = v && v->is_string();
      if (v && v->is_array())
        for (const Json &e : *v)
          symbolic = symbolic || e.is_string();
      if (symbolic)
        return invalidArgument(where, ": '", key,
                               "' names symbols; only a conv's x_shape and y_shape may");
    }
  }
  FUSERT_RETURN_IF_ERROR(getIntArray(j, "w_shape", where, c.wShape));
  FUSERT_RETURN_IF_ERROR(getIntArray(j, "pads", where, c.pads));
  FUSERT_RETURN_IF_ERROR(getIntArray(j, "strides", where, c.strides));
  FUSERT_RETURN_IF_ERROR(getIntArray(j, "dilations", where, c.dilations));
  FUSERT_RETURN_IF_ERROR(getInt(j, "group", where, c.group, false));
  return getDType(j, "dtype", where, c.dtype);
}

Status parseGuard(const Json &j, const std::string &where, StepDesc &s) {
  const Json *g = lookup(j, fusec::artifact_format::kStepGuard);
  if (!g)
    return Status();
  if (!g->is_array())
    return mistyped(where, fusec::artifact_format::kStepGuard,
                    "an array of {\"buffer\", \"when\"} objects", *g);
  for (size_t t = 0; t < g->size(); ++t) {
    const Json &term = (*g)[t];
    std::string at = where + ": guard[" + std::to_string(t) + "]";
    if (!term.is_object())
      return invalidArgument(at, " must be an object {\"buffer\", \"when\"}");
    GuardDesc d;
    FUSERT_RETURN_IF_ERROR(
        getId(term, fusec::artifact_format::kGuardBuffer, at, d.buffer));
    const Json *w = lookup(term, fusec::artifact_format::kGuardWhen);
    if (!w)
      return missing(at, fusec::artifact_format::kGuardWhen);
    FUSERT_RETURN_IF_ERROR(
        getBool(term, fusec::artifact_format::kGuardWhen, at, d.when));
    s.guard.push_back(d);
  }
  return Status();
}

Status parseStepBody(const Json &j, const std::string &where, const std::vector<SymbolDesc> &syms,
                     StepDesc &s);

Status parseStep(const Json &j, size_t i, const std::vector<SymbolDesc> &syms, StepDesc &s) {
  std::string where = entry("steps", i, "");
  if (!j.is_object())
    return invalidArgument(where, ": must be an object");
  getString(j, "name", where, s.name, /*required=*/false);
  where = entry("steps", i, s.name);
  FUSERT_RETURN_IF_ERROR(parseGuard(j, where, s));
  return parseStepBody(j, where, syms, s);
}

Status parseStepBody(const Json &j, const std::string &where, const std::vector<SymbolDesc> &syms,
                     StepDesc &s) {
  std::string kind;
  FUSERT_RETURN_IF_ERROR(getString(j, "kind", where, kind));
  if (kind == fusec::artifact_format::kStepKernel) {
    s.kind = StepKind::kKernel;
    FUSERT_RETURN_IF_ERROR(getString(j, "symbol", where, s.symbol));
    if (s.symbol.empty())
      return invalidArgument(where, ": empty 'symbol'");
    std::vector<int64_t> ids;
    FUSERT_RETURN_IF_ERROR(getIntArray(j, "buffers", where, ids));
    for (int64_t id : ids)
      s.buffers.push_back(static_cast<int>(
          id < INT32_MIN || id > INT32_MAX ? INT32_MIN : id));
    return Status();
  }
  if (kind == fusec::artifact_format::kStepGemm) {
    s.kind = StepKind::kGemm;
    return parseGemm(j, where, syms, s.gemm);
  }
  if (kind == fusec::artifact_format::kStepConv) {
    s.kind = StepKind::kConv;
    return parseConv(j, where, syms, s.conv);
  }
  if (kind == fusec::artifact_format::kStepCopy) {
    s.kind = StepKind::kCopy;
    FUSERT_RETURN_IF_ERROR(getId(j, "src", where, s.src));
    FUSERT_RETURN_IF_ERROR(getId(j, "dst", where, s.dst));
    if (!syms.empty()) {
      const Json *bytes = lookup(j, "bytes");
      if (!bytes)
        return missing(where, "bytes");
      return parseExtent(*bytes, syms, where, "bytes", s.copySize);
    }
    return getNonNegative(j, "bytes", where, s.bytes);
  }
  return invalidArgument(where, ": unknown step kind '", kind,
                         "' (expected kernel, gemm, conv, copy)");
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

std::string shapeStr(int rank, const int64_t *shape) {
  if (!shape)
    return "[]";
  return shapeStr(std::vector<int64_t>(shape, shape + rank));
}

/// Checks that buffer \p id exists, has dtype \p dtype and holds at least
/// \p elements elements.
Status checkOperand(const Manifest &m, const std::string &where,
                    const char *field, int id, fusert_dtype dtype,
                    int64_t elements) {
  if (m.bufferIndex(id) < 0)
    return invalidArgument(where, ": '", field, "' names unknown buffer ", id);
  const BufferDesc &b = m.buffer(id);
  if (b.dtype != dtype)
    return invalidArgument(where, ": '", field, "' buffer ", id, " has dtype ",
                           fusert_dtype_name(b.dtype), ", expected ",
                           fusert_dtype_name(dtype));
  int64_t have = numElements(b.shape);
  if (elements > have)
    return invalidArgument(where, ": '", field, "' needs ", elements,
                           " elements but buffer ", id, " has ", have);
  return Status();
}

/// \p a * \p b for a, b >= 0, saturating at INT64_MAX (which no buffer
/// holds, so an overflowing extent fails the operand checks).
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/// Elements spanned by \p batch row-major [rows, cols] matrices \p stride
/// apart (saturating).
int64_t span(int64_t rows, int64_t cols, int64_t batch, int64_t stride) {
  int64_t r;
  return __builtin_add_overflow(satMul(batch - 1, stride), satMul(rows, cols), &r) ? INT64_MAX : r;
}

Status checkGemm(const Manifest &m, const std::string &where,
                 const GemmDesc &g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    return invalidArgument(where, ": m, n, k and batch must be > 0, got m=",
                           g.m, " n=", g.n, " k=", g.k, " batch=", g.batch);
  if (g.strideA < 0 || g.strideB < 0 || g.strideC < 0 || g.strideD < 0)
    return invalidArgument(where, ": strides must be >= 0");
  if (g.dtype != FUSERT_F32 && g.dtype != FUSERT_F16 &&
      g.dtype != FUSERT_BF16 && g.dtype != FUSERT_F64)
    return invalidArgument(where, ": gemm dtype ", fusert_dtype_name(g.dtype),
                           " unsupported (f32, f16, bf16, f64)");
  if (g.dDtype != g.dtype &&
      !(g.dDtype == FUSERT_F32 && (g.dtype == FUSERT_F16 || g.dtype == FUSERT_BF16)))
    return invalidArgument(where, ": d_dtype ", fusert_dtype_name(g.dDtype),
                           " with dtype ", fusert_dtype_name(g.dtype),
                           " unsupported (d_dtype is the dtype, or f32 for an "
                           "f16 or bf16 gemm)");
  if (g.batch > 1 && g.strideD < satMul(g.m, g.n))
    return invalidArgument(where, ": stride_d ", g.strideD,
                           " makes output matrices overlap (m*n = ",
                           satMul(g.m, g.n), ")");
  FUSERT_RETURN_IF_ERROR(checkOperand(
      m, where, "a", g.a, g.dtype, span(g.m, g.k, g.batch, g.strideA)));
  FUSERT_RETURN_IF_ERROR(checkOperand(
      m, where, "b", g.b, g.dtype, span(g.k, g.n, g.batch, g.strideB)));
  FUSERT_RETURN_IF_ERROR(checkOperand(
      m, where, "d", g.d, g.dDtype, span(g.m, g.n, g.batch, g.strideD)));
  if (g.c >= 0)
    FUSERT_RETURN_IF_ERROR(checkOperand(
        m, where, "c", g.c, g.dDtype, span(g.m, g.n, g.batch, g.strideC)));
  bool wantsBias = g.epilogue == Epilogue::kBias ||
                   g.epilogue == Epilogue::kReluBias ||
                   g.epilogue == Epilogue::kGeluBias;
  if (wantsBias && g.bias < 0)
    return invalidArgument(where, ": epilogue with bias but no 'bias' buffer");
  if (!wantsBias && g.bias >= 0)
    return invalidArgument(where,
                           ": 'bias' given but the epilogue adds no bias");
  if (g.bias >= 0 && g.dDtype != g.dtype)
    return invalidArgument(where, ": a bias epilogue with d_dtype ",
                           fusert_dtype_name(g.dDtype), " (cuBLASLt would read the ",
                           fusert_dtype_name(g.dtype), " bias as d_dtype)");
  if (g.bias >= 0)
    FUSERT_RETURN_IF_ERROR(
        checkOperand(m, where, "bias", g.bias, g.dtype, g.n));
  return Status();
}

Status checkConv(const Manifest &m, const std::string &where,
                 const ConvDesc &c) {
  size_t rank = c.xShape.size();
  if (rank < 3 || c.wShape.size() != rank || c.yShape.size() != rank)
    return invalidArgument(where, ": x_shape, w_shape, y_shape must have the "
                                  "same rank >= 3, got ",
                           shapeStr(c.xShape), ", ", shapeStr(c.wShape), ", ",
                           shapeStr(c.yShape));
  size_t spatial = rank - 2;
  if (c.pads.size() != 2 * spatial || c.strides.size() != spatial ||
      c.dilations.size() != spatial)
    return invalidArgument(where, ": need ", 2 * spatial, " pads, ", spatial,
                           " strides and ", spatial, " dilations");
  if (c.group < 1 || c.wShape[0] % c.group != 0 ||
      c.xShape[1] != c.wShape[1] * c.group || c.yShape[1] != c.wShape[0] ||
      c.yShape[0] != c.xShape[0])
    return invalidArgument(where, ": inconsistent channels/group: x ",
                           shapeStr(c.xShape), ", w ", shapeStr(c.wShape),
                           ", y ", shapeStr(c.yShape), ", group ", c.group);
  for (size_t i = 0; i < spatial; ++i) {
    if (c.strides[i] < 1 || c.dilations[i] < 1 || c.pads[i] < 0 ||
        c.pads[i + spatial] < 0)
      return invalidArgument(where, ": strides/dilations must be >= 1 and "
                                    "pads >= 0");
    int64_t extent = c.xShape[i + 2] + c.pads[i] + c.pads[i + spatial] -
                     c.dilations[i] * (c.wShape[i + 2] - 1) - 1;
    int64_t want = extent < 0 ? -1 : extent / c.strides[i] + 1;
    if (c.yShape[i + 2] != want)
      return invalidArgument(where, ": y_shape ", shapeStr(c.yShape),
                             " does not match x, w, pads, strides and "
                             "dilations (spatial dim ",
                             i, " should be ", want, ")");
  }
  FUSERT_RETURN_IF_ERROR(
      checkOperand(m, where, "x", c.x, c.dtype, numElements(c.xShape)));
  FUSERT_RETURN_IF_ERROR(
      checkOperand(m, where, "w", c.w, c.dtype, numElements(c.wShape)));
  FUSERT_RETURN_IF_ERROR(
      checkOperand(m, where, "y", c.y, c.dtype, numElements(c.yShape)));
  if (c.bias >= 0)
    FUSERT_RETURN_IF_ERROR(
        checkOperand(m, where, "bias", c.bias, c.dtype, c.wShape[0]));
  return Status();
}

Status checkTensors(const Manifest &m, const std::vector<TensorDesc> &list,
                    const char *listName, Storage storage) {
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const TensorDesc &t = list[i];
    std::string where = entry(listName, i, t.name);
    if (!names.insert(t.name).second)
      return invalidArgument(where, ": duplicate name");
    if (m.bufferIndex(t.buffer) < 0)
      return invalidArgument(where, ": unknown buffer ", t.buffer);
    const BufferDesc &b = m.buffer(t.buffer);
    if (b.storage != storage || b.index != static_cast<int>(i))
      return invalidArgument(where, ": buffer ", t.buffer, " is not ",
                             listName, " buffer with index ", i);
    if (b.dtype != t.dtype || b.shape != t.shape)
      return invalidArgument(where, ": dtype/shape ",
                             fusert_dtype_name(t.dtype), shapeStr(t.shape),
                             " differ from buffer ", t.buffer, "'s ",
                             fusert_dtype_name(b.dtype), shapeStr(b.shape));
  }
  return Status();
}

/// The artifact's own files (library, weights) are plain names in its
/// folder: no path separator, not "." or "..", no control characters; a
/// manifest cannot make the loader open or dlopen a file elsewhere.
Status checkPlainFileName(const char *field, const std::string &name) {
  if (name.empty())
    return Status();
  bool plain = name != "." && name != ".." && name.find('/') == std::string::npos &&
               name.find('\\') == std::string::npos;
  for (unsigned char c : name)
    plain = plain && c >= 0x20 && c != 0x7f;
  if (!plain)
    return invalidArgument("manifest: ", field,
                           " must be a file name inside the artifact folder (no '/', not '.' or "
                           "'..', no control characters)");
  return Status();
}

Status checkBuffers(const Manifest &m) {
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const BufferDesc &b = m.buffers[i];
    std::string where = entry("buffers", i, b.name);
    if (m.bufferIndex(b.id) != static_cast<int>(i))
      return invalidArgument(where, ": duplicate buffer id ", b.id);
    // The element count and the byte size are checked for overflow: a
    // shape whose product wraps could otherwise match a small `bytes`.
    const int64_t elements = numElements(b.shape);
    const uint64_t elemBytes = fusert_dtype_size(b.dtype);
    if (elements == INT64_MAX || elemBytes == 0 ||
        static_cast<uint64_t>(elements) > (uint64_t{1} << 62) / elemBytes)
      return invalidArgument(where, ": shape ", shapeStr(b.shape),
                             " has too many elements (more than 2^62 bytes)");
    uint64_t want = static_cast<uint64_t>(elements) * elemBytes;
    if (b.bytes != want)
      return invalidArgument(where, ": bytes ", b.bytes, " != ", want,
                             " for ", fusert_dtype_name(b.dtype),
                             shapeStr(b.shape));
    switch (b.storage) {
    case Storage::kInput:
    case Storage::kOutput: {
      size_t n = b.storage == Storage::kInput ? m.inputs.size()
                                              : m.outputs.size();
      const char *list = b.storage == Storage::kInput ? "inputs" : "outputs";
      if (b.index < 0 || static_cast<size_t>(b.index) >= n ||
          (b.storage == Storage::kInput ? m.inputs : m.outputs)[b.index]
                  .buffer != b.id)
        return invalidArgument(where, ": index ", b.index, " does not name a ",
                               list, " entry for this buffer");
      break;
    }
    case Storage::kWeight:
      if (b.offset > m.weightsBytes || b.bytes > m.weightsBytes - b.offset)
        return invalidArgument(where, ": weight range [", b.offset, ", ",
                               b.offset + b.bytes, ") out of range of ",
                               m.weightsBytes, " weight bytes");
      break;
    case Storage::kArena:
      if (b.offset > m.arenaBytes || b.bytes > m.arenaBytes - b.offset)
        return invalidArgument(where, ": arena range [", b.offset, ", ",
                               b.offset + b.bytes, ") out of range of ",
                               m.arenaBytes, " arena bytes");
      break;
    case Storage::kAlias: {
      if (m.bufferIndex(b.of) < 0)
        return invalidArgument(where, ": alias of unknown buffer ", b.of);
      const BufferDesc &target = m.buffer(b.of);
      if (b.offset > target.bytes || b.bytes > target.bytes - b.offset)
        return invalidArgument(where, ": alias range [", b.offset, ", ",
                               b.offset + b.bytes, ") out of range of buffer ",
                               b.of, " (", target.bytes, " bytes)");
      // Follow the chain: it must end at a non-alias buffer.
      int cur = b.of;
      for (size_t hops = 0; m.buffer(cur).storage == Storage::kAlias; ++hops) {
        if (hops > m.buffers.size())
          return invalidArgument(where, ": cycle of aliases");
        cur = m.buffer(cur).of;
        if (m.bufferIndex(cur) < 0)
          return invalidArgument(where, ": alias chain reaches unknown "
                                        "buffer ",
                                 cur);
      }
      break;
    }
    }
  }
  return Status();
}

/// The fields only a cpu artifact has (docs/ARTIFACT.md, "cpu artifacts").
Status checkCpuFields(const Manifest &m) {
  if (m.cpuAbi < 0)
    return invalidArgument("manifest: missing field 'cpu_abi' (a cpu artifact "
                           "records the ABI version of its library)");
  if (m.cpuAbi != FUSERT_CPU_ABI_VERSION)
    return invalidArgument("manifest: cpu_abi ", m.cpuAbi,
                           " unsupported (this runtime implements cpu ABI ",
                           FUSERT_CPU_ABI_VERSION,
                           "); recompile the artifact with a matching fusec");
  for (const std::string &f : m.cpuFeatures)
    if (!isKnownCpuFeature(f))
      return invalidArgument("manifest: cpu_features: unknown feature '", f,
                             "' (known: ", knownCpuFeatures(), ")");
  if (m.workspaceBytesPerThread > kMaxWorkspaceBytesPerThread)
    return invalidArgument("manifest: workspace_bytes_per_thread ",
                           m.workspaceBytesPerThread, " exceeds the limit of ",
                           kMaxWorkspaceBytesPerThread);
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepDesc &s = m.steps[i];
    if (s.kind != StepKind::kKernel && s.kind != StepKind::kCopy)
      return invalidArgument(entry("steps", i, s.name), ": a cpu artifact has "
                             "only kernel and copy steps, got ",
                             s.kind == StepKind::kGemm ? "gemm" : "conv");
  }
  return Status();
}

} // namespace

int Manifest::bufferIndex(int id) const {
  // Ids are usually positions; fall back to a scan otherwise.
  if (id >= 0 && static_cast<size_t>(id) < buffers.size() &&
      buffers[id].id == id)
    return id;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].id == id)
      return static_cast<int>(i);
  return -1;
}

bool parseDType(const std::string &name, fusert_dtype &out) {
  for (int d = FUSERT_F32; d <= FUSERT_F8E5M2FNUZ; ++d)
    if (name == fusert_dtype_name(static_cast<fusert_dtype>(d))) {
      out = static_cast<fusert_dtype>(d);
      return true;
    }
  return false;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return INT64_MAX;
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;  // saturates: no such buffer fits any check below
  }
  return n;
}

Status checkManifest(const Manifest &m) {
  FUSERT_RETURN_IF_ERROR(checkBuffers(m));
  FUSERT_RETURN_IF_ERROR(checkTensors(m, m.inputs, "inputs", Storage::kInput));
  FUSERT_RETURN_IF_ERROR(
      checkTensors(m, m.outputs, "outputs", Storage::kOutput));
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepDesc &s = m.steps[i];
    std::string where = entry("steps", i, s.name);
    for (size_t t = 0; t < s.guard.size(); ++t) {
      const int id = s.guard[t].buffer;
      std::string at = where + ": guard[" + std::to_string(t) + "]";
      if (m.bufferIndex(id) < 0)
        return invalidArgument(at, " names unknown buffer ", id);
      const BufferDesc &b = m.buffer(id);
      if (b.dtype != FUSERT_BOOL || numElements(b.shape) != 1)
        return invalidArgument(at, " names buffer ", id, " '", b.name, "' of ",
                               fusert_dtype_name(b.dtype), " ",
                               shapeStr(b.shape),
                               "; a guard is a bool of one element");
    }
    switch (s.kind) {
    case StepKind::kKernel:
      if (m.library.empty())
        return invalidArgument(where, ": kernel step but no 'library'");
      for (int id : s.buffers)
        if (m.bufferIndex(id) < 0)
          return invalidArgument(where, ": unknown buffer ", id);
      break;
    case StepKind::kGemm:
      FUSERT_RETURN_IF_ERROR(checkGemm(m, where, s.gemm));
      break;
    case StepKind::kConv:
      FUSERT_RETURN_IF_ERROR(checkConv(m, where, s.conv));
      break;
    case StepKind::kCopy:
      if (m.bufferIndex(s.src) < 0 || m.bufferIndex(s.dst) < 0)
        return invalidArgument(where, ": unknown buffer (src ", s.src,
                               ", dst ", s.dst, ")");
      if (s.bytes > m.buffer(s.src).bytes || s.bytes > m.buffer(s.dst).bytes)
        return invalidArgument(where, ": copies ", s.bytes,
                               " bytes but src has ", m.buffer(s.src).bytes,
                               " and dst ", m.buffer(s.dst).bytes);
      break;
    }
  }
  if (m.target == "cpu")
    FUSERT_RETURN_IF_ERROR(checkCpuFields(m));
  return Status();
}

Status parseManifest(const std::string &text, Manifest &out) {
  out = Manifest();
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return invalidArgument("manifest.json is not valid JSON");
  if (!j.is_object())
    return invalidArgument("manifest.json must hold a JSON object");
  const std::string top = "manifest";
  out.digest = artifact_checksum::manifestDigest(j);
  std::string format;
  FUSERT_RETURN_IF_ERROR(getString(j, "format", top, format));
  static_assert(fusec::artifact_format::kVersion == FUSERT_ARTIFACT_VERSION, "artifact version");
  if (format != fusec::artifact_format::kFormat)
    return invalidArgument("manifest: format '", format,
                           "' is not 'fusec-artifact'");
  int64_t version = 0;
  FUSERT_RETURN_IF_ERROR(getInt(j, "version", top, version));
  if (version != FUSERT_ARTIFACT_VERSION)
    return invalidArgument("manifest: version ", version,
                           " unsupported (this runtime reads version ",
                           FUSERT_ARTIFACT_VERSION, ")");
  getString(j, "model", top, out.model, /*required=*/false);
  getString(j, "target", top, out.target, false);
  getString(j, "arch", top, out.arch, false);
  FUSERT_RETURN_IF_ERROR(getString(j, "library", top, out.library, false));
  FUSERT_RETURN_IF_ERROR(checkPlainFileName("library", out.library));
  {
    std::string build;
    FUSERT_RETURN_IF_ERROR(getString(j, "library_build", top, build, false));
    if (!build.empty() && build != "by hand")
      return invalidArgument("manifest: library_build '", build, "' (only \"by hand\" is defined)");
    out.libraryBuiltByHand = !build.empty();
  }
  if (const Json *w = lookup(j, "weights")) {
    if (!w->is_object())
      return mistyped(top, "weights", "an object", *w);
    FUSERT_RETURN_IF_ERROR(getString(*w, "file", "weights", out.weightsFile));
    FUSERT_RETURN_IF_ERROR(checkPlainFileName("weights.file", out.weightsFile));
    FUSERT_RETURN_IF_ERROR(
        getNonNegative(*w, "bytes", "weights", out.weightsBytes));
  }
  FUSERT_RETURN_IF_ERROR(getNonNegative(j, "arena_bytes", top, out.arenaBytes));
  if (const Json *c = lookup(j, "checksums")) {
    if (!c->is_object())
      return mistyped(top, "checksums", "an object", *c);
    for (const auto &[file, sum] : c->items()) {
      if (file != out.library && file != out.weightsFile)
        return invalidArgument("manifest: checksums: '", file,
                               "' is neither the library nor the weights file");
      if (!sum.is_string() ||
          !artifact_checksum::isChecksumText(sum.get<std::string>()))
        return invalidArgument("manifest: checksums: '", file,
                               "' must be \"fnv1a64:\" and 16 hex digits");
      out.checksums.emplace_back(file, sum.get<std::string>());
    }
  }

  if (out.target == "cpu") {
    FUSERT_RETURN_IF_ERROR(getInt(j, "cpu_abi", top, out.cpuAbi, /*required=*/false));
    if (const Json *f = lookup(j, "cpu_features")) {
      if (!f->is_array())
        return mistyped(top, "cpu_features", "an array of strings", *f);
      for (const Json &e : *f) {
        if (!e.is_string())
          return mistyped(top, "cpu_features", "an array of strings", e);
        out.cpuFeatures.push_back(e.get<std::string>());
      }
    }
    FUSERT_RETURN_IF_ERROR(getNonNegative(j, "workspace_bytes_per_thread", top,
                                          out.workspaceBytesPerThread, false));
  }

  auto array = [&](const char *key, const Json *&arr) -> Status {
    arr = lookup(j, key);
    if (!arr)
      return missing(top, key);
    if (!arr->is_array())
      return mistyped(top, key, "an array", *arr);
    return Status();
  };
  if (const Json *sy = lookup(j, "symbols")) {
    if (!sy->is_array() || sy->empty())
      return mistyped(top, "symbols", "a non-empty array", *sy);
    for (size_t i = 0; i < sy->size(); ++i) {
      const Json &e = (*sy)[i];
      const std::string where = entry("symbols", i, "");
      if (!e.is_object())
        return invalidArgument(where, ": must be an object");
      SymbolDesc d;
      FUSERT_RETURN_IF_ERROR(getString(e, "name", where, d.name));
      FUSERT_RETURN_IF_ERROR(getInt(e, "min", where, d.min));
      FUSERT_RETURN_IF_ERROR(getInt(e, "max", where, d.max));
      FUSERT_RETURN_IF_ERROR(getInt(e, "opt", where, d.opt, false));
      if (d.name.empty() || d.min < 1 || d.max < d.min)
        return invalidArgument(where, ": needs a name and 1 <= min <= max");
      for (const SymbolDesc &o : out.symbols)
        if (o.name == d.name)
          return invalidArgument(where, ": duplicate symbol '", d.name, "'");
      out.symbols.push_back(d);
    }
  }
  const Json *buffers, *inputs, *outputs, *steps;
  FUSERT_RETURN_IF_ERROR(array("buffers", buffers));
  FUSERT_RETURN_IF_ERROR(array("inputs", inputs));
  FUSERT_RETURN_IF_ERROR(array("outputs", outputs));
  FUSERT_RETURN_IF_ERROR(array("steps", steps));
  out.buffers.resize(buffers->size());
  for (size_t i = 0; i < buffers->size(); ++i)
    FUSERT_RETURN_IF_ERROR(parseBuffer((*buffers)[i], i, out.symbols, out.buffers[i]));
  out.inputs.resize(inputs->size());
  for (size_t i = 0; i < inputs->size(); ++i)
    FUSERT_RETURN_IF_ERROR(
        parseTensor((*inputs)[i], "inputs", i, out.symbols, out.inputs[i]));
  out.outputs.resize(outputs->size());
  for (size_t i = 0; i < outputs->size(); ++i)
    FUSERT_RETURN_IF_ERROR(
        parseTensor((*outputs)[i], "outputs", i, out.symbols, out.outputs[i]));
  out.steps.resize(steps->size());
  for (size_t i = 0; i < steps->size(); ++i)
    FUSERT_RETURN_IF_ERROR(parseStep((*steps)[i], i, out.symbols, out.steps[i]));
  if (out.dynamic()) {
    // Checked as bound to every symbol's minimum; each run binds again.
    if (out.target != "cpu" && out.target != "cuda" && !out.target.empty())
      return invalidArgument("manifest: 'symbols' (dynamic shapes) in a ", out.target,
                             " artifact; this runtime runs dynamic shapes on cpu and cuda artifacts only");
    std::vector<int64_t> mins;
    for (const SymbolDesc &d : out.symbols)
      mins.push_back(d.min);
    FUSERT_RETURN_IF_ERROR(applyBinding(out, mins));
  }
  return checkManifest(out);
}

int64_t Extent::eval(const std::vector<int64_t> &values) const {
  int64_t v = coeff;
  for (int s : symbols)
    if (s < 0 || static_cast<size_t>(s) >= values.size() || __builtin_mul_overflow(v, values[s], &v))
      return INT64_MAX;
  return v;
}

Status bindSymbols(const Manifest &m, const fusert_tensor *inputs, size_t numInputs,
                   std::vector<int64_t> &values) {
  values.assign(m.symbols.size(), -1);
  if (numInputs > 0 && !inputs)
    return invalidArgument("input array is NULL");
  std::vector<const fusert_tensor *> given(m.inputs.size(), nullptr);
  for (size_t i = 0; i < numInputs; ++i)
    for (size_t j = 0; j < m.inputs.size(); ++j)
      if (inputs[i].name && m.inputs[j].name == inputs[i].name)
        given[j] = &inputs[i];
  // Pass 1: dims that are one symbol bind it.
  for (size_t j = 0; j < m.inputs.size(); ++j) {
    const TensorDesc &d = m.inputs[j];
    const fusert_tensor *t = given[j];
    if (!t)
      return invalidArgument("input '", d.name, "' missing (it binds the shapes)");
    if (t->rank != static_cast<int>(d.dims.size()) || (t->rank > 0 && !t->shape))
      return invalidArgument("input '", d.name, "': rank ", t->rank, ", expected ", d.dims.size());
    for (int k = 0; k < t->rank; ++k) {
      const Extent &e = d.dims[k];
      if (e.symbols.size() != 1 || e.coeff != 1)
        continue;
      const SymbolDesc &sym = m.symbols[e.symbols[0]];
      const int64_t v = t->shape[k];
      int64_t &slot = values[e.symbols[0]];
      if (slot >= 0 && slot != v)
        return invalidArgument("input '", d.name, "' dim ", k, " is ", v, " but '", sym.name,
                               "' is already ", slot, " from another dim");
      if (v < sym.min || v > sym.max)
        return invalidArgument("input '", d.name, "' dim ", k, " ('", sym.name, "') is ", v,
                               ", outside the range ", sym.min, "..", sym.max,
                               " the artifact was compiled for");
      slot = v;
    }
  }
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s] < 0)
      return invalidArgument("no input dim binds symbol '", m.symbols[s].name,
                             "' on its own; the artifact cannot be run");
  // Pass 2: every dim equals its extent.
  for (size_t j = 0; j < m.inputs.size(); ++j)
    for (size_t k = 0; k < m.inputs[j].dims.size(); ++k) {
      const int64_t want = m.inputs[j].dims[k].eval(values);
      if (given[j]->shape[k] != want)
        return invalidArgument("input '", m.inputs[j].name, "' dim ", k, " is ", given[j]->shape[k],
                               ", expected ", want, " for this binding of the symbols");
    }
  return Status();
}

Status applyBinding(Manifest &m, const std::vector<int64_t> &values) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  auto evalDims = [&](const std::vector<Extent> &dims, std::vector<int64_t> &shape) {
    shape.resize(dims.size());
    for (size_t k = 0; k < dims.size(); ++k)
      shape[k] = dims[k].eval(values);
  };
  // Arena requests: (bytes, first, last, buffer position).
  struct Req {
    uint64_t bytes;
    int first, last;
    size_t pos;
  };
  std::vector<Req> reqs;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    BufferDesc &b = m.buffers[i];
    evalDims(b.dims, b.shape);
    const int64_t size = b.size.eval(values);
    if (size < 0 || static_cast<uint64_t>(size) > kLimit)
      return invalidArgument(entry("buffers", i, b.name), ": ", size, " bytes for this binding (more than 2^62)");
    b.bytes = static_cast<uint64_t>(size);
    if (b.storage == Storage::kArena) {
      if (b.liveFirst < 0)
        return invalidArgument(entry("buffers", i, b.name), ": an arena buffer of a dynamic artifact needs 'live'");
      reqs.push_back({b.bytes, b.liveFirst, b.liveLast, i});
    }
  }
  for (auto *list : {&m.inputs, &m.outputs})
    for (TensorDesc &t : *list) {
      evalDims(t.dims, t.shape);
      t.declared.resize(t.dims.size());
      for (size_t k = 0; k < t.dims.size(); ++k)
        t.declared[k] = t.dims[k].isStatic() ? t.dims[k].coeff : -1;
    }
  // Gemm and conv extents; each must stay below 2^62 so that the checks'
  // arithmetic below cannot overflow.
  for (size_t i = 0; i < m.steps.size(); ++i) {
    StepDesc &s = m.steps[i];
    auto eval = [&](const Extent &e, const char *field, int64_t &out) -> Status {
      out = e.eval(values);
      if (static_cast<uint64_t>(out) > kLimit)
        return invalidArgument(entry("steps", i, s.name), ": ", field, " is ", out,
                               " for this binding (more than 2^62)");
      return Status();
    };
    if (s.kind == StepKind::kCopy) {
      s.bytes = static_cast<uint64_t>(std::max<int64_t>(0, s.copySize.eval(values)));
    } else if (s.kind == StepKind::kGemm) {
      GemmDesc &g = s.gemm;
      const GemmDesc::Extents &e = g.extents;
      FUSERT_RETURN_IF_ERROR(eval(e.m, "m", g.m));
      FUSERT_RETURN_IF_ERROR(eval(e.n, "n", g.n));
      FUSERT_RETURN_IF_ERROR(eval(e.k, "k", g.k));
      FUSERT_RETURN_IF_ERROR(eval(e.batch, "batch", g.batch));
      FUSERT_RETURN_IF_ERROR(eval(e.strideA, "stride_a", g.strideA));
      FUSERT_RETURN_IF_ERROR(eval(e.strideB, "stride_b", g.strideB));
      FUSERT_RETURN_IF_ERROR(eval(e.strideC, "stride_c", g.strideC));
      FUSERT_RETURN_IF_ERROR(eval(e.strideD, "stride_d", g.strideD));
    } else if (s.kind == StepKind::kConv) {
      ConvDesc &c = s.conv;
      c.xShape.resize(c.xDims.size());
      c.yShape.resize(c.yDims.size());
      for (size_t k = 0; k < c.xDims.size(); ++k)
        FUSERT_RETURN_IF_ERROR(eval(c.xDims[k], "x_shape", c.xShape[k]));
      for (size_t k = 0; k < c.yDims.size(); ++k)
        FUSERT_RETURN_IF_ERROR(eval(c.yDims[k], "y_shape", c.yShape[k]));
    }
  }
  // Greedy by size, best fit among the placed buffers whose live ranges
  // overlap (program/MemoryPlan.h's planArena, the static plan's algorithm).
  constexpr uint64_t kAlignment = 256;
  auto alignUp = [](uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; };
  std::vector<size_t> order(reqs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (reqs[a].bytes != reqs[b].bytes)
      return reqs[a].bytes > reqs[b].bytes;
    return reqs[a].first < reqs[b].first;
  });
  std::vector<uint64_t> offset(reqs.size(), 0);
  std::vector<size_t> placed;
  uint64_t total = 0;
  for (size_t r : order) {
    std::vector<std::pair<uint64_t, uint64_t>> busy; // [start, end) of overlapping placed buffers
    for (size_t p : placed)
      if (reqs[p].first <= reqs[r].last && reqs[r].first <= reqs[p].last)
        busy.push_back({offset[p], offset[p] + alignUp(reqs[p].bytes)});
    std::sort(busy.begin(), busy.end());
    const uint64_t need = alignUp(reqs[r].bytes);
    uint64_t best = UINT64_MAX, bestGap = UINT64_MAX, cursor = 0;
    for (const auto &[start, end] : busy) {
      if (start >= cursor && start - cursor >= need && start - cursor < bestGap) {
        best = cursor;
        bestGap = start - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best == UINT64_MAX)
      best = cursor;
    offset[r] = best;
    placed.push_back(r);
    total = std::max(total, best + need);
    if (total > kLimit)
      return invalidArgument("the arena needs more than 2^62 bytes for this binding");
  }
  for (size_t r = 0; r < reqs.size(); ++r)
    m.buffers[reqs[r].pos].offset = offset[r];
  m.arenaBytes = total;
  // The library steps read and write as many elements as their extents say:
  // check them against their buffers for every binding, not only the one
  // parseManifest checked (the kernels' own bounds come from the same
  // symbols as their buffers' shapes).
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepDesc &s = m.steps[i];
    const std::string where = entry("steps", i, s.name);
    if (s.kind == StepKind::kGemm)
      FUSERT_RETURN_IF_ERROR(checkGemm(m, where, s.gemm));
    else if (s.kind == StepKind::kConv)
      FUSERT_RETURN_IF_ERROR(checkConv(m, where, s.conv));
  }
  return Status();
}

Status loadManifestFile(const std::string &path, Manifest &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound("cannot read ", path);
  std::ostringstream text;
  text << in.rdbuf();
  return parseManifest(text.str(), out).withContext(path);
}

Status bindTensors(const Manifest &m, const fusert_tensor *inputs,
                   size_t numInputs, const fusert_tensor *outputs,
                   size_t numOutputs, std::vector<void *> &inputPtrs,
                   std::vector<void *> &outputPtrs) {
  auto bind = [](const std::vector<TensorDesc> &want, const char *what,
                 const fusert_tensor *given, size_t n,
                 std::vector<void *> &ptrs) -> Status {
    if (n != want.size())
      return invalidArgument("expected ", want.size(), " ", what,
                             "s, got ", n);
    if (n > 0 && !given)
      return invalidArgument(what, " array is NULL");
    ptrs.assign(want.size(), nullptr);
    std::vector<bool> bound(want.size(), false);
    for (size_t i = 0; i < n; ++i) {
      const fusert_tensor &t = given[i];
      if (!t.name)
        return invalidArgument(what, " ", i, " has a NULL name");
      size_t j = 0;
      while (j < want.size() && want[j].name != t.name)
        ++j;
      if (j == want.size()) {
        std::string names;
        for (const TensorDesc &d : want)
          names += (names.empty() ? "'" : ", '") + d.name + "'";
        return invalidArgument("unknown ", what, " '", t.name, "' (the model's ",
                               what, "s are ", names, ")");
      }
      const TensorDesc &d = want[j];
      if (bound[j])
        return invalidArgument(what, " '", d.name, "' given twice");
      bound[j] = true;
      if (t.dtype != d.dtype)
        return invalidArgument(what, " '", d.name, "': dtype ",
                               fusert_dtype_name(t.dtype), ", expected ",
                               fusert_dtype_name(d.dtype));
      if (t.rank != static_cast<int>(d.shape.size()))
        return invalidArgument(what, " '", d.name, "': rank ", t.rank,
                               ", expected ", d.shape.size(), " (shape ",
                               shapeStr(d.shape), ")");
      if (t.rank > 0 && !t.shape)
        return invalidArgument(what, " '", d.name, "': NULL shape");
      for (int k = 0; k < t.rank; ++k)
        if (t.shape[k] != d.shape[k])
          return invalidArgument(what, " '", d.name, "': shape ",
                                 shapeStr(t.rank, t.shape), ", expected ",
                                 shapeStr(d.shape));
      if (!t.data)
        return invalidArgument(what, " '", d.name, "': NULL data pointer");
      ptrs[j] = t.data;
    }
    return Status();
  };
  FUSERT_RETURN_IF_ERROR(bind(m.inputs, "input", inputs, numInputs, inputPtrs));
  return bind(m.outputs, "output", outputs, numOutputs, outputPtrs);
}

} // namespace fusec::rt
