//===- Parser.cpp - Reads the text form of the IR -------------------------===//
//
// Recursive-descent parser for the text IR printed by ir/Printer.cpp. It is
// generic and table-free: any op name parses (ops not in ir/Ops.def become
// unregistered nodes), so tests can use placeholder ops. It never aborts;
// every problem is an InvalidArgument "LINE:COL: expected ..." error.
//
// Grammar (whitespace and `// ...` line comments are ignored between tokens):
//
//   graph     ::= 'graph' '@' name '(' [arg (',' arg)*] ')'
//                 '->' '(' [value (',' value)*] ')' ['opset' int]
//                 '{' stmt* 'return' [value (',' value)*] '}'
//   arg       ::= value ':' type
//   stmt      ::= value '=' 'constant' type dense
//               | [value (',' value)* '='] op '(' [operand (',' operand)*] ')'
//                 [attrs] [guard] [':' type (',' type)*] [loc]
//   guard     ::= 'guard' '(' ['!'] value (',' ['!'] value)* ')'
//                                               (ir::Guard; '!' = when false)
//   operand   ::= value | '_'                    (`_` = omitted optional input)
//   value     ::= '%' name
//   name      ::= [A-Za-z0-9_.]+ | string        (quoted when not bare)
//   op        ::= string                         "OpType" or "domain::OpType"
//   type      ::= dtype '[' [dim (',' dim)*] ']' | dtype '[*]'
//   dtype     ::= f32 | f64 | f16 | bf16 | i8 ... u64 | bool | string | undef
//   dim       ::= int | identifier | string | '?'   (identifier/string = symbol)
//   attrs     ::= '{' [attr (',' attr)*] '}'
//   attr      ::= (identifier | string) '=' attrval
//   attrval   ::= int | float | string | '[' elems ']'
//               | 'ints' '[' ... ']' | 'floats' '[' ... ']' | 'strings' '[' ... ']'
//               | 'dense' '<' type data '>'
//   dense     ::= 'dense' '<' ('elided' | data) '>'
//   data      ::= '[' [elem (',' elem)*] ']'     (row-major, all elements)
//   loc       ::= 'loc' '(' string ')'
//
// Lexical rules:
//  - Value and graph names print bare when they match [A-Za-z0-9_.]+, else as
//    a quoted string: %"/h.0/attn/MatMul_output_0".
//  - Strings use C-like escapes: \" \\ \n \t and \xHH for any byte; the
//    printer writes \xHH for other control bytes and for the bytes of
//    malformed UTF-8 and of bidi / C1 controls (U+202E, U+2066, ...), all
//    other bytes (including UTF-8) literally.
//  - Integers have no '.', floats always have a '.' or an exponent, or are
//    spelled inf, -inf, nan. A list is `floats` if any element is a float.
//    Empty lists are typed: ints[], floats[], strings[] (an untyped [] is read
//    as ints[]).
//  - Floats print as the shortest %g text (6 to 9 significant digits for f32,
//    15 to 17 for f64) that reads back to the identical value, so round trips
//    are bit-exact. Float attributes are f32. Constant data: f32/f16/bf16
//    elements print as their float value, f64 as double; integers in full
//    (u64 unsigned); bools as true/false (0/1 also accepted); strings quoted.
//  - `dense<elided>` (printed for constants larger than the PrintOptions
//    limit) parses to a zero-filled tensor of the declared type: elided text
//    keeps structure and types, not weights.
//  - The header's output list and the `return` list must name the same values
//    (the header may reference values defined later; operands must be defined
//    before use). Locations (the ONNX node names) print only on request.
//  - Node domains other than "" print inside the op string as
//    "domain::OpType", e.g. "com.microsoft::FusedMatMul".
//
//===----------------------------------------------------------------------===//
#include "ir/Parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "support/Status.h"

namespace fusec::ir {

namespace {

/// Largest constant the parser will allocate, in elements and in bytes (so
/// that hostile text such as `f64[1000000000000] dense<elided>` is an error,
/// not an allocation failure).
constexpr int64_t kMaxParsedElements = int64_t{1} << 31;
constexpr int64_t kMaxParsedBytes = int64_t{1} << 31;

struct NumberToken {
  std::string text;
  bool isFloat = false;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  absl::StatusOr<std::unique_ptr<Graph>> parse();

 private:
  // --- lexing helpers --------------------------------------------------------
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (atEnd()) return;
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skipWs() {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (!atEnd() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }
  absl::Status error(const std::string &what) const {
    std::string found;
    if (atEnd()) {
      found = "end of input";
    } else {
      char c = peek();
      found = std::isprint(static_cast<unsigned char>(c)) ? absl::StrCat("'", std::string(1, c), "'")
                                                          : "a non-printable byte";
    }
    return absl::InvalidArgumentError(
        absl::StrCat(line_, ":", col_, ": expected ", what, ", found ", found));
  }
  absl::Status errorAt(int line, int col, const std::string &msg) const {
    return absl::InvalidArgumentError(absl::StrCat(line, ":", col, ": ", msg));
  }
  /// Skips whitespace; consumes \p c if next.
  bool consumeIf(char c) {
    skipWs();
    if (peek() != c || atEnd()) return false;
    advance();
    return true;
  }
  absl::Status expect(char c, const std::string &what = "") {
    if (consumeIf(c)) return absl::OkStatus();
    return error(what.empty() ? absl::StrCat("'", std::string(1, c), "'") : what);
  }
  static bool isBareChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  /// Reads [A-Za-z0-9_.]* at the cursor (no whitespace skipping).
  std::string bareWord() {
    std::string s;
    while (!atEnd() && isBareChar(peek())) {
      s += peek();
      advance();
    }
    return s;
  }
  /// True (and consumes) if the next token is the keyword \p kw.
  bool consumeKeyword(const char *kw) {
    skipWs();
    size_t n = std::char_traits<char>::length(kw);
    if (text_.substr(pos_, n) != kw) return false;
    if (pos_ + n < text_.size() && isBareChar(text_[pos_ + n])) return false;
    for (size_t i = 0; i < n; ++i) advance();
    return true;
  }
  absl::Status expectKeyword(const char *kw) {
    if (consumeKeyword(kw)) return absl::OkStatus();
    return error(absl::StrCat("'", kw, "'"));
  }
  absl::StatusOr<std::string> parseString();
  absl::StatusOr<NumberToken> parseNumber();
  absl::StatusOr<int64_t> parseInt();

  // --- grammar -------------------------------------------------------------
  absl::StatusOr<std::string> parseValueName();
  absl::StatusOr<TensorType> parseType();
  absl::StatusOr<Tensor> parseDenseData(const TensorType &type, bool allowElided);
  absl::StatusOr<Attribute> parseAttrValue();
  absl::Status parseStatement();
  absl::Status parseNode(std::vector<std::string> results, int line, int col);
  absl::StatusOr<Value *> lookup(const std::string &name, int line, int col);
  absl::Status checkNewName(const std::string &name, int line, int col);

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::unique_ptr<Graph> graph_;
  absl::flat_hash_map<std::string, Value *> values_;
};

absl::StatusOr<std::string> Parser::parseString() {
  skipWs();
  if (peek() != '"' || atEnd()) return error("a string");
  advance();
  std::string s;
  while (true) {
    if (atEnd()) return error("closing '\"'");
    char c = peek();
    if (c == '"') {
      advance();
      return s;
    }
    if (c == '\n') return error("closing '\"' before end of line");
    if (c != '\\') {
      s += c;
      advance();
      continue;
    }
    advance();
    char e = peek();
    if (atEnd()) return error("an escape sequence");
    switch (e) {
      case '"': s += '"'; advance(); break;
      case '\\': s += '\\'; advance(); break;
      case 'n': s += '\n'; advance(); break;
      case 't': s += '\t'; advance(); break;
      case 'x': {
        advance();
        int v = 0;
        for (int i = 0; i < 2; ++i) {
          char h = peek();
          if (atEnd() || !std::isxdigit(static_cast<unsigned char>(h)))
            return error("two hex digits after \\x");
          v = v * 16 + (std::isdigit(static_cast<unsigned char>(h))
                            ? h - '0'
                            : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          advance();
        }
        s += static_cast<char>(v);
        break;
      }
      default:
        return error("an escape sequence (\\\" \\\\ \\n \\t \\xHH)");
    }
  }
}

absl::StatusOr<NumberToken> Parser::parseNumber() {
  skipWs();
  NumberToken tok;
  if (peek() == '-' || peek() == '+') {
    tok.text += peek();
    advance();
  }
  if (consumeKeyword("inf") || consumeKeyword("nan")) {
    // consumeKeyword skipped whitespace; only accept it glued to the sign.
    tok.text += text_.substr(pos_ - 3, 3);
    tok.isFloat = true;
    return tok;
  }
  size_t start = tok.text.size();
  while (!atEnd()) {
    char c = peek();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      tok.text += c;
    } else if (c == '.') {
      tok.isFloat = true;
      tok.text += c;
    } else if ((c == 'e' || c == 'E') && tok.text.size() > start) {
      tok.isFloat = true;
      tok.text += c;
      advance();
      if (peek() == '+' || peek() == '-') {
        tok.text += peek();
        advance();
      }
      continue;
    } else {
      break;
    }
    advance();
  }
  if (tok.text.size() == start ||
      !std::isdigit(static_cast<unsigned char>(tok.text[start == 0 ? 0 : start])))
    return error("a number");
  return tok;
}

absl::StatusOr<int64_t> Parser::parseInt() {
  int line = line_, col = col_;
  skipWs();
  line = line_;
  col = col_;
  FUSEC_ASSIGN_OR_RETURN(NumberToken t, parseNumber());
  if (t.isFloat) return errorAt(line, col, "expected an integer, found " + t.text);
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(t.text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0')
    return errorAt(line, col, "integer out of range: " + t.text);
  return static_cast<int64_t>(v);
}

absl::StatusOr<std::string> Parser::parseValueName() {
  skipWs();
  if (peek() != '%') return error("a value name ('%name')");
  advance();
  if (peek() == '"') return parseString();
  std::string w = bareWord();
  if (w.empty()) return error("a value name after '%'");
  return w;
}

absl::StatusOr<TensorType> Parser::parseType() {
  skipWs();
  int line = line_, col = col_;
  std::string dt = bareWord();
  if (dt.empty()) return error("a type");
  DType dtype = DType::kUndefined;
  if (dt != "undef") {
    auto d = dtypeFromName(dt);
    if (!d) return errorAt(line, col, "expected a dtype, found '" + dt + "'");
    dtype = *d;
  }
  if (peek() != '[') return error("'[' after the dtype");
  advance();
  if (consumeIf('*')) {
    FUSEC_RETURN_IF_ERROR(expect(']'));
    return TensorType::unranked(dtype);
  }
  std::vector<Dim> dims;
  if (consumeIf(']')) return TensorType(dtype, dims);
  while (true) {
    skipWs();
    char c = peek();
    if (c == '?') {
      advance();
      dims.push_back(Dim::unknown());
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      FUSEC_ASSIGN_OR_RETURN(int64_t v, parseInt());
      dims.push_back(Dim(v));
    } else if (c == '"') {
      FUSEC_ASSIGN_OR_RETURN(std::string s, parseString());
      if (s.empty()) return error("a non-empty symbol");
      dims.push_back(Dim::symbolic(s));
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      dims.push_back(Dim::symbolic(bareWord()));
    } else {
      return error("a dimension (integer, symbol or '?')");
    }
    if (consumeIf(']')) break;
    FUSEC_RETURN_IF_ERROR(expect(',', "',' or ']' in the shape"));
  }
  return TensorType(dtype, dims);
}

absl::StatusOr<Tensor> Parser::parseDenseData(const TensorType &type, bool allowElided) {
  int line = line_, col = col_;
  if (!type.isStatic()) return errorAt(line, col, "expected a static type for dense data");
  int64_t count = 1;
  for (const Dim &d : type.shape) {
    if (d.value != 0 && count > kMaxParsedElements / d.value)
      return errorAt(line, col, "constant has too many elements");
    count *= d.value;
  }
  if (count > kMaxParsedElements || count * std::max<int64_t>(1, dtypeSize(type.dtype)) > kMaxParsedBytes)
    return errorAt(line, col, "constant has too many elements");
  if (type.dtype == DType::kUndefined) return errorAt(line, col, "constant needs a dtype");
  if (allowElided && consumeKeyword("elided")) return Tensor(type.dtype, type.staticShape());
  FUSEC_RETURN_IF_ERROR(expect('[', allowElided ? "'[' or 'elided'" : "'['"));
  Tensor t(type.dtype, type.staticShape());
  int64_t i = 0;
  if (!consumeIf(']')) {
    while (true) {
      skipWs();
      int eline = line_, ecol = col_;
      if (i >= count)
        return errorAt(eline, ecol, absl::StrCat("too many elements for ", type.dtype == DType::kUndefined ? "" : dtypeName(type.dtype), " constant of ", count, " elements"));
      DType dt = type.dtype;
      if (dt == DType::kString) {
        FUSEC_ASSIGN_OR_RETURN(t.strings()[i], parseString());
      } else if (dt == DType::kBool && (consumeKeyword("true") || consumeKeyword("false"))) {
        t.setInt(i, text_.substr(pos_ - 4, 4) == "true" ? 1 : 0);
      } else {
        FUSEC_ASSIGN_OR_RETURN(NumberToken tok, parseNumber());
        if (isFloat(dt) || isNarrowFloat(dt)) {
          double v = dt == DType::kF64 ? std::strtod(tok.text.c_str(), nullptr)
                                       : static_cast<double>(std::strtof(tok.text.c_str(), nullptr));
          if (isNarrowFloat(dt))  // printed values are exact: no saturation (f8e5m2's inf stays inf)
            t.data()[i] = encodeNarrowFloat(dt, v, /*saturate=*/false);
          else
            t.setDouble(i, v);
        } else {
          if (tok.isFloat)
            return errorAt(eline, ecol, "expected an integer element, found " + tok.text);
          errno = 0;
          char *end = nullptr;
          if (dt == DType::kU64 && tok.text[0] != '-') {
            unsigned long long u = std::strtoull(tok.text.c_str(), &end, 10);
            if (errno == ERANGE) return errorAt(eline, ecol, "integer out of range: " + tok.text);
            t.setInt(i, static_cast<int64_t>(u));
          } else {
            long long v = std::strtoll(tok.text.c_str(), &end, 10);
            if (errno == ERANGE) return errorAt(eline, ecol, "integer out of range: " + tok.text);
            int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
            switch (dt) {
              case DType::kI8: lo = -128; hi = 127; break;
              case DType::kI16: lo = -32768; hi = 32767; break;
              case DType::kI32: lo = std::numeric_limits<int32_t>::min(); hi = std::numeric_limits<int32_t>::max(); break;
              case DType::kU8: lo = 0; hi = 255; break;
              case DType::kU16: lo = 0; hi = 65535; break;
              case DType::kU32: lo = 0; hi = std::numeric_limits<uint32_t>::max(); break;
              case DType::kU64: lo = 0; break;
              case DType::kBool: lo = 0; hi = 1; break;
              default: break;
            }
            if (v < lo || v > hi)
              return errorAt(eline, ecol, absl::StrCat("value ", tok.text, " out of range for ", dtypeName(dt)));
            t.setInt(i, static_cast<int64_t>(v));
          }
        }
      }
      ++i;
      if (consumeIf(']')) break;
      FUSEC_RETURN_IF_ERROR(expect(',', "',' or ']' in the data"));
    }
  }
  if (i != count)
    return errorAt(line, col, absl::StrCat("expected ", count, " elements, found ", i));
  return t;
}

absl::StatusOr<Attribute> Parser::parseAttrValue() {
  skipWs();
  int line = line_, col = col_;
  char c = peek();
  if (c == '"') {
    FUSEC_ASSIGN_OR_RETURN(std::string s, parseString());
    return Attribute(std::move(s));
  }
  if (consumeKeyword("dense")) {
    FUSEC_RETURN_IF_ERROR(expect('<'));
    FUSEC_ASSIGN_OR_RETURN(TensorType type, parseType());
    FUSEC_ASSIGN_OR_RETURN(Tensor t, parseDenseData(type, /*allowElided=*/false));
    FUSEC_RETURN_IF_ERROR(expect('>'));
    return Attribute(std::move(t));
  }
  enum class ListKind { kAny, kInts, kFloats, kStrings } kind = ListKind::kAny;
  if (consumeKeyword("ints")) kind = ListKind::kInts;
  else if (consumeKeyword("floats")) kind = ListKind::kFloats;
  else if (consumeKeyword("strings")) kind = ListKind::kStrings;
  if (kind != ListKind::kAny || consumeIf('[')) {
    if (kind != ListKind::kAny) FUSEC_RETURN_IF_ERROR(expect('['));
    std::vector<NumberToken> nums;
    std::vector<std::string> strs;
    if (!consumeIf(']')) {
      while (true) {
        skipWs();
        if (peek() == '"') {
          if (!nums.empty() || kind == ListKind::kInts || kind == ListKind::kFloats)
            return error("a number");
          FUSEC_ASSIGN_OR_RETURN(std::string s, parseString());
          strs.push_back(std::move(s));
        } else {
          if (!strs.empty() || kind == ListKind::kStrings) return error("a string");
          FUSEC_ASSIGN_OR_RETURN(NumberToken t, parseNumber());
          nums.push_back(std::move(t));
        }
        if (consumeIf(']')) break;
        FUSEC_RETURN_IF_ERROR(expect(',', "',' or ']' in the list"));
      }
    }
    if (!strs.empty() || kind == ListKind::kStrings) return Attribute(std::move(strs));
    bool anyFloat = kind == ListKind::kFloats;
    for (const NumberToken &t : nums) anyFloat |= t.isFloat;
    if (kind == ListKind::kInts && anyFloat)
      return errorAt(line, col, "expected integers in ints[...]");
    if (anyFloat) {
      std::vector<float> fs;
      for (const NumberToken &t : nums) fs.push_back(std::strtof(t.text.c_str(), nullptr));
      return Attribute(std::move(fs));
    }
    std::vector<int64_t> is;
    for (const NumberToken &t : nums) {
      errno = 0;
      long long v = std::strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE) return errorAt(line, col, "integer out of range: " + t.text);
      is.push_back(v);
    }
    return Attribute(std::move(is));
  }
  if (consumeKeyword("true")) return Attribute(int64_t{1});
  if (consumeKeyword("false")) return Attribute(int64_t{0});
  if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c)) || c == 'i' ||
      c == 'n') {
    FUSEC_ASSIGN_OR_RETURN(NumberToken t, parseNumber());
    if (t.isFloat) return Attribute(std::strtof(t.text.c_str(), nullptr));
    errno = 0;
    long long v = std::strtoll(t.text.c_str(), nullptr, 10);
    if (errno == ERANGE) return errorAt(line, col, "integer out of range: " + t.text);
    return Attribute(static_cast<int64_t>(v));
  }
  return error("an attribute value");
}

absl::Status Parser::checkNewName(const std::string &name, int line, int col) {
  if (values_.contains(name))
    return errorAt(line, col, absl::StrCat("redefinition of value %", name));
  return absl::OkStatus();
}

absl::StatusOr<Value *> Parser::lookup(const std::string &name, int line, int col) {
  auto it = values_.find(name);
  if (it == values_.end()) return errorAt(line, col, absl::StrCat("use of undefined value %", name));
  return it->second;
}

absl::Status Parser::parseNode(std::vector<std::string> results, int line, int col) {
  FUSEC_ASSIGN_OR_RETURN(std::string op, parseString());
  std::string domain;
  size_t sep = op.rfind("::");
  if (sep != std::string::npos) {
    domain = op.substr(0, sep);
    op = op.substr(sep + 2);
  }
  if (op.empty()) return errorAt(line, col, "expected a non-empty op name");
  FUSEC_RETURN_IF_ERROR(expect('(', "'(' after the op name"));
  std::vector<Value *> inputs;
  if (!consumeIf(')')) {
    while (true) {
      skipWs();
      int vl = line_, vc = col_;
      if (peek() == '_' && !isBareChar(peek(1))) {
        advance();
        inputs.push_back(nullptr);
      } else {
        FUSEC_ASSIGN_OR_RETURN(std::string name, parseValueName());
        FUSEC_ASSIGN_OR_RETURN(Value * v, lookup(name, vl, vc));
        inputs.push_back(v);
      }
      if (consumeIf(')')) break;
      FUSEC_RETURN_IF_ERROR(expect(',', "',' or ')' in the operand list"));
    }
  }
  AttributeMap attrs;
  if (consumeIf('{')) {
    if (!consumeIf('}')) {
      while (true) {
        skipWs();
        int al = line_, ac = col_;
        std::string name;
        if (peek() == '"') {
          FUSEC_ASSIGN_OR_RETURN(name, parseString());
        } else {
          if (!(std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_'))
            return error("an attribute name");
          name = bareWord();
        }
        if (attrs.count(name)) return errorAt(al, ac, "duplicate attribute '" + name + "'");
        FUSEC_RETURN_IF_ERROR(expect('=', "'=' after the attribute name"));
        FUSEC_ASSIGN_OR_RETURN(Attribute a, parseAttrValue());
        attrs.emplace(std::move(name), std::move(a));
        if (consumeIf('}')) break;
        FUSEC_RETURN_IF_ERROR(expect(',', "',' or '}' in the attributes"));
      }
    }
  }
  Guard guard;
  if (consumeKeyword("guard")) {
    FUSEC_RETURN_IF_ERROR(expect('(', "'(' after guard"));
    do {
      skipWs();
      const bool when = !consumeIf('!');
      skipWs();
      int vl = line_, vc = col_;
      FUSEC_ASSIGN_OR_RETURN(std::string name, parseValueName());
      FUSEC_ASSIGN_OR_RETURN(Value * v, lookup(name, vl, vc));
      guard.push_back(GuardTerm{v, when});
    } while (consumeIf(','));
    FUSEC_RETURN_IF_ERROR(expect(')', "',' or ')' in the guard"));
  }
  std::vector<TensorType> types;
  if (consumeIf(':')) {
    do {
      FUSEC_ASSIGN_OR_RETURN(TensorType t, parseType());
      types.push_back(std::move(t));
    } while (consumeIf(','));
    if (types.size() != results.size())
      return errorAt(line, col, absl::StrCat("expected ", results.size(),
                                             " result types, found ", types.size()));
  } else if (!results.empty()) {
    return error("':' and the result types");
  }
  std::string loc;
  if (consumeKeyword("loc")) {
    FUSEC_RETURN_IF_ERROR(expect('('));
    FUSEC_ASSIGN_OR_RETURN(loc, parseString());
    FUSEC_RETURN_IF_ERROR(expect(')'));
  }
  Node *n = graph_->addNode(op, std::move(inputs), results, std::move(attrs), std::move(loc),
                            nullptr, std::move(domain));
  n->setGuard(std::move(guard));
  for (size_t i = 0; i < results.size(); ++i) {
    n->output(static_cast<int>(i))->setType(types[i]);
    values_[results[i]] = n->output(static_cast<int>(i));
  }
  return absl::OkStatus();
}

absl::Status Parser::parseStatement() {
  skipWs();
  int line = line_, col = col_;
  std::vector<std::string> results;
  if (peek() == '%') {
    while (true) {
      skipWs();
      int vl = line_, vc = col_;
      FUSEC_ASSIGN_OR_RETURN(std::string name, parseValueName());
      FUSEC_RETURN_IF_ERROR(checkNewName(name, vl, vc));
      for (const std::string &r : results)
        if (r == name) return errorAt(vl, vc, "redefinition of value %" + name);
      results.push_back(std::move(name));
      if (!consumeIf(',')) break;
    }
    FUSEC_RETURN_IF_ERROR(expect('=', "'=' after the result names"));
    if (consumeKeyword("constant")) {
      if (results.size() != 1) return errorAt(line, col, "a constant defines exactly one value");
      FUSEC_ASSIGN_OR_RETURN(TensorType type, parseType());
      FUSEC_RETURN_IF_ERROR(expectKeyword("dense"));
      FUSEC_RETURN_IF_ERROR(expect('<'));
      FUSEC_ASSIGN_OR_RETURN(Tensor t, parseDenseData(type, /*allowElided=*/true));
      FUSEC_RETURN_IF_ERROR(expect('>'));
      values_[results[0]] = graph_->addConstant(results[0], std::move(t));
      return absl::OkStatus();
    }
  }
  skipWs();
  if (peek() != '"') return error(results.empty() ? "a statement or 'return'" : "'constant' or an op name string");
  return parseNode(std::move(results), line, col);
}

absl::StatusOr<std::unique_ptr<Graph>> Parser::parse() {
  graph_ = std::make_unique<Graph>();
  FUSEC_RETURN_IF_ERROR(expectKeyword("graph"));
  FUSEC_RETURN_IF_ERROR(expect('@'));
  if (peek() == '"') {
    FUSEC_ASSIGN_OR_RETURN(std::string n, parseString());
    graph_->setName(n);
  } else {
    std::string n = bareWord();
    if (n.empty()) return error("a graph name");
    graph_->setName(n);
  }
  FUSEC_RETURN_IF_ERROR(expect('('));
  if (!consumeIf(')')) {
    while (true) {
      skipWs();
      int vl = line_, vc = col_;
      FUSEC_ASSIGN_OR_RETURN(std::string name, parseValueName());
      FUSEC_RETURN_IF_ERROR(checkNewName(name, vl, vc));
      FUSEC_RETURN_IF_ERROR(expect(':'));
      FUSEC_ASSIGN_OR_RETURN(TensorType t, parseType());
      values_[name] = graph_->addInput(name, std::move(t));
      if (consumeIf(')')) break;
      FUSEC_RETURN_IF_ERROR(expect(',', "',' or ')' in the graph inputs"));
    }
  }
  skipWs();
  if (peek() != '-' || peek(1) != '>') return error("'->'");
  advance();
  advance();
  FUSEC_RETURN_IF_ERROR(expect('('));
  struct Ref {
    std::string name;
    int line, col;
  };
  std::vector<Ref> outs;
  if (!consumeIf(')')) {
    while (true) {
      skipWs();
      Ref r{"", line_, col_};
      FUSEC_ASSIGN_OR_RETURN(r.name, parseValueName());
      outs.push_back(std::move(r));
      if (consumeIf(')')) break;
      FUSEC_RETURN_IF_ERROR(expect(',', "',' or ')' in the graph outputs"));
    }
  }
  if (consumeKeyword("opset")) {
    FUSEC_ASSIGN_OR_RETURN(int64_t v, parseInt());
    graph_->setOpset(v);
  }
  FUSEC_RETURN_IF_ERROR(expect('{'));
  while (!consumeKeyword("return")) {
    skipWs();
    if (atEnd()) return error("a statement or 'return'");
    FUSEC_RETURN_IF_ERROR(parseStatement());
  }
  std::vector<Ref> rets;
  skipWs();
  if (peek() == '%') {
    while (true) {
      skipWs();
      Ref r{"", line_, col_};
      FUSEC_ASSIGN_OR_RETURN(r.name, parseValueName());
      rets.push_back(std::move(r));
      if (!consumeIf(',')) break;
    }
  }
  skipWs();
  int cl = line_, cc = col_;
  FUSEC_RETURN_IF_ERROR(expect('}', "'}' after the return"));
  skipWs();
  if (!atEnd()) return error("end of input after the graph");
  bool same = rets.size() == outs.size();
  for (size_t i = 0; same && i < rets.size(); ++i) same = rets[i].name == outs[i].name;
  if (!same)
    return errorAt(cl, cc, "the return list does not match the graph's '->' output list");
  for (const Ref &r : outs) {
    FUSEC_ASSIGN_OR_RETURN(Value * v, lookup(r.name, r.line, r.col));
    graph_->markOutput(v);
  }
  return std::move(graph_);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> parseGraph(std::string_view text) {
  return Parser(text).parse();
}

}  // namespace fusec::ir
