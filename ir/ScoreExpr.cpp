//===- ScoreExpr.cpp - Attention score/mask expression language ----------===//
//
// Recursive-descent parser, canonical printer and f32 evaluator for the
// language described in ScoreExpr.h.
//
//===----------------------------------------------------------------------===//
#include "ir/ScoreExpr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/Graph.h"
#include "support/Status.h"

namespace fusec::ir {

namespace {

constexpr int kMaxDepth = 200;
constexpr size_t kMaxNodes = 10000;

bool isBinary(ScoreOp op) {
  switch (op) {
    case ScoreOp::kAdd: case ScoreOp::kSub: case ScoreOp::kMul: case ScoreOp::kDiv:
    case ScoreOp::kLt: case ScoreOp::kLe: case ScoreOp::kGt: case ScoreOp::kGe:
    case ScoreOp::kEq: case ScoreOp::kNe: case ScoreOp::kAnd: case ScoreOp::kOr:
      return true;
    default: return false;
  }
}

const char *binarySymbol(ScoreOp op) {
  switch (op) {
    case ScoreOp::kAdd: return "+";
    case ScoreOp::kSub: return "-";
    case ScoreOp::kMul: return "*";
    case ScoreOp::kDiv: return "/";
    case ScoreOp::kLt: return "<";
    case ScoreOp::kLe: return "<=";
    case ScoreOp::kGt: return ">";
    case ScoreOp::kGe: return ">=";
    case ScoreOp::kEq: return "==";
    case ScoreOp::kNe: return "!=";
    case ScoreOp::kAnd: return "&&";
    case ScoreOp::kOr: return "||";
    default: return "?";
  }
}

const char *funcName(ScoreOp op) {
  switch (op) {
    case ScoreOp::kTanh: return "tanh";
    case ScoreOp::kExp: return "exp";
    case ScoreOp::kLog: return "log";
    case ScoreOp::kAbs: return "abs";
    case ScoreOp::kSqrt: return "sqrt";
    case ScoreOp::kMin: return "min";
    case ScoreOp::kMax: return "max";
    default: return nullptr;
  }
}

class Parser {
 public:
  Parser(const std::string &text, const ScoreExprContext &ctx) : s_(text), ctx_(ctx) {}

  absl::StatusOr<ScoreExpr> run() {
    skipSpace();
    if (pos_ == s_.size()) return ScoreExpr{};
    auto r = parseExpr(0);
    if (!r.ok()) return r.status();
    skipSpace();
    if (pos_ != s_.size()) return error("end of expression");
    e_.root = *r;
    return std::move(e_);
  }

 private:
  absl::Status error(const std::string &expected) const {
    std::string near = s_.substr(pos_, 16);
    return absl::InvalidArgumentError(absl::StrCat("score expression: expected ", expected,
                                                   " at offset ", pos_, " near '", near,
                                                   "' in '", s_.substr(0, 200), "'"));
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(const char *tok) {
    skipSpace();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) == 0) {
      // "<" must not eat the first char of "<=", etc.
      if ((n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && pos_ + 1 < s_.size() &&
           s_[pos_ + 1] == '=') ||
          (n == 1 && (tok[0] == '&' || tok[0] == '|')))
        return false;
      pos_ += n;
      return true;
    }
    return false;
  }

  absl::StatusOr<int> add(ScoreNode n) {
    if (e_.nodes.size() >= kMaxNodes) return error("fewer than 10000 nodes");
    e_.nodes.push_back(std::move(n));
    return static_cast<int>(e_.nodes.size()) - 1;
  }
  ScoreType typeOf(int id) const { return e_.nodes[id].type; }

  absl::StatusOr<int> makeBinary(ScoreOp op, int a, int b) {
    ScoreNode n;
    n.op = op;
    n.a = a;
    n.b = b;
    switch (op) {
      case ScoreOp::kAdd: case ScoreOp::kSub: case ScoreOp::kMul: case ScoreOp::kDiv:
      case ScoreOp::kMin: case ScoreOp::kMax: {
        const bool isInt = typeOf(a) != ScoreType::kFloat && typeOf(b) != ScoreType::kFloat;
        n.type = isInt ? ScoreType::kInt : ScoreType::kFloat;
        break;
      }
      default: n.type = ScoreType::kBool;
    }
    return add(std::move(n));
  }

  absl::StatusOr<int> parseExpr(int depth) {
    if (depth > kMaxDepth) return error("nesting depth at most 200");
    FUSEC_ASSIGN_OR_RETURN(int c, parseOr(depth + 1));
    if (eat("?")) {
      FUSEC_ASSIGN_OR_RETURN(int a, parseExpr(depth + 1));
      if (!eat(":")) return error("':'");
      FUSEC_ASSIGN_OR_RETURN(int b, parseExpr(depth + 1));
      return makeSelect(c, a, b);
    }
    return c;
  }
  absl::StatusOr<int> makeSelect(int c, int a, int b) {
    ScoreNode n;
    n.op = ScoreOp::kSelect;
    n.a = c;
    n.b = a;
    n.c = b;
    if (typeOf(a) == typeOf(b)) n.type = typeOf(a);
    else if (typeOf(a) == ScoreType::kFloat || typeOf(b) == ScoreType::kFloat) n.type = ScoreType::kFloat;
    else n.type = ScoreType::kInt;
    return add(std::move(n));
  }
  absl::StatusOr<int> parseOr(int depth) {
    FUSEC_ASSIGN_OR_RETURN(int l, parseAnd(depth));
    while (true) {
      skipSpace();
      if (s_.compare(pos_, 2, "||") != 0) return l;
      pos_ += 2;
      FUSEC_ASSIGN_OR_RETURN(int r, parseAnd(depth));
      FUSEC_ASSIGN_OR_RETURN(l, makeBinary(ScoreOp::kOr, l, r));
    }
  }
  absl::StatusOr<int> parseAnd(int depth) {
    FUSEC_ASSIGN_OR_RETURN(int l, parseCmp(depth));
    while (true) {
      skipSpace();
      if (s_.compare(pos_, 2, "&&") != 0) return l;
      pos_ += 2;
      FUSEC_ASSIGN_OR_RETURN(int r, parseCmp(depth));
      FUSEC_ASSIGN_OR_RETURN(l, makeBinary(ScoreOp::kAnd, l, r));
    }
  }
  absl::StatusOr<int> parseCmp(int depth) {
    FUSEC_ASSIGN_OR_RETURN(int l, parseAdd(depth));
    skipSpace();
    static const std::pair<const char *, ScoreOp> kOps[] = {
        {"<=", ScoreOp::kLe}, {">=", ScoreOp::kGe}, {"==", ScoreOp::kEq},
        {"!=", ScoreOp::kNe}, {"<", ScoreOp::kLt},  {">", ScoreOp::kGt}};
    for (const auto &[tok, op] : kOps) {
      const size_t n = std::char_traits<char>::length(tok);
      if (s_.compare(pos_, n, tok) == 0) {
        pos_ += n;
        FUSEC_ASSIGN_OR_RETURN(int r, parseAdd(depth));
        return makeBinary(op, l, r);
      }
    }
    return l;
  }
  absl::StatusOr<int> parseAdd(int depth) {
    FUSEC_ASSIGN_OR_RETURN(int l, parseMul(depth));
    while (true) {
      skipSpace();
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        const ScoreOp op = s_[pos_] == '+' ? ScoreOp::kAdd : ScoreOp::kSub;
        ++pos_;
        FUSEC_ASSIGN_OR_RETURN(int r, parseMul(depth));
        FUSEC_ASSIGN_OR_RETURN(l, makeBinary(op, l, r));
      } else {
        return l;
      }
    }
  }
  absl::StatusOr<int> parseMul(int depth) {
    FUSEC_ASSIGN_OR_RETURN(int l, parseUnary(depth));
    while (true) {
      skipSpace();
      if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/')) {
        const ScoreOp op = s_[pos_] == '*' ? ScoreOp::kMul : ScoreOp::kDiv;
        ++pos_;
        FUSEC_ASSIGN_OR_RETURN(int r, parseUnary(depth));
        FUSEC_ASSIGN_OR_RETURN(l, makeBinary(op, l, r));
      } else {
        return l;
      }
    }
  }
  absl::StatusOr<int> parseUnary(int depth) {
    if (depth > kMaxDepth) return error("nesting depth at most 200");
    skipSpace();
    if (pos_ < s_.size() && (s_[pos_] == '-' || (s_[pos_] == '!' && s_.compare(pos_, 2, "!=") != 0))) {
      const bool neg = s_[pos_] == '-';
      ++pos_;
      FUSEC_ASSIGN_OR_RETURN(int a, parseUnary(depth + 1));
      // Fold "-<literal>" so that printed negative constants round-trip.
      if (neg && e_.nodes[a].op == ScoreOp::kConst && a == static_cast<int>(e_.nodes.size()) - 1) {
        e_.nodes[a].value = -e_.nodes[a].value;
        return a;
      }
      ScoreNode n;
      n.op = neg ? ScoreOp::kNeg : ScoreOp::kNot;
      n.a = a;
      n.type = neg ? (typeOf(a) == ScoreType::kFloat ? ScoreType::kFloat : ScoreType::kInt)
                   : ScoreType::kBool;
      return add(std::move(n));
    }
    return parsePrimary(depth + 1);
  }

  absl::StatusOr<int> parseNumber() {
    const size_t start = pos_;
    bool isFloat = false;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      isFloat = true;
      ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      isFloat = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      const size_t digits = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (digits == pos_) return error("exponent digits");
    }
    const std::string text = s_.substr(start, pos_ - start);
    if (text == ".") return error("a number");
    ScoreNode n;
    n.op = ScoreOp::kConst;
    if (isFloat) {
      n.type = ScoreType::kFloat;
      n.value = static_cast<float>(std::strtod(text.c_str(), nullptr));
    } else {
      if (text.size() > 15) return error("an integer literal below 10^15");
      n.type = ScoreType::kInt;
      n.value = static_cast<double>(std::strtoll(text.c_str(), nullptr, 10));
    }
    return add(std::move(n));
  }

  absl::StatusOr<int> parsePrimary(int depth) {
    skipSpace();
    if (pos_ >= s_.size()) return error("an operand");
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parseNumber();
    if (c == '(') {
      ++pos_;
      FUSEC_ASSIGN_OR_RETURN(int e, parseExpr(depth + 1));
      if (!eat(")")) return error("')'");
      return e;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) return error("an operand");
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    const std::string id = s_.substr(start, pos_ - start);
    ScoreNode n;
    if (id == "inf" || id == "nan") {
      n.op = ScoreOp::kConst;
      n.type = ScoreType::kFloat;
      n.value = id == "inf" ? std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::quiet_NaN();
      return add(std::move(n));
    }
    if (id == "score") {
      if (!ctx_.allowScore) { pos_ = start; return error("an index-only operand (no 'score')"); }
      n.op = ScoreOp::kScore;
      n.type = ScoreType::kFloat;
      return add(std::move(n));
    }
    if (id == "b" || id == "h" || id == "q" || id == "k") {
      n.op = id == "b" ? ScoreOp::kB : id == "h" ? ScoreOp::kH : id == "q" ? ScoreOp::kQ : ScoreOp::kK;
      n.type = ScoreType::kInt;
      return add(std::move(n));
    }
    if (id.size() > 4 && id.compare(0, 4, "bias") == 0 &&
        std::all_of(id.begin() + 4, id.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
      if (id.size() > 8) { pos_ = start; return error("a bias input number below 10000"); }
      const int idx = std::atoi(id.c_str() + 4);
      if (idx >= ctx_.numBiases) {
        pos_ = start;
        return error(absl::StrCat("a bias input below bias", ctx_.numBiases, " (got ", id, ")"));
      }
      n.op = ScoreOp::kBias;
      n.index = idx;
      n.type = ScoreType::kFloat;
      return add(std::move(n));
    }
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == '[') {
      if (!ctx_.allowTables) { pos_ = start; return error("an index-only operand (no tables)"); }
      if (!ctx_.tables.empty() &&
          std::find(ctx_.tables.begin(), ctx_.tables.end(), id) == ctx_.tables.end()) {
        pos_ = start;
        return error(absl::StrCat("a known table (no table '", id, "')"));
      }
      ++pos_;
      FUSEC_ASSIGN_OR_RETURN(int i, parseExpr(depth + 1));
      if (!eat("]")) return error("']'");
      if (typeOf(i) == ScoreType::kFloat) return error("an integer table index");
      n.op = ScoreOp::kTable;
      n.name = id;
      n.a = i;
      n.type = ScoreType::kFloat;
      return add(std::move(n));
    }
    static const std::pair<const char *, ScoreOp> kFuncs[] = {
        {"tanh", ScoreOp::kTanh}, {"exp", ScoreOp::kExp}, {"log", ScoreOp::kLog},
        {"abs", ScoreOp::kAbs},   {"sqrt", ScoreOp::kSqrt}, {"min", ScoreOp::kMin},
        {"max", ScoreOp::kMax},   {"where", ScoreOp::kSelect}};
    for (const auto &[name, op] : kFuncs) {
      if (id != name) continue;
      if (!eat("(")) return error("'(' after a function name");
      std::vector<int> args;
      while (true) {
        FUSEC_ASSIGN_OR_RETURN(int a, parseExpr(depth + 1));
        args.push_back(a);
        if (eat(",")) continue;
        if (eat(")")) break;
        return error("',' or ')'");
      }
      const size_t want = op == ScoreOp::kSelect ? 3 : (op == ScoreOp::kMin || op == ScoreOp::kMax) ? 2 : 1;
      if (args.size() != want) return error(absl::StrCat(want, " argument(s) to ", name));
      if (op == ScoreOp::kSelect) return makeSelect(args[0], args[1], args[2]);
      if (want == 2) return makeBinary(op, args[0], args[1]);
      n.op = op;
      n.a = args[0];
      n.type = (op == ScoreOp::kAbs && typeOf(args[0]) == ScoreType::kInt) ? ScoreType::kInt
                                                                            : ScoreType::kFloat;
      return add(std::move(n));
    }
    pos_ = start;
    return error(absl::StrCat("a known name (unknown '", id, "')"));
  }

  const std::string &s_;
  const ScoreExprContext &ctx_;
  size_t pos_ = 0;
  ScoreExpr e_;
};

std::string printNode(const ScoreExpr &e, int id) {
  const ScoreNode &n = e.nodes[id];
  switch (n.op) {
    case ScoreOp::kConst:
      if (n.type == ScoreType::kFloat) return scoreFloatLiteral(static_cast<float>(n.value));
      return absl::StrCat(static_cast<int64_t>(n.value));
    case ScoreOp::kScore: return "score";
    case ScoreOp::kB: return "b";
    case ScoreOp::kH: return "h";
    case ScoreOp::kQ: return "q";
    case ScoreOp::kK: return "k";
    case ScoreOp::kBias: return absl::StrCat("bias", n.index);
    case ScoreOp::kTable: return absl::StrCat(n.name, "[", printNode(e, n.a), "]");
    case ScoreOp::kNeg: return absl::StrCat("-(", printNode(e, n.a), ")");
    case ScoreOp::kNot: return absl::StrCat("!(", printNode(e, n.a), ")");
    case ScoreOp::kSelect:
      return absl::StrCat("(", printNode(e, n.a), " ? ", printNode(e, n.b), " : ",
                          printNode(e, n.c), ")");
    case ScoreOp::kMin: case ScoreOp::kMax:
      return absl::StrCat(funcName(n.op), "(", printNode(e, n.a), ", ", printNode(e, n.b), ")");
    case ScoreOp::kTanh: case ScoreOp::kExp: case ScoreOp::kLog: case ScoreOp::kAbs:
    case ScoreOp::kSqrt:
      return absl::StrCat(funcName(n.op), "(", printNode(e, n.a), ")");
    default:
      if (isBinary(n.op))
        return absl::StrCat("(", printNode(e, n.a), " ", binarySymbol(n.op), " ",
                            printNode(e, n.b), ")");
      return "?";
  }
}

bool truthy(double v) { return v != 0; }  // NaN is true, as in C

}  // namespace

std::optional<IndexLinear> indexLinear(const ScoreExpr &e, int id) {
  std::function<std::optional<IndexLinear>(int, int)> rec = [&](int x, int depth) -> std::optional<IndexLinear> {
    if (x < 0 || x >= static_cast<int>(e.nodes.size()) || depth > 64) return std::nullopt;
    const ScoreNode &n = e.node(x);
    if (n.type != ScoreType::kInt) return std::nullopt;
    switch (n.op) {
      case ScoreOp::kConst: return IndexLinear{0, 0, static_cast<int64_t>(n.value)};
      case ScoreOp::kQ: return IndexLinear{1, 0, 0};
      case ScoreOp::kK: return IndexLinear{0, 1, 0};
      case ScoreOp::kNeg: {
        auto a = rec(n.a, depth + 1);
        if (!a) return std::nullopt;
        return IndexLinear{-a->cq, -a->ck, -a->c0};
      }
      case ScoreOp::kAdd:
      case ScoreOp::kSub: {
        auto a = rec(n.a, depth + 1), b = rec(n.b, depth + 1);
        if (!a || !b) return std::nullopt;
        const int64_t sg = n.op == ScoreOp::kAdd ? 1 : -1;
        return IndexLinear{a->cq + sg * b->cq, a->ck + sg * b->ck, a->c0 + sg * b->c0};
      }
      case ScoreOp::kMul: {
        auto a = rec(n.a, depth + 1), b = rec(n.b, depth + 1);
        if (!a || !b) return std::nullopt;
        if (a->cq == 0 && a->ck == 0) return IndexLinear{a->c0 * b->cq, a->c0 * b->ck, a->c0 * b->c0};
        if (b->cq == 0 && b->ck == 0) return IndexLinear{b->c0 * a->cq, b->c0 * a->ck, b->c0 * a->c0};
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  };
  return rec(id, 0);
}

std::optional<DiagonalBound> diagonalBound(const ScoreExpr &e, int id) {
  if (id < 0 || id >= static_cast<int>(e.nodes.size())) return std::nullopt;
  bool negate = false;
  while (e.node(id).op == ScoreOp::kNot) {
    negate = !negate;
    id = e.node(id).a;
    if (id < 0) return std::nullopt;
  }
  const ScoreNode &n = e.node(id);
  ScoreOp op = n.op;
  if (op != ScoreOp::kLt && op != ScoreOp::kLe && op != ScoreOp::kGt && op != ScoreOp::kGe) return std::nullopt;
  if (negate)  // !(a < b) is a >= b, on integers
    op = op == ScoreOp::kLt ? ScoreOp::kGe : op == ScoreOp::kLe ? ScoreOp::kGt : op == ScoreOp::kGt ? ScoreOp::kLe
                                                                                                     : ScoreOp::kLt;
  auto a = indexLinear(e, n.a), b = indexLinear(e, n.b);
  if (!a || !b) return std::nullopt;
  IndexLinear d{a->cq - b->cq, a->ck - b->ck, a->c0 - b->c0};  // d OP 0
  if (d.cq == -1 && d.ck == 1) {  // negate both sides: flip the comparison
    d = IndexLinear{1, -1, -d.c0};
    op = op == ScoreOp::kLt ? ScoreOp::kGt : op == ScoreOp::kLe ? ScoreOp::kGe : op == ScoreOp::kGt ? ScoreOp::kLt
                                                                                                  : ScoreOp::kLe;
  }
  if (d.cq != 1 || d.ck != -1) return std::nullopt;
  // q - k + c OP 0.
  switch (op) {
    case ScoreOp::kGe: return DiagonalBound{DiagonalBound::kUpper, d.c0};       // k <= q + c
    case ScoreOp::kGt: return DiagonalBound{DiagonalBound::kUpper, d.c0 - 1};   // k <= q + c - 1
    case ScoreOp::kLt: return DiagonalBound{DiagonalBound::kWindow, -d.c0};     // q - k < -c
    case ScoreOp::kLe: return DiagonalBound{DiagonalBound::kWindow, -d.c0 + 1}; // q - k < -c + 1
    default: return std::nullopt;
  }
}

std::vector<int> scoreConjuncts(const ScoreExpr &e, int id) {
  std::vector<int> out, stack{id};
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    if (x >= 0 && x < static_cast<int>(e.nodes.size()) && e.node(x).op == ScoreOp::kAnd) {
      stack.push_back(e.node(x).b);
      stack.push_back(e.node(x).a);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

std::optional<std::pair<int64_t, int64_t>> diagonalInterval(const ScoreExpr &mask) {
  if (mask.empty()) return std::nullopt;
  int64_t lo = -(int64_t{1} << 61), hi = int64_t{1} << 61;
  for (int id : scoreConjuncts(mask, mask.root)) {
    const std::optional<DiagonalBound> d = diagonalBound(mask, id);
    if (!d) return std::nullopt;
    if (d->kind == DiagonalBound::kUpper) lo = std::max(lo, -d->bound);  // k <= q + u: q - k >= -u
    else hi = std::min(hi, d->bound - 1);                              // q - k < w
  }
  return std::make_pair(lo, hi);
}

std::string diagonalBoundText(const DiagonalBound &d) {
  if (d.kind == DiagonalBound::kWindow) return absl::StrCat("q - k < ", d.bound);
  if (d.bound == 0) return "k <= q";
  return d.bound > 0 ? absl::StrCat("k <= q + ", d.bound) : absl::StrCat("k <= q - ", -d.bound);
}

std::string scoreFloatLiteral(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15f) return absl::StrFormat("%.1f", v);
  std::string s = absl::StrFormat("%.9g", v);
  // Shortest form that round-trips to the same f32.
  for (int p = 1; p <= 9; ++p) {
    std::string t = absl::StrFormat("%.*g", p, v);
    if (static_cast<float>(std::strtod(t.c_str(), nullptr)) == v) {
      s = t;
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string ScoreExpr::str() const {
  if (empty()) return "";
  std::string s = printNode(*this, root);
  // Drop one redundant outer pair of parentheses for readability when it
  // encloses the whole text.
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
    int depth = 0;
    bool outer = true;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      else if (s[i] == ')') --depth;
      if (depth == 0) { outer = false; break; }
    }
    if (outer) s = s.substr(1, s.size() - 2);
  }
  return s;
}

bool ScoreExpr::usesScore() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const ScoreNode &n) { return n.op == ScoreOp::kScore; });
}
bool ScoreExpr::usesBias() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const ScoreNode &n) { return n.op == ScoreOp::kBias; });
}
bool ScoreExpr::usesTables() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const ScoreNode &n) { return n.op == ScoreOp::kTable; });
}
bool ScoreExpr::usesIndex(ScoreOp var) const {
  return std::any_of(nodes.begin(), nodes.end(), [&](const ScoreNode &n) { return n.op == var; });
}
int ScoreExpr::numBiasesUsed() const {
  int m = 0;
  for (const ScoreNode &n : nodes)
    if (n.op == ScoreOp::kBias) m = std::max(m, n.index + 1);
  return m;
}
std::vector<std::string> ScoreExpr::tablesUsed() const {
  std::set<std::string> s;
  for (const ScoreNode &n : nodes)
    if (n.op == ScoreOp::kTable) s.insert(n.name);
  return {s.begin(), s.end()};
}

absl::StatusOr<ScoreExpr> parseScoreExpr(const std::string &text, const ScoreExprContext &ctx) {
  Parser p(text, ctx);
  return p.run();
}

namespace {

/// Saturating double -> int64 (NaN -> 0): the value a float or bool operand
/// has in integer arithmetic, never undefined behaviour.
int64_t toInt64(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (x <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// Two's complement wrapping int64 arithmetic (computed in uint64, where
// overflow is defined).
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wrapNeg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }
/// Truncating division; x / 0 is 0 and INT64_MIN / -1 wraps to INT64_MIN
/// (the only quotient that overflows; C++ leaves it undefined, x86 traps).
int64_t wrapDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrapNeg(a);
  return a / b;
}

}  // namespace

double evalScoreExpr(const ScoreExpr &e, const ScoreEnv &env) {
  // v holds every node's value as a double (floats are f32 values, bools
  // 0/1); iv holds the exact int64 value of int nodes, since products of
  // indices can exceed the 2^53 a double holds exactly.
  std::vector<double> v(e.nodes.size(), 0.0);
  std::vector<int64_t> iv(e.nodes.size(), 0);
  auto f32 = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  auto intOf = [&](int id) {
    return e.nodes[id].type == ScoreType::kInt ? iv[id] : toInt64(v[id]);
  };
  for (size_t i = 0; i < e.nodes.size(); ++i) {
    const ScoreNode &n = e.nodes[i];
    const bool fl = n.type == ScoreType::kFloat;
    if (n.type == ScoreType::kInt) {
      int64_t r = 0;
      switch (n.op) {
        case ScoreOp::kConst: r = toInt64(n.value); break;
        case ScoreOp::kB: r = env.b; break;
        case ScoreOp::kH: r = env.h; break;
        case ScoreOp::kQ: r = env.q; break;
        case ScoreOp::kK: r = env.k; break;
        case ScoreOp::kNeg: r = wrapNeg(intOf(n.a)); break;
        case ScoreOp::kAdd: r = wrapAdd(intOf(n.a), intOf(n.b)); break;
        case ScoreOp::kSub: r = wrapSub(intOf(n.a), intOf(n.b)); break;
        case ScoreOp::kMul: r = wrapMul(intOf(n.a), intOf(n.b)); break;
        case ScoreOp::kDiv: r = wrapDiv(intOf(n.a), intOf(n.b)); break;
        case ScoreOp::kMin: r = std::min(intOf(n.a), intOf(n.b)); break;
        case ScoreOp::kMax: r = std::max(intOf(n.a), intOf(n.b)); break;
        case ScoreOp::kAbs: {
          const int64_t x = intOf(n.a);
          r = x < 0 ? wrapNeg(x) : x;
          break;
        }
        case ScoreOp::kSelect: r = truthy(v[n.a]) ? intOf(n.b) : intOf(n.c); break;
        default: r = toInt64(v[n.a]); break;  // no other op is typed int
      }
      iv[i] = r;
      v[i] = static_cast<double>(r);
      continue;
    }
    auto A = [&] { return v[n.a]; };
    auto B = [&] { return v[n.b]; };
    // int-int comparisons compare the exact int64 values.
    if (n.a >= 0 && n.b >= 0 && e.nodes[n.a].type == ScoreType::kInt &&
        e.nodes[n.b].type == ScoreType::kInt) {
      const int64_t x = iv[n.a], y = iv[n.b];
      bool c = false, cmp = true;
      switch (n.op) {
        case ScoreOp::kLt: c = x < y; break;
        case ScoreOp::kLe: c = x <= y; break;
        case ScoreOp::kGt: c = x > y; break;
        case ScoreOp::kGe: c = x >= y; break;
        case ScoreOp::kEq: c = x == y; break;
        case ScoreOp::kNe: c = x != y; break;
        default: cmp = false; break;
      }
      if (cmp) {
        v[i] = c ? 1 : 0;
        continue;
      }
    }
    double r = 0;
    switch (n.op) {
      case ScoreOp::kConst: r = n.value; break;
      case ScoreOp::kScore: r = env.score; break;
      case ScoreOp::kB: r = static_cast<double>(env.b); break;
      case ScoreOp::kH: r = static_cast<double>(env.h); break;
      case ScoreOp::kQ: r = static_cast<double>(env.q); break;
      case ScoreOp::kK: r = static_cast<double>(env.k); break;
      case ScoreOp::kBias: r = env.bias ? env.bias(n.index) : 0.0; break;
      case ScoreOp::kTable: {
        r = std::numeric_limits<double>::quiet_NaN();
        if (env.tables) {
          auto it = env.tables->find(n.name);
          const int64_t idx = intOf(n.a);
          if (it != env.tables->end() && !std::isnan(A()) && idx >= 0 &&
              static_cast<uint64_t>(idx) < it->second.size())
            r = it->second[static_cast<size_t>(idx)];
        }
        break;
      }
      case ScoreOp::kNeg: r = -A(); break;
      case ScoreOp::kNot: r = truthy(A()) ? 0 : 1; break;
      case ScoreOp::kAdd: r = A() + B(); break;
      case ScoreOp::kSub: r = A() - B(); break;
      case ScoreOp::kMul: r = A() * B(); break;
      case ScoreOp::kDiv: r = A() / B(); break;  // float (int division is above)
      case ScoreOp::kLt: r = A() < B(); break;
      case ScoreOp::kLe: r = A() <= B(); break;
      case ScoreOp::kGt: r = A() > B(); break;
      case ScoreOp::kGe: r = A() >= B(); break;
      case ScoreOp::kEq: r = A() == B(); break;
      case ScoreOp::kNe: r = A() != B(); break;
      case ScoreOp::kAnd: r = truthy(A()) && truthy(B()); break;
      case ScoreOp::kOr: r = truthy(A()) || truthy(B()); break;
      case ScoreOp::kSelect: r = truthy(A()) ? B() : v[n.c]; break;
      case ScoreOp::kTanh: r = std::tanh(static_cast<float>(A())); break;
      case ScoreOp::kExp: r = std::exp(static_cast<float>(A())); break;
      case ScoreOp::kLog: r = std::log(static_cast<float>(A())); break;
      case ScoreOp::kAbs: r = std::fabs(A()); break;
      case ScoreOp::kSqrt: r = std::sqrt(static_cast<float>(A())); break;
      case ScoreOp::kMin: r = std::fmin(A(), B()); break;
      case ScoreOp::kMax: r = std::fmax(A(), B()); break;
    }
    v[i] = fl ? f32(r) : r;
  }
  return v[e.root];
}

absl::StatusOr<AttentionAttrs> readAttentionAttrs(const Node &node) {
  if (node.kind() != OpKind::kFusedAttention)
    return absl::InvalidArgumentError(
        absl::StrCat(node.describe(), " is not a FusedAttention node"));
  AttentionAttrs a;
  a.numHeads = node.attrI("num_heads");
  a.kvHeads = node.attrI("kv_num_heads");
  a.scale = node.attrF("scale");
  ScoreExprContext ctx;
  ctx.numBiases = std::max(0, node.numInputs() - 3);
  for (const Attribute *names = node.attr("tables"); names && names->kind() == Attribute::Kind::kStrings;) {
    for (const std::string &t : names->strings()) {
      const Attribute *vals = node.attr("table_" + t);
      if (!vals || vals->kind() != Attribute::Kind::kFloats)
        return absl::InvalidArgumentError(
            absl::StrCat("FusedAttention: table '", t, "' has no floats attribute 'table_", t, "'"));
      a.tables[t] = vals->floats();
      ctx.tables.push_back(t);
    }
    break;
  }
  if (ctx.tables.empty()) ctx.allowTables = false;
  {
    auto e = parseScoreExpr(node.attrS("score_mod"), ctx);
    if (!e.ok()) return withContext(e.status(), "FusedAttention score_mod");
    a.scoreMod = std::move(*e);
  }
  ScoreExprContext mctx;
  mctx.allowScore = false;
  mctx.allowTables = false;
  auto m = parseScoreExpr(node.attrS("mask"), mctx);
  if (!m.ok()) return withContext(m.status(), "FusedAttention mask");
  a.mask = std::move(*m);
  const std::string rows = node.attrS("masked_rows");
  if (!rows.empty() && rows != "mean")
    return absl::InvalidArgumentError(
        absl::StrCat("FusedAttention: masked_rows '", rows, "' is not \"\" (NaN) or \"mean\""));
  a.maskedRowsMean = rows == "mean";
  const int64_t km = node.attrI("key_mask");
  if (km < -1 || km >= ctx.numBiases)
    return absl::InvalidArgumentError(absl::StrCat("FusedAttention: key_mask ", km, " names no bias input (",
                                                   ctx.numBiases, " biases)"));
  a.keyMask = static_cast<int>(km);
  if (km >= 0 && node.input(3 + static_cast<int>(km))) {
    const ir::TensorType &t = node.input(3 + static_cast<int>(km))->type();
    if (t.rankKnown) {
      if (t.rank() > 4)
        return absl::InvalidArgumentError("FusedAttention: the key_mask input has rank > 4");
      for (int64_t d = 0; d < t.rank(); ++d) {
        const int64_t pos = 4 - t.rank() + d;  // position in [B, Hq, Sq, Sk]
        if ((pos == 1 || pos == 2) && !(t.shape[d].isStatic() && t.shape[d].value == 1))
          return absl::InvalidArgumentError(
              "FusedAttention: the key_mask input is not per key (its Hq and Sq dims must be 1)");
      }
    }
  }
  return a;
}

}  // namespace fusec::ir
