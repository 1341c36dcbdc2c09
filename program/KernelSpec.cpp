//===- KernelSpec.cpp - Kernel description builders and printer -----------===//
#include "program/KernelSpec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fusec::program {

const char *scalarTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::kBool: return "bool";
    case ScalarType::kI64: return "i64";
    case ScalarType::kIdx: return "idx";
    case ScalarType::kF32: return "f32";
    case ScalarType::kF64: return "f64";
  }
  return "?";
}

ScalarType computeTypeOf(ir::DType storage) {
  switch (storage) {
    case ir::DType::kF64: return ScalarType::kF64;
    case ir::DType::kF32:
    case ir::DType::kF16:
    case ir::DType::kBF16:
    case ir::DType::kF8E4M3FN:
    case ir::DType::kF8E4M3FNUZ:
    case ir::DType::kF8E5M2:
    case ir::DType::kF8E5M2FNUZ: return ScalarType::kF32;
    case ir::DType::kBool: return ScalarType::kBool;
    default: return ScalarType::kI64;
  }
}

const char *unaryOpName(UnaryOp op) {
  static const char *const kNames[] = {
      "neg",   "abs",  "exp",   "log",  "sqrt",   "rsqrt",    "recip",    "erf",
      "tanh",  "sigmoid", "sin", "cos", "floor",  "ceil",     "round",    "sign",
      "not",   "isnan", "isposinf", "isneginf", "log1p", "round_f16", "round_bf16", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
      "acosh", "atanh", "round_f8e4m3fn", "round_f8e4m3fnuz", "round_f8e5m2", "round_f8e5m2fnuz",
      "round_f8e4m3fn_nosat", "round_f8e4m3fnuz_nosat", "round_f8e5m2_nosat", "round_f8e5m2fnuz_nosat"};
  return kNames[static_cast<int>(op)];
}

bool isKernelFloat8(ir::DType t) {
  return t == ir::DType::kF8E4M3FN || t == ir::DType::kF8E4M3FNUZ || t == ir::DType::kF8E5M2 ||
         t == ir::DType::kF8E5M2FNUZ;
}

namespace {
constexpr ir::DType kF8Order[] = {ir::DType::kF8E4M3FN, ir::DType::kF8E4M3FNUZ, ir::DType::kF8E5M2,
                                  ir::DType::kF8E5M2FNUZ};
}  // namespace

UnaryOp roundF8Op(ir::DType t, bool saturate) {
  int i = 0;
  while (i < 3 && kF8Order[i] != t) ++i;
  return static_cast<UnaryOp>(static_cast<int>(saturate ? UnaryOp::kRoundF8E4M3FN : UnaryOp::kRoundF8E4M3FNNoSat) + i);
}

bool roundF8Of(UnaryOp op, ir::DType *t, bool *saturate) {
  const int i = static_cast<int>(op) - static_cast<int>(UnaryOp::kRoundF8E4M3FN);
  if (i < 0 || i >= 8) return false;
  if (t) *t = kF8Order[i % 4];
  if (saturate) *saturate = i < 4;
  return true;
}

Float8Format float8Format(ir::DType t) {
  switch (t) {
    case ir::DType::kF8E4M3FNUZ: return {3, 8, 240.0, false, true, 0x80};
    case ir::DType::kF8E5M2: return {2, 15, 57344.0, true, false, 0x7e};
    case ir::DType::kF8E5M2FNUZ: return {2, 16, 57344.0, false, true, 0x80};
    default: return {3, 7, 448.0, false, false, 0x7f};
  }
}

BinaryOp unsignedBinaryOp(BinaryOp op) {
  switch (op) {
    case BinaryOp::kDiv: return BinaryOp::kDivU;
    case BinaryOp::kMod: return BinaryOp::kModU;
    case BinaryOp::kMax: return BinaryOp::kMaxU;
    case BinaryOp::kMin: return BinaryOp::kMinU;
    case BinaryOp::kLt: return BinaryOp::kLtU;
    case BinaryOp::kLe: return BinaryOp::kLeU;
    case BinaryOp::kGt: return BinaryOp::kGtU;
    case BinaryOp::kGe: return BinaryOp::kGeU;
    case BinaryOp::kShr: return BinaryOp::kShrU;
    default: return op;
  }
}

const char *binaryOpName(BinaryOp op) {
  static const char *const kNames[] = {"add", "sub", "mul", "div", "mod", "fmod",
                                       "pow", "max", "min", "eq",  "ne",  "lt",
                                       "le",  "gt",  "ge",  "and", "or",  "xor",
                                       "shl", "shr", "bitand", "bitor", "bitxor",
                                       "divu", "modu", "maxu", "minu", "ltu", "leu", "gtu", "geu", "shru"};
  return kNames[static_cast<int>(op)];
}

const char *reduceKindName(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kProd: return "prod";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kArgMax: return "argmax";
    case ReduceKind::kArgMin: return "argmin";
  }
  return "?";
}

const char *specKindName(SpecKind k) {
  switch (k) {
    case SpecKind::kPointwise: return "pointwise";
    case SpecKind::kReduce: return "reduce";
    case SpecKind::kAttention: return "attention";
  }
  return "?";
}

int KernelSpec::addDim(int64_t extent, bool reduced) {
  LoopDim d;
  d.name = absl::StrCat(reduced ? "r" : "p", dims.size());
  d.extent = extent;
  d.symbolic = SymExtent::constant(extent);
  d.reduced = reduced;
  dims.push_back(d);
  if (reduced) kind = SpecKind::kReduce;
  return static_cast<int>(dims.size()) - 1;
}

int KernelSpec::addBuffer(ir::DType dtype, std::vector<int64_t> shape, bool written) {
  BufferDesc b;
  b.dtype = dtype;
  for (int64_t e : shape) b.symbolicShape.push_back(SymExtent::constant(e));
  b.shape = std::move(shape);
  b.written = written;
  buffers.push_back(std::move(b));
  return static_cast<int>(buffers.size()) - 1;
}

int KernelSpec::intern(Expr e) {
  if (!mergeIntConstants && e.kind == ExprKind::kConst &&
      (e.type == ScalarType::kIdx || e.type == ScalarType::kI64)) {
    exprs.push_back(std::move(e));
    return static_cast<int>(exprs.size()) - 1;
  }
  uint64_t bits;
  std::memcpy(&bits, &e.fval, sizeof bits);
  auto key = std::make_tuple(static_cast<int>(e.kind), static_cast<int>(e.type), e.op, bits,
                             e.ival, e.operands, e.guard);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  exprs.push_back(std::move(e));
  int id = static_cast<int>(exprs.size()) - 1;
  cache_.emplace(std::move(key), id);
  return id;
}

int KernelSpec::constF(double v, ScalarType t) {
  Expr e;
  e.kind = ExprKind::kConst;
  e.type = t;
  e.fval = v;
  return intern(std::move(e));
}

int KernelSpec::constI(int64_t v, ScalarType t) {
  Expr e;
  e.kind = ExprKind::kConst;
  e.type = t;
  e.ival = v;
  return intern(std::move(e));
}

int KernelSpec::index(int dim) {
  if (dims[dim].extent == 1) return constI(0);
  Expr e;
  e.kind = ExprKind::kIndex;
  e.type = ScalarType::kIdx;
  e.ival = dim;
  return intern(std::move(e));
}

int KernelSpec::load(int buffer, std::vector<int> idx, int guard) {
  int64_t g;
  if (guard >= 0 && isConst(guard, &g) && g) guard = -1;
  Expr e;
  e.kind = ExprKind::kLoad;
  e.type = computeTypeOf(buffers[buffer].dtype);
  e.ival = buffer;
  e.operands = std::move(idx);
  e.guard = guard;
  return intern(std::move(e));
}

bool KernelSpec::isConst(int id, int64_t *v) const {
  const Expr &e = exprs[id];
  if (e.kind != ExprKind::kConst) return false;
  if (e.type == ScalarType::kF32 || e.type == ScalarType::kF64) return false;
  if (v) *v = e.ival;
  return true;
}

int KernelSpec::unary(UnaryOp op, int a) {
  Expr e;
  e.kind = ExprKind::kUnary;
  e.op = static_cast<int>(op);
  e.operands = {a};
  switch (op) {
    case UnaryOp::kNot:
    case UnaryOp::kIsNaN:
    case UnaryOp::kIsPosInf:
    case UnaryOp::kIsNegInf:
      e.type = ScalarType::kBool;
      break;
    default:
      e.type = exprs[a].type;
  }
  return intern(std::move(e));
}

int KernelSpec::binary(BinaryOp op, int a, int b) {
  const ScalarType t = exprs[a].type;
  int64_t x = 0, y = 0;
  const bool ca = isConst(a, &x), cb = isConst(b, &y);
  const bool integral = t == ScalarType::kIdx || t == ScalarType::kI64;
  if (integral) {
    if (ca && cb) {
      switch (op) {
        case BinaryOp::kAdd: return constI(x + y, t);
        case BinaryOp::kSub: return constI(x - y, t);
        case BinaryOp::kMul: return constI(x * y, t);
        case BinaryOp::kDiv: if (y != 0) return constI(x / y, t); break;
        case BinaryOp::kMax: return constI(std::max(x, y), t);
        case BinaryOp::kMin: return constI(std::min(x, y), t);
        case BinaryOp::kLt: return constB(x < y);
        case BinaryOp::kLe: return constB(x <= y);
        case BinaryOp::kGt: return constB(x > y);
        case BinaryOp::kGe: return constB(x >= y);
        case BinaryOp::kEq: return constB(x == y);
        case BinaryOp::kNe: return constB(x != y);
        default: break;
      }
    }
    if (op == BinaryOp::kAdd && cb && y == 0) return a;
    if (op == BinaryOp::kAdd && ca && x == 0) return b;
    if (op == BinaryOp::kSub && cb && y == 0) return a;
    if (op == BinaryOp::kMul && cb && y == 1) return a;
    if (op == BinaryOp::kMul && ca && x == 1) return b;
    if (op == BinaryOp::kMul && ((cb && y == 0) || (ca && x == 0))) return constI(0, t);
    if (op == BinaryOp::kDiv && cb && y == 1) return a;
  }
  if (t == ScalarType::kBool && (ca || cb)) {
    const int64_t c = ca ? x : y;
    const int other = ca ? b : a;
    if (op == BinaryOp::kAnd) return c ? other : constB(false);
    if (op == BinaryOp::kOr) return c ? constB(true) : other;
  }
  Expr e;
  e.kind = ExprKind::kBinary;
  e.op = static_cast<int>(op);
  e.operands = {a, b};
  switch (op) {
    case BinaryOp::kEq: case BinaryOp::kNe: case BinaryOp::kLt: case BinaryOp::kLe:
    case BinaryOp::kGt: case BinaryOp::kGe: case BinaryOp::kAnd: case BinaryOp::kOr:
    case BinaryOp::kXor: case BinaryOp::kLtU: case BinaryOp::kLeU: case BinaryOp::kGtU:
    case BinaryOp::kGeU:
      e.type = ScalarType::kBool;
      break;
    default:
      e.type = t;
  }
  return intern(std::move(e));
}

int KernelSpec::select(int c, int a, int b) {
  int64_t v;
  if (isConst(c, &v)) return v ? a : b;
  if (a == b) return a;
  Expr e;
  e.kind = ExprKind::kSelect;
  e.type = exprs[a].type;
  e.operands = {c, a, b};
  return intern(std::move(e));
}

int KernelSpec::cast(int a, ScalarType t) {
  if (exprs[a].type == t) return a;
  int64_t v;
  if (isConst(a, &v) && (t == ScalarType::kIdx || t == ScalarType::kI64)) return constI(v, t);
  Expr e;
  e.kind = ExprKind::kCast;
  e.type = t;
  e.operands = {a};
  return intern(std::move(e));
}

int KernelSpec::castU64(int a, ScalarType t) {
  const ScalarType from = exprs[a].type;
  const bool f = from == ScalarType::kF32 || from == ScalarType::kF64;
  const bool tf = t == ScalarType::kF32 || t == ScalarType::kF64;
  if (f == tf) return cast(a, t);  // integer <-> integer keeps the bits
  Expr e;
  e.kind = ExprKind::kCast;
  e.type = t;
  e.ival = 1;
  e.operands = {a};
  return intern(std::move(e));
}

int KernelSpec::reduceResult(int reduction) {
  Expr e;
  e.kind = ExprKind::kReduceResult;
  e.type = reductions[reduction].type;
  e.ival = reduction;
  return intern(std::move(e));
}

int KernelSpec::addReduction(ReduceKind k, int body, bool selectLast) {
  Reduction r;
  r.kind = k;
  r.body = body;
  r.selectLastIndex = selectLast;
  r.type = (k == ReduceKind::kArgMax || k == ReduceKind::kArgMin) ? ScalarType::kI64
                                                                  : exprs[body].type;
  reductions.push_back(r);
  kind = SpecKind::kReduce;
  return static_cast<int>(reductions.size()) - 1;
}

void KernelSpec::addStore(int buffer, std::vector<int> idx, int value, int guard) {
  int64_t g;
  if (guard >= 0 && isConst(guard, &g) && g) guard = -1;
  Store s;
  s.buffer = buffer;
  s.index = std::move(idx);
  s.value = value;
  s.guard = guard;
  stores.push_back(std::move(s));
}

int KernelSpec::linearize(const std::vector<int> &idx, const std::vector<int64_t> &shape) {
  int flat = constI(0);
  for (size_t i = 0; i < shape.size(); ++i) {
    flat = binary(BinaryOp::kAdd, binary(BinaryOp::kMul, flat, constI(shape[i])), idx[i]);
  }
  return flat;
}

std::vector<int> KernelSpec::delinearize(int flat, const std::vector<int64_t> &shape) {
  std::vector<int> idx(shape.size());
  int64_t inner = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) {
      idx[i] = constI(0);
    } else {
      int q = binary(BinaryOp::kDiv, flat, constI(inner));
      // The outermost dim needs no modulo (flat < product of shape).
      idx[i] = i == 0 ? q : binary(BinaryOp::kMod, q, constI(shape[i]));
    }
    inner *= shape[i];
  }
  return idx;
}

int KernelSpec::numParallelDims() const {
  int n = 0;
  for (const LoopDim &d : dims) n += d.reduced ? 0 : 1;
  return n;
}

int64_t KernelSpec::parallelSize() const {
  int64_t n = 1;
  for (const LoopDim &d : dims)
    if (!d.reduced) n *= d.extent;
  return n;
}

int64_t KernelSpec::reducedSize() const {
  int64_t n = 1;
  for (const LoopDim &d : dims)
    if (d.reduced) n *= d.extent;
  return n;
}

std::vector<bool> KernelSpec::reducedDimDependence() const {
  // Operands (and guards) are interned before the expressions that use them.
  std::vector<bool> r(exprs.size(), false);
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr &e = exprs[i];
    bool d = e.kind == ExprKind::kIndex && dims[e.ival].reduced;
    for (int o : e.operands) d = d || r[o];
    if (e.guard >= 0) d = d || r[e.guard];
    r[i] = d;
  }
  return r;
}

bool KernelSpec::dependsOnReducedDim(int id) const { return reducedDimDependence()[id]; }

bool KernelSpec::dependsOnReduction(int id) const {
  std::vector<bool> r(id + 1, false);
  for (int i = 0; i <= id; ++i) {
    const Expr &e = exprs[i];
    bool d = e.kind == ExprKind::kReduceResult;
    for (int o : e.operands) d = d || r[o];
    if (e.guard >= 0) d = d || r[e.guard];
    r[i] = d;
  }
  return r[id];
}

namespace {

std::string exprText(const KernelSpec &s, int id) {
  const Expr &e = s.exprs[id];
  auto ref = [](int i) { return absl::StrCat("%", i); };
  std::string ops = absl::StrJoin(e.operands, ", ", [&](std::string *o, int i) { o->append(ref(i)); });
  std::string t = scalarTypeName(e.type);
  switch (e.kind) {
    case ExprKind::kConst:
      if (e.type == ScalarType::kF32 || e.type == ScalarType::kF64)
        return absl::StrFormat("const %s %.17g", t, e.fval);
      return absl::StrCat("const ", t, " ", e.ival);
    case ExprKind::kIndex:
      return absl::StrCat("index ", s.dims[e.ival].name);
    case ExprKind::kLoad:
      return absl::StrCat("load ", t, " b", e.ival, "[", ops, "]",
                          e.guard >= 0 ? absl::StrCat(" if ", ref(e.guard)) : "");
    case ExprKind::kUnary:
      return absl::StrCat(unaryOpName(static_cast<UnaryOp>(e.op)), " ", t, " ", ops);
    case ExprKind::kBinary:
      return absl::StrCat(binaryOpName(static_cast<BinaryOp>(e.op)), " ", t, " ", ops);
    case ExprKind::kSelect:
      return absl::StrCat("select ", t, " ", ops);
    case ExprKind::kCast:
      return absl::StrCat(e.ival ? "cast_u64 " : "cast ", t, " ", ops);
    case ExprKind::kReduceResult:
      return absl::StrCat("result ", t, " red", e.ival);
    case ExprKind::kSymbol:
      return absl::StrCat("symbol ", t, " ", s.symbolics.at(e.ival).str());
  }
  return "?";
}

}  // namespace

bool KernelSpec::hasSymbolicExtents() const {
  for (const LoopDim &d : dims)
    if (!d.symbolic.isConstant()) return true;
  for (const BufferDesc &b : buffers)
    for (const SymExtent &e : b.symbolicShape)
      if (!e.isConstant()) return true;
  for (const Expr &e : exprs)
    if (e.kind == ExprKind::kSymbol) return true;
  return !attention.symbolic.empty();
}

std::string printKernelSpec(const KernelSpec &spec) {
  // Symbolic extents print after the specialised integers ("= 96 (4*batch)");
  // a spec with static extents only prints as it always did.
  std::string out = absl::StrCat("kernel ", specKindName(spec.kind), "\n");
  for (const LoopDim &d : spec.dims)
    absl::StrAppend(&out, "  dim ", d.name, " = ", d.extent,
                    d.symbolic.isConstant() ? "" : absl::StrCat(" (", d.symbolic.str(), ")"),
                    d.reduced ? " reduced" : " parallel", "\n");
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    const BufferDesc &b = spec.buffers[i];
    bool symbolic = false;
    for (const SymExtent &e : b.symbolicShape) symbolic |= !e.isConstant();
    absl::StrAppend(&out, "  buffer b", i, " : ", ir::dtypeName(b.dtype), "[",
                    absl::StrJoin(b.shape, ","), "]",
                    symbolic ? absl::StrCat(" (", absl::StrJoin(b.symbolicShape, ",",
                                                                 [](std::string *o, const SymExtent &e) {
                                                                   o->append(e.str());
                                                                 }),
                                            ")")
                             : "",
                    b.written ? " out" : " in", "\n");
  }
  for (size_t i = 0; i < spec.exprs.size(); ++i)
    absl::StrAppend(&out, "  %", i, " = ", exprText(spec, static_cast<int>(i)), "\n");
  for (size_t i = 0; i < spec.reductions.size(); ++i) {
    const Reduction &r = spec.reductions[i];
    absl::StrAppend(&out, "  red", i, " = ", reduceKindName(r.kind), " ", scalarTypeName(r.type),
                    " %", r.body, r.selectLastIndex ? " last" : "", "\n");
  }
  for (const Store &st : spec.stores)
    absl::StrAppend(&out, "  store b", st.buffer, "[",
                    absl::StrJoin(st.index, ", ",
                                  [](std::string *o, int i) { absl::StrAppend(o, "%", i); }),
                    "] = %", st.value,
                    st.guard >= 0 ? absl::StrCat(" if %", st.guard) : "", "\n");
  if (spec.kind == SpecKind::kAttention) out += printAttentionSpec(spec.attention);
  return out;
}

std::string canonicalKey(const KernelSpec &spec) { return printKernelSpec(spec); }

}  // namespace fusec::program
