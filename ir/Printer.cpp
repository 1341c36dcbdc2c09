//===- Printer.cpp - Text form of the IR ----------------------------------===//
//
// Prints a Graph in the generic, table-free text form that ir/Parser.cpp
// reads back; the grammar and the lexical rules are documented at the top of
// Parser.cpp. Nothing here knows about individual ops: every node prints as
//   %r0, %r1 = "OpType"(%a, _, %b) {attr = ...} guard(%c, !%d) : type0, type1 loc("name")
// (guard: the node's ir::Guard, printed only when it has terms).
// Constants print first, in creation order, then the nodes in graph order.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/Escape.h"

namespace fusec::ir {

namespace {

bool isBareName(const std::string &s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return isBareName(s);
}

/// Length of the well-formed UTF-8 sequence at \p i of \p s whose code
/// point support/Escape.h treats as safe to print; 0 when the bytes there
/// are malformed or a control (C1, bidi, line / paragraph separator).
size_t safeUtf8Length(const std::string &s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  uint32_t cp = len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  const uint32_t minCp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < minCp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return escape_internal::isUnsafeCodePoint(cp) ? 0 : len;
}

/// A double-quoted string the parser reads back byte for byte: controls,
/// and the bytes of malformed UTF-8 and of bidi / C1 controls (U+202E,
/// U+2066, ...: Trojan Source), as \xHH, so that no raw one reaches the
/// terminal or a file.
std::string quoteString(const std::string &s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      const size_t len = safeUtf8Length(s, i);
      if (len == 0) {
        out += absl::StrFormat("\\x%02X", c);
      } else {
        out.append(s, i, len);
        i += len - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += absl::StrFormat("\\x%02X", c);
        else
          out += ch;
    }
  }
  out += "\"";
  return out;
}

/// Shortest %g text that reads back to the same value: \p isFloat selects
/// f32 (at most 9 digits) or f64 (at most 17 digits).
std::string formatFloat(double v, bool isF32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  int maxDigits = isF32 ? 9 : 17;
  for (int p = isF32 ? 6 : 15; p <= maxDigits; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*g", p, v);
    bool exact = isF32 ? std::strtof(buf, nullptr) == static_cast<float>(v)
                       : std::strtod(buf, nullptr) == v;
    if (exact) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string symbolText(const std::string &s) { return isIdentifier(s) ? s : quoteString(s); }

std::string typeText(const TensorType &t) {
  std::string out = dtypeName(t.dtype);
  if (!t.rankKnown) return out + "[*]";
  out += "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) out += ",";
    const Dim &d = t.shape[i];
    if (d.isStatic())
      out += absl::StrCat(d.value);
    else if (d.isSymbolic())
      out += symbolText(d.symbol);
    else
      out += "?";
  }
  return out + "]";
}

std::string elementText(const Tensor &t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF4E2M1:  // every narrow float value is an f32 value
      return formatFloat(static_cast<float>(t.getDouble(i)), true);
    case DType::kF64:
      return formatFloat(t.getDouble(i), false);
    case DType::kBool:
      return t.getInt(i) ? "true" : "false";
    case DType::kU64: {
      uint64_t u;
      std::memcpy(&u, t.data() + i * 8, 8);
      return absl::StrCat(u);
    }
    case DType::kString:
      return quoteString(t.strings()[i]);
    default:
      return absl::StrCat(t.getInt(i));
  }
}

std::string denseData(const Tensor &t) {
  std::string out = "[";
  int64_t n = t.dtype() == DType::kString ? static_cast<int64_t>(t.strings().size())
                                          : t.numElements();
  if (t.dtype() != DType::kString && t.byteSize() < n * dtypeSize(t.dtype()))
    n = t.byteSize() / std::max<int64_t>(1, dtypeSize(t.dtype()));  // malformed: print what is there
  for (int64_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    out += elementText(t, i);
  }
  return out + "]";
}

std::string attributeText(const Attribute &a) {
  switch (a.kind()) {
    case Attribute::Kind::kInt: return absl::StrCat(a.i());
    case Attribute::Kind::kFloat: return formatFloat(a.f(), true);
    case Attribute::Kind::kString: return quoteString(a.s());
    case Attribute::Kind::kTensor:
      return absl::StrCat("dense<", typeText(TensorType::fromShape(a.t().dtype(), a.t().shape())),
                          " ", denseData(a.t()), ">");
    case Attribute::Kind::kInts: {
      if (a.ints().empty()) return "ints[]";
      std::string out = "[";
      for (size_t i = 0; i < a.ints().size(); ++i)
        absl::StrAppend(&out, i ? ", " : "", a.ints()[i]);
      return out + "]";
    }
    case Attribute::Kind::kFloats: {
      if (a.floats().empty()) return "floats[]";
      std::string out = "[";
      for (size_t i = 0; i < a.floats().size(); ++i)
        absl::StrAppend(&out, i ? ", " : "", formatFloat(a.floats()[i], true));
      return out + "]";
    }
    case Attribute::Kind::kStrings: {
      if (a.strings().empty()) return "strings[]";
      std::string out = "[";
      for (size_t i = 0; i < a.strings().size(); ++i)
        absl::StrAppend(&out, i ? ", " : "", quoteString(a.strings()[i]));
      return out + "]";
    }
  }
  return "0";
}

/// Assigns every value a unique printable name: its own if non-empty and not
/// taken, otherwise a fresh "_N".
class Namer {
 public:
  std::string ref(const Value *v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string n = v->name();
    if (n.empty() || used_.contains(n)) {
      do {
        n = absl::StrCat("_", next_++);
      } while (used_.contains(n));
    }
    used_.insert(n);
    std::string text = "%" + (isBareName(n) ? n : quoteString(n));
    names_[v] = text;
    return text;
  }

 private:
  absl::flat_hash_map<const Value *, std::string> names_;
  absl::flat_hash_set<std::string> used_;
  int next_ = 0;
};

}  // namespace

std::string printGraph(const Graph &graph, const PrintOptions &options) {
  Namer namer;
  std::string out = "graph @";
  out += isBareName(graph.name()) ? graph.name() : quoteString(graph.name());
  out += "(";
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value *v = graph.inputs()[i];
    absl::StrAppend(&out, i ? ", " : "", namer.ref(v), ": ", typeText(v->type()));
  }
  out += ")";
  // Name the values in definition order before printing outputs, so that
  // generated names do not depend on the output list.
  std::vector<Value *> constants = graph.constants();
  std::vector<Node *> nodes = graph.nodes();
  for (const Value *v : constants) namer.ref(v);
  for (const Node *n : nodes)
    for (const Value *v : n->outputs()) namer.ref(v);
  std::string outputs;
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    absl::StrAppend(&outputs, i ? ", " : "", namer.ref(graph.outputs()[i]));
  absl::StrAppend(&out, " -> (", outputs, ")");
  if (graph.opset() != 0) absl::StrAppend(&out, " opset ", graph.opset());
  out += " {\n";

  for (const Value *v : constants) {
    const Tensor &t = *v->constant();
    absl::StrAppend(&out, "  ", namer.ref(v), " = constant ",
                    typeText(TensorType::fromShape(t.dtype(), t.shape())), " dense<");
    if (options.elideConstantsLargerThan >= 0 &&
        t.numElements() > options.elideConstantsLargerThan)
      out += "elided";
    else
      out += denseData(t);
    out += ">\n";
  }

  for (const Node *n : nodes) {
    out += "  ";
    for (int i = 0; i < n->numOutputs(); ++i)
      absl::StrAppend(&out, i ? ", " : "", namer.ref(n->output(i)));
    if (n->numOutputs() > 0) out += " = ";
    std::string op = n->domain().empty() ? n->opType() : n->domain() + "::" + n->opType();
    absl::StrAppend(&out, quoteString(op), "(");
    for (int i = 0; i < n->numInputs(); ++i) {
      const Value *v = n->inputs()[i];
      absl::StrAppend(&out, i ? ", " : "", v ? namer.ref(v) : "_");
    }
    out += ")";
    if (!n->attrs().empty()) {
      out += " {";
      bool first = true;
      for (const auto &[name, attr] : n->attrs()) {
        absl::StrAppend(&out, first ? "" : ", ", isIdentifier(name) ? name : quoteString(name),
                        " = ", attributeText(attr));
        first = false;
      }
      out += "}";
    }
    if (n->guarded()) {
      out += " guard(";
      for (size_t i = 0; i < n->guard().size(); ++i)
        absl::StrAppend(&out, i ? ", " : "", n->guard()[i].when ? "" : "!",
                        namer.ref(n->guard()[i].cond));
      out += ")";
    }
    if (n->numOutputs() > 0) {
      out += " : ";
      for (int i = 0; i < n->numOutputs(); ++i)
        absl::StrAppend(&out, i ? ", " : "", typeText(n->output(i)->type()));
    }
    if (options.printLocations && !n->name().empty())
      absl::StrAppend(&out, " loc(", quoteString(n->name()), ")");
    out += "\n";
  }
  absl::StrAppend(&out, "  return", outputs.empty() ? "" : " ", outputs, "\n}\n");
  return out;
}

}  // namespace fusec::ir
