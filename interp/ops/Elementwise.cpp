//===- Elementwise.cpp - Reference functions: elementwise ops -------------===//
//
// Unary math, activations, Cast/Identity/Dropout/Clip, binary arithmetic,
// comparisons and logic, the variadic Max/Min/Sum/Mean and Where, following
// the newest ONNX opset of each op (https://onnx.ai/onnx/operators/). Binary
// and variadic ops use multidirectional broadcasting (interp/internal/
// Broadcast.h). Float dtypes compute in double and round once on store;
// integer and bool dtypes compute in int64 with two's complement wrapping.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "interp/internal/Broadcast.h"
#include "interp/internal/KernelUtil.h"
#include "interp/internal/Kernels.h"
#include "ir/QuantGeometry.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using ir::DType;
using ir::Tensor;
using Result = absl::StatusOr<std::vector<Tensor>>;
using FloatFn = std::function<double(double)>;
using IntFn = std::function<int64_t(int64_t)>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

size_t slot(ir::OpKind k) { return static_cast<size_t>(k); }

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

/// Applies \p ff to float inputs and \p fi (if given) to integer inputs. The
/// result has the input dtype unless \p outType is given (bool predicates).
Result mapUnary(const KernelArgs &args, const FloatFn &ff, const IntFn &fi,
                DType outType = DType::kUndefined) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  DType dt = x->dtype();
  bool isF = ir::isFloat(dt);
  if (!isF && !(fi && ir::isInteger(dt)))
    return invalidArg("input has dtype ", ir::dtypeName(dt), ", expected ",
                      fi ? "a numeric dtype" : "a float dtype");
  Tensor out(outType == DType::kUndefined ? dt : outType, x->shape());
  int64_t n = x->numElements();
  if (isF) {
    for (int64_t i = 0; i < n; ++i) out.setDouble(i, ff(x->getDouble(i)));
  } else {
    for (int64_t i = 0; i < n; ++i) out.setInt(i, fi(x->getInt(i)));
  }
  return std::vector<Tensor>{std::move(out)};
}

/// Registers a float-only unary op.
void unaryF(KernelTable &t, ir::OpKind k, FloatFn ff) {
  t[slot(k)] = [ff](const KernelArgs &a) { return mapUnary(a, ff, nullptr); };
}
/// Registers a unary op defined for floats and integers.
void unaryFI(KernelTable &t, ir::OpKind k, FloatFn ff, IntFn fi) {
  t[slot(k)] = [ff, fi](const KernelArgs &a) { return mapUnary(a, ff, fi); };
}

double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

double softplus(double x) {
  // log(1 + e^x) without overflow for large x.
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

double signOf(double x) {
  if (std::isnan(x)) return x;
  return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
}

Result gelu(const KernelArgs &args) {
  std::string approx = args.node.attrS("approximate");
  if (approx == "none")
    return mapUnary(args, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); },
                    nullptr);
  if (approx == "tanh") {
    const double c = std::sqrt(2.0 / kPi);
    return mapUnary(args,
                    [c](double x) {
                      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
                    },
                    nullptr);
  }
  return invalidArg("attribute approximate = '", approx, "' must be 'none' or 'tanh'");
}

Result logicalNot(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  if (x->dtype() != DType::kBool)
    return invalidArg("input has dtype ", ir::dtypeName(x->dtype()), ", expected bool");
  Tensor out(DType::kBool, x->shape());
  for (int64_t i = 0; i < x->numElements(); ++i) out.setInt(i, x->getInt(i) ? 0 : 1);
  return std::vector<Tensor>{std::move(out)};
}

Result isInf(const KernelArgs &args) {
  bool pos = args.node.attrI("detect_positive") != 0;
  bool neg = args.node.attrI("detect_negative") != 0;
  return mapUnary(args,
                  [pos, neg](double x) {
                    return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)) ? 1.0 : 0.0;
                  },
                  nullptr, DType::kBool);
}

/// Cast (opset 19+): converts to dtype 'to'. Float -> integer truncates toward
/// zero (out-of-range values saturate, NaN -> 0, as Tensor::setDouble does;
/// to i4 / u4 / i2 / u2 they give 0, as onnx.reference does); integer ->
/// integer wraps; anything -> bool is x != 0. To a float8 / float4 dtype:
/// round to nearest even, 'saturate' choosing the overflow rule and
/// 'round_mode' the rounding to f8e8m0 (ir::encodeNarrowFloat). Strings
/// unsupported.
Result cast(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  if (!args.node.hasAttr("to")) return invalidArg("missing required attribute 'to'");
  int64_t code = args.node.getInt("to", 0);
  std::optional<DType> to = ir::dtypeFromOnnx(static_cast<int32_t>(code));
  if (!to || *to == DType::kUndefined)
    return absl::UnimplementedError(absl::StrCat("Cast to ONNX dtype code ", code,
                                                 " is not supported"));
  if (*to == DType::kString || x->dtype() == DType::kString)
    return absl::UnimplementedError(absl::StrCat("Cast from ", ir::dtypeName(x->dtype()), " to ",
                                                 ir::dtypeName(*to),
                                                 ": string casts are not supported"));
  if (!isNumericOrBool(x->dtype()) && !ir::isNarrow(x->dtype()))
    return invalidArg("input has unsupported dtype ", ir::dtypeName(x->dtype()));
  Tensor out(*to, x->shape());
  int64_t n = x->numElements();
  if (ir::isNarrowFloat(*to)) {
    const bool saturate = args.node.attrI("saturate") != 0;
    const std::string mode = args.node.attrS("round_mode");
    ir::E8M0Rounding rounding = ir::E8M0Rounding::kUp;
    if (mode == "down") rounding = ir::E8M0Rounding::kDown;
    else if (mode == "nearest") rounding = ir::E8M0Rounding::kNearest;
    else if (mode != "up") return invalidArg("round_mode '", mode, "' must be 'up', 'down' or 'nearest'");
    for (int64_t i = 0; i < n; ++i)
      out.data()[i] = ir::encodeNarrowFloat(*to, x->getDouble(i), saturate, rounding);
  } else if (ir::isFloat(x->dtype()) || ir::isNarrowFloat(x->dtype()) ||
             (x->dtype() == DType::kU64 && ir::isFloat(*to))) {
    // (u64 -> float through getDouble: its i64 bits would read negative.)
    for (int64_t i = 0; i < n; ++i) out.setDouble(i, x->getDouble(i));
  } else {
    for (int64_t i = 0; i < n; ++i) out.setInt(i, x->getInt(i));
  }
  return std::vector<Tensor>{std::move(out)};
}

Result identity(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  return std::vector<Tensor>{*x};
}

/// Dropout (opset 13+), inference only: output = input, mask all true. With
/// training_mode true and a non-zero ratio the output is random: Unimplemented.
Result dropout(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  double ratio = 0.5;
  if (const Tensor *r = args.in(1)) {
    if (r->numElements() != 1) return invalidArg("ratio must be a scalar");
    ratio = r->getDouble(0);
  }
  bool training = false;
  if (const Tensor *t = args.in(2)) {
    if (t->numElements() != 1) return invalidArg("training_mode must be a scalar");
    training = t->getInt(0) != 0;
  }
  if (training && ratio != 0.0)
    return absl::UnimplementedError("Dropout with training_mode = true and ratio != 0 is random; "
                                    "the reference interpreter supports inference only");
  std::vector<Tensor> out{*x};
  if (args.node.numOutputs() > 1) {
    Tensor mask(DType::kBool, x->shape());
    for (int64_t i = 0; i < mask.numElements(); ++i) mask.setInt(i, 1);
    out.push_back(std::move(mask));
  }
  return out;
}

/// Clip (opset 13+): min(max(x, min), max); min / max are optional scalar
/// inputs of the dtype of x (absent = unbounded).
Result clip(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(requireNumber(*x, "input"));
  const Tensor *lo = args.in(1), *hi = args.in(2);
  for (const Tensor *b : {lo, hi}) {
    if (!b) continue;
    if (b->numElements() != 1)
      return invalidArg("min/max must be scalars, got shape ", shapeStr(b->shape()));
    if (b->dtype() != x->dtype())
      return invalidArg("min/max dtype ", ir::dtypeName(b->dtype()), " differs from input dtype ",
                        ir::dtypeName(x->dtype()));
  }
  Tensor out(x->dtype(), x->shape());
  int64_t n = x->numElements();
  if (ir::isFloat(x->dtype())) {
    double l = lo ? lo->getDouble(0) : -std::numeric_limits<double>::infinity();
    double h = hi ? hi->getDouble(0) : std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      double v = x->getDouble(i);
      if (!std::isnan(v)) v = std::min(std::max(v, l), h);
      out.setDouble(i, v);
    }
  } else {
    int64_t l = lo ? lo->getInt(0) : std::numeric_limits<int64_t>::min();
    int64_t h = hi ? hi->getInt(0) : std::numeric_limits<int64_t>::max();
    for (int64_t i = 0; i < n; ++i) out.setInt(i, std::min(std::max(x->getInt(i), l), h));
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

/// Broadcasts \p a and \p b and calls f(out, i, ia, ib) for each output
/// element i, where ia / ib are the element indices read from a / b.
template <typename F>
Result binaryLoop(const Tensor &a, const Tensor &b, DType outType, F f) {
  FUSEC_ASSIGN_OR_RETURN(ir::Shape shape, broadcastShapes({a.shape(), b.shape()}));
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(outType, shape, "broadcast result"));
  BroadcastIndexer ia(a.shape(), shape), ib(b.shape(), shape);
  Tensor out(outType, shape);
  int64_t n = out.numElements();
  for (int64_t i = 0; i < n; ++i) f(out, i, ia(i), ib(i));
  return std::vector<Tensor>{std::move(out)};
}

enum class Operands { kNumeric, kNumericOrBool, kBool };

/// Fetches inputs 0 and 1, checks they share a dtype of the allowed kind.
absl::Status binaryOperands(const KernelArgs &args, Operands kind, const Tensor **a,
                            const Tensor **b) {
  FUSEC_ASSIGN_OR_RETURN(*a, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(*b, requireInput(args, 1));
  DType ta = (*a)->dtype(), tb = (*b)->dtype();
  if (ta != tb)
    return invalidArg("inputs have different dtypes ", ir::dtypeName(ta), " and ",
                      ir::dtypeName(tb));
  bool ok = false;
  switch (kind) {
    case Operands::kNumeric: ok = ir::isFloat(ta) || ir::isInteger(ta); break;
    case Operands::kNumericOrBool: ok = isNumericOrBool(ta); break;
    case Operands::kBool: ok = ta == DType::kBool; break;
  }
  if (!ok) return invalidArg("inputs have unsupported dtype ", ir::dtypeName(ta));
  return absl::OkStatus();
}

using FloatBin = std::function<double(double, double)>;
using IntBin = std::function<int64_t(int64_t, int64_t)>;

/// Arithmetic with the dtype of the inputs (Add, Sub, Mul, Div, Mod).
Result arith(const KernelArgs &args, const FloatBin &ff, const IntBin &fi,
             bool intDivision = false) {
  const Tensor *a, *b;
  FUSEC_RETURN_IF_ERROR(binaryOperands(args, Operands::kNumeric, &a, &b));
  if (ir::isFloat(a->dtype()))
    return binaryLoop(*a, *b, a->dtype(), [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
      o.setDouble(i, ff(a->getDouble(x), b->getDouble(y)));
    });
  if (intDivision)
    for (int64_t i = 0; i < b->numElements(); ++i)
      if (b->getInt(i) == 0)
        return invalidArg("integer division by zero (divisor element ", i, ")");
  if (intDivision && a->dtype() == DType::kU64) {
    // u64 values are held as their i64 bits: divide and take the remainder
    // unsigned (Mod's sign rule is moot; both operands are non-negative).
    const bool isDiv = args.node.kind() == ir::OpKind::kDiv;
    return binaryLoop(*a, *b, a->dtype(), [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
      const uint64_t p = static_cast<uint64_t>(a->getInt(x)), q = static_cast<uint64_t>(b->getInt(y));
      o.setInt(i, static_cast<int64_t>(isDiv ? p / q : p % q));
    });
  }
  return binaryLoop(*a, *b, a->dtype(), [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
    o.setInt(i, fi(a->getInt(x), b->getInt(y)));
  });
}

/// u64 values are held as their i64 bits; flipping the top bit maps unsigned
/// order onto signed order (and back), for compares, Max and Min.
int64_t u64Order(int64_t bits) { return bits ^ std::numeric_limits<int64_t>::min(); }

/// Comparisons: bool result; ints compare exactly in int64.
Result compare(const KernelArgs &args, Operands kind, const std::function<bool(double, double)> &ff,
               const std::function<bool(int64_t, int64_t)> &fi) {
  const Tensor *a, *b;
  FUSEC_RETURN_IF_ERROR(binaryOperands(args, kind, &a, &b));
  if (ir::isFloat(a->dtype()))
    return binaryLoop(*a, *b, DType::kBool, [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
      o.setInt(i, ff(a->getDouble(x), b->getDouble(y)) ? 1 : 0);
    });
  const bool u64 = a->dtype() == DType::kU64;
  return binaryLoop(*a, *b, DType::kBool, [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
    const int64_t p = a->getInt(x), q = b->getInt(y);
    o.setInt(i, (u64 ? fi(u64Order(p), u64Order(q)) : fi(p, q)) ? 1 : 0);
  });
}

int64_t intDiv(int64_t a, int64_t b) {
  if (b == -1) return wrapNeg(a);  // INT64_MIN / -1 overflows in C++.
  return a / b;
}

int64_t intMod(int64_t a, int64_t b, bool cFmod) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (!cFmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double floatMod(double a, double b, bool cFmod) {
  double r = std::fmod(a, b);
  if (!cFmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

/// Integer power with wrapping; negative exponents give the truncated value
/// of the real result (0 unless |base| == 1).
int64_t intPow(int64_t base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e % 2 == 0) ? 1 : -1;
    return 0;
  }
  int64_t r = 1;
  while (e > 0) {
    if (e & 1) r = wrapMul(r, base);
    base = wrapMul(base, base);
    e >>= 1;
  }
  return r;
}

/// Pow (opset 15): base and exponent may have different numeric dtypes; the
/// result has the dtype of the base.
Result pow(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *a, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *b, requireInput(args, 1));
  FUSEC_RETURN_IF_ERROR(requireNumber(*a, "base"));
  FUSEC_RETURN_IF_ERROR(requireNumber(*b, "exponent"));
  if (ir::isInteger(a->dtype()) && ir::isInteger(b->dtype()))
    return binaryLoop(*a, *b, a->dtype(), [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
      o.setInt(i, intPow(a->getInt(x), b->getInt(y)));
    });
  return binaryLoop(*a, *b, a->dtype(), [&](Tensor &o, int64_t i, int64_t x, int64_t y) {
    o.setDouble(i, std::pow(a->getDouble(x), b->getDouble(y)));
  });
}

Result mod(const KernelArgs &args) {
  int64_t fmodAttr = args.node.attrI("fmod");
  if (fmodAttr != 0 && fmodAttr != 1) return invalidArg("attribute fmod = ", fmodAttr, " must be 0 or 1");
  bool cFmod = fmodAttr == 1;
  return arith(args, [cFmod](double a, double b) { return floatMod(a, b, cFmod); },
               [cFmod](int64_t a, int64_t b) { return intMod(a, b, cFmod); },
               /*intDivision=*/true);
}

/// PRelu: x < 0 ? slope * x : x, slope broadcast to x's shape
/// (unidirectional: the result has x's shape). Floats and integers.
Result prelu(const KernelArgs &args) {
  const Tensor *x, *slope;
  FUSEC_RETURN_IF_ERROR(binaryOperands(args, Operands::kNumeric, &x, &slope));
  FUSEC_ASSIGN_OR_RETURN(ir::Shape shape, broadcastShapes({x->shape(), slope->shape()}));
  if (shape != x->shape())
    return invalidArg("slope ", shapeStr(slope->shape()), " does not broadcast to x ",
                      shapeStr(x->shape()), " (unidirectional broadcasting)");
  if (ir::isFloat(x->dtype()))
    return binaryLoop(*x, *slope, x->dtype(), [&](Tensor &o, int64_t i, int64_t a, int64_t s) {
      const double v = x->getDouble(a);
      o.setDouble(i, v < 0 ? slope->getDouble(s) * v : v);
    });
  return binaryLoop(*x, *slope, x->dtype(), [&](Tensor &o, int64_t i, int64_t a, int64_t s) {
    const int64_t v = x->getInt(a);
    o.setInt(i, v < 0 ? wrapMul(slope->getInt(s), v) : v);
  });
}

/// BitShift (opset 11; signed types and out-of-range counts as opset 28):
/// x << y or x >> y per element with multidirectional broadcasting. A right
/// shift of a signed type is arithmetic; a count below 0 or at least the
/// width gives 0, or -1 for a right shift of a negative signed value.
Result bitShift(const KernelArgs &args) {
  const Tensor *x, *y;
  FUSEC_RETURN_IF_ERROR(binaryOperands(args, Operands::kNumeric, &x, &y));
  const DType dt = x->dtype();
  if (!ir::isInteger(dt)) return invalidArg("BitShift takes integers, got ", ir::dtypeName(dt));
  const std::string dir = args.node.getString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return invalidArg("direction must be LEFT or RIGHT, got '", dir, "'");
  const bool left = dir == "LEFT";
  const int64_t width = 8 * ir::dtypeSize(dt);
  const bool isSigned = dt == DType::kI8 || dt == DType::kI16 || dt == DType::kI32 || dt == DType::kI64;
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  return binaryLoop(*x, *y, dt, [&](Tensor &o, int64_t i, int64_t a, int64_t b) {
    const int64_t v = x->getInt(a), s = y->getInt(b);  // u64 counts >= 2^63 read negative: out of range
    const uint64_t u = static_cast<uint64_t>(v) & mask;
    int64_t r;
    if (s < 0 || s >= width) r = !left && isSigned && v < 0 ? -1 : 0;
    else if (left) r = static_cast<int64_t>(u << s);  // setInt wraps to the width
    else if (isSigned) r = v < 0 ? ~(~v >> s) : v >> s;  // arithmetic, without relying on >> of negatives
    else r = static_cast<int64_t>(u >> s);
    o.setInt(i, r);
  });
}

/// BitwiseAnd / BitwiseOr / BitwiseXor (opset 18): \p f per element with
/// multidirectional broadcasting, integers of one dtype. Two's complement
/// bits of the sign- or zero-extended values, so the result is in range.
Result bitwise(const KernelArgs &args, int64_t (*f)(int64_t, int64_t)) {
  const Tensor *x, *y;
  FUSEC_RETURN_IF_ERROR(binaryOperands(args, Operands::kNumeric, &x, &y));
  const DType dt = x->dtype();
  if (!ir::isInteger(dt))
    return invalidArg(ir::opInfo(args.node.kind()).name, " takes integers, got ", ir::dtypeName(dt));
  return binaryLoop(*x, *y, dt, [&](Tensor &o, int64_t i, int64_t a, int64_t b) {
    o.setInt(i, f(x->getInt(a), y->getInt(b)));
  });
}

/// BitwiseNot (opset 18): ~x within the dtype's width (setInt wraps).
Result bitwiseNot(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  if (!ir::isInteger(x->dtype()))
    return invalidArg("BitwiseNot takes integers, got ", ir::dtypeName(x->dtype()));
  Tensor out(x->dtype(), x->shape());
  for (int64_t i = 0; i < x->numElements(); ++i) out.setInt(i, ~x->getInt(i));
  return std::vector<Tensor>{std::move(out)};
}

/// The flat index of the scale / zero point element that x's element \p i
/// reads under geometry \p g (ir/QuantGeometry.h).
int64_t quantParamIndex(const ir::QuantGeometry &g, const ir::Shape &x, const ir::Shape &param, int64_t i) {
  if (g.mode == ir::QuantMode::kPerTensor) return 0;
  int64_t inner = 1;
  for (size_t d = g.axis + 1; d < x.size(); ++d) inner *= x[d];
  if (g.mode == ir::QuantMode::kPerAxis) return (i / inner) % x[g.axis];
  // Blocked: the same coordinates, the axis' divided by the block size.
  int64_t out = 0, stride = 1, rest = i;
  for (int64_t d = static_cast<int64_t>(x.size()) - 1; d >= 0; --d) {
    int64_t c = rest % x[d];
    rest /= x[d];
    if (d == g.axis) c /= g.blockSize;
    out += c * stride;
    stride *= param[d];
  }
  return out;
}

/// OK if \p t can be a quantisation scale: a float dtype or f8e8m0.
absl::Status requireScale(const Tensor &t) {
  if (t.dtype() == DType::kF8E8M0) return absl::OkStatus();
  return requireFloat(t, "scale");
}

/// Rounds \p v (an f32 or f64 result) to float dtype \p t as numpy stores
/// it: f16 / bf16 arithmetic is f32 arithmetic rounded once more.
double roundToFloat(double v, DType t) {
  switch (t) {
    case DType::kF64: return v;
    case DType::kF16: return ir::halfToFloat(ir::floatToHalf(static_cast<float>(v)));
    case DType::kBF16: return ir::bf16ToFloat(ir::floatToBf16(static_cast<float>(v)));
    default: return static_cast<float>(v);
  }
}

/// QuantizeLinear (opsets 10-25; onnx.reference): q = x / scale in x's float
/// dtype (or precision; f64 for an integer x), rounded half to even, plus
/// the zero point, saturated to the result dtype's range. To a float8 /
/// float4 dtype: q + zero point rounded to it (ir::encodeNarrowFloat, with
/// 'saturate').
Result quantizeLinear(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *scale, requireInput(args, 1));
  const Tensor *zp = args.in(2);
  FUSEC_RETURN_IF_ERROR(requireNumber(*x, "x"));
  FUSEC_RETURN_IF_ERROR(requireScale(*scale));
  FUSEC_ASSIGN_OR_RETURN(ir::QuantGeometry g, ir::quantGeometry(args.node, x->shape(), scale->shape()));
  if (zp && zp->numElements() != scale->numElements())
    return invalidArg("zero point ", shapeStr(zp->shape()), " and scale ", shapeStr(scale->shape()), " differ");
  FUSEC_ASSIGN_OR_RETURN(DType outDt, ir::quantizeResultDType(args.node, zp ? zp->dtype() : DType::kUndefined));
  FUSEC_ASSIGN_OR_RETURN(DType cdt, ir::quantizeComputeDType(args.node, x->dtype(), scale->dtype()));
  int64_t lo = 0, hi = 0;
  ir::quantRange(outDt, &lo, &hi);
  Tensor out(outDt, x->shape());
  const int64_t n = x->numElements();
  if (ir::isNarrowFloat(outDt)) {
    const bool saturate = args.node.attrI("saturate") != 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = quantParamIndex(g, x->shape(), scale->shape(), i);
      const double q = roundToFloat(roundToFloat(x->getDouble(i), cdt) / roundToFloat(scale->getDouble(p), cdt), cdt);
      const double y = zp ? roundToFloat(q + zp->getDouble(p), cdt) : q;
      out.data()[i] = ir::encodeNarrowFloat(outDt, y, saturate);
    }
    return std::vector<Tensor>{std::move(out)};
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = quantParamIndex(g, x->shape(), scale->shape(), i);
    const double q = roundToFloat(roundToFloat(x->getDouble(i), cdt) / roundToFloat(scale->getDouble(p), cdt), cdt);
    double r = std::nearbyint(q);
    if (std::isnan(r)) r = 0;
    r = std::min(std::max(r, -4.0e18), 4.0e18);
    int64_t v = static_cast<int64_t>(r) + (zp ? zp->getInt(p) : 0);
    out.setInt(i, std::min(std::max(v, lo), hi));
  }
  return std::vector<Tensor>{std::move(out)};
}

/// DequantizeLinear (opsets 10-25; onnx.reference): (f32(x) - f32(zero
/// point)) * scale in f32, rounded to the result dtype.
Result dequantizeLinear(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *scale, requireInput(args, 1));
  const Tensor *zp = args.in(2);
  int64_t lo, hi;
  const bool floatX = ir::isNarrowFloat(x->dtype()) && x->dtype() != DType::kF8E8M0;
  if (!ir::quantRange(x->dtype(), &lo, &hi) && !floatX)
    return invalidArg("x has dtype ", ir::dtypeName(x->dtype()),
                      ", expected u8, i8, u16, i16, i32, u32, i4, u4, i2, u2, float8 or f4e2m1");
  FUSEC_RETURN_IF_ERROR(requireScale(*scale));
  if (zp && zp->dtype() != x->dtype())
    return invalidArg("zero point has dtype ", ir::dtypeName(zp->dtype()), ", x ", ir::dtypeName(x->dtype()));
  if (zp && zp->numElements() != scale->numElements())
    return invalidArg("zero point ", shapeStr(zp->shape()), " and scale ", shapeStr(scale->shape()), " differ");
  FUSEC_ASSIGN_OR_RETURN(ir::QuantGeometry g, ir::quantGeometry(args.node, x->shape(), scale->shape()));
  FUSEC_ASSIGN_OR_RETURN(DType outDt, ir::dequantizeResultDType(args.node, scale->dtype()));
  Tensor out(outDt, x->shape());
  const int64_t n = x->numElements();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = quantParamIndex(g, x->shape(), scale->shape(), i);
    // (A float8 / float4 x and zero point decode exactly to f32.)
    const float dx = floatX ? static_cast<float>(x->getDouble(i)) - static_cast<float>(zp ? zp->getDouble(p) : 0.0)
                            : static_cast<float>(x->getInt(i)) - static_cast<float>(zp ? zp->getInt(p) : 0);
    // numpy: an f32 difference times an f64 scale is an f64 product.
    const double sc = scale->getDouble(p);
    out.setDouble(i, scale->dtype() == DType::kF64
                         ? static_cast<double>(dx) * sc
                         : static_cast<float>(static_cast<double>(dx) * static_cast<float>(sc)));
  }
  return std::vector<Tensor>{std::move(out)};
}

/// Where: cond ? x : y with three-way broadcasting; copies element bytes, so
/// every dtype (strings included) is supported exactly.
Result where(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *c, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 1));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *y, requireInput(args, 2));
  if (c->dtype() != DType::kBool)
    return invalidArg("condition has dtype ", ir::dtypeName(c->dtype()), ", expected bool");
  if (x->dtype() != y->dtype())
    return invalidArg("X and Y have different dtypes ", ir::dtypeName(x->dtype()), " and ",
                      ir::dtypeName(y->dtype()));
  FUSEC_ASSIGN_OR_RETURN(ir::Shape shape, broadcastShapes({c->shape(), x->shape(), y->shape()}));
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(x->dtype(), shape, "broadcast result"));
  BroadcastIndexer ic(c->shape(), shape), ix(x->shape(), shape), iy(y->shape(), shape);
  Tensor out(x->dtype(), shape);
  int64_t n = out.numElements();
  int64_t size = ir::dtypeSize(x->dtype());
  for (int64_t i = 0; i < n; ++i) {
    bool pick = c->getInt(ic(i)) != 0;
    const Tensor &src = pick ? *x : *y;
    int64_t j = pick ? ix(i) : iy(i);
    if (x->dtype() == DType::kString)
      out.strings()[i] = src.strings()[j];
    else
      std::memcpy(out.data() + i * size, src.data() + j * size, size);
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// Variadic ops
//===----------------------------------------------------------------------===//

/// Max / Min / Sum / Mean over all inputs (at least one), broadcast together.
Result variadic(const KernelArgs &args, const FloatBin &ff, const IntBin &fi, bool mean) {
  size_t n = args.inputs.size();
  if (n == 0) return invalidArg("needs at least one input");
  std::vector<ir::Shape> shapes;
  for (size_t k = 0; k < n; ++k) {
    FUSEC_ASSIGN_OR_RETURN(const Tensor *t, requireInput(args, k));
    FUSEC_RETURN_IF_ERROR(requireNumber(*t, "input"));
    if (t->dtype() != args.inputs[0]->dtype())
      return invalidArg("input ", k, " has dtype ", ir::dtypeName(t->dtype()), ", input 0 has ",
                        ir::dtypeName(args.inputs[0]->dtype()));
    shapes.push_back(t->shape());
  }
  FUSEC_ASSIGN_OR_RETURN(ir::Shape shape, broadcastShapes(shapes));
  std::vector<BroadcastIndexer> idx;
  for (const ir::Shape &s : shapes) idx.emplace_back(s, shape);
  DType dt = args.inputs[0]->dtype();
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(dt, shape, "broadcast result"));
  Tensor out(dt, shape);
  int64_t count = out.numElements();
  const auto &in = args.inputs;
  if (ir::isFloat(dt)) {
    for (int64_t i = 0; i < count; ++i) {
      double acc = in[0]->getDouble(idx[0](i));
      for (size_t k = 1; k < n; ++k) acc = ff(acc, in[k]->getDouble(idx[k](i)));
      out.setDouble(i, mean ? acc / static_cast<double>(n) : acc);
    }
  } else {
    // u64: Max / Min in unsigned order (u64Order maps it onto signed order
    // and back); Sum and Mean wrap as u64 does (the ring operations agree)
    // and Mean divides unsigned.
    const bool u64 = dt == DType::kU64;
    const bool ordered = u64 && (args.node.kind() == ir::OpKind::kMax || args.node.kind() == ir::OpKind::kMin);
    auto key = [ordered](int64_t v) { return ordered ? u64Order(v) : v; };
    for (int64_t i = 0; i < count; ++i) {
      int64_t acc = key(in[0]->getInt(idx[0](i)));
      for (size_t k = 1; k < n; ++k) acc = fi(acc, key(in[k]->getInt(idx[k](i))));
      acc = key(acc);
      if (mean)
        acc = u64 ? static_cast<int64_t>(static_cast<uint64_t>(acc) / n) : acc / static_cast<int64_t>(n);
      out.setInt(i, acc);
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// numpy maximum / minimum: NaN propagates.
double maxF(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? kNaN : std::max(a, b); }
double minF(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? kNaN : std::min(a, b); }

}  // namespace

void registerElementwiseKernels(KernelTable &t) {
  using K = ir::OpKind;
  // Unary math.
  unaryFI(t, K::kAbs, [](double x) { return std::fabs(x); },
          [](int64_t x) { return x < 0 ? wrapNeg(x) : x; });
  unaryFI(t, K::kNeg, [](double x) { return -x; }, wrapNeg);
  unaryF(t, K::kExp, [](double x) { return std::exp(x); });
  unaryF(t, K::kLog, [](double x) { return std::log(x); });
  unaryF(t, K::kSqrt, [](double x) { return std::sqrt(x); });
  unaryF(t, K::kReciprocal, [](double x) { return 1.0 / x; });
  unaryF(t, K::kErf, [](double x) { return std::erf(x); });
  unaryF(t, K::kTanh, [](double x) { return std::tanh(x); });
  unaryF(t, K::kSigmoid, sigmoid);
  unaryFI(t, K::kRelu, [](double x) { return x < 0 ? 0.0 : x; },
          [](int64_t x) { return x < 0 ? int64_t{0} : x; });
  t[slot(K::kLeakyRelu)] = [](const KernelArgs &a) {
    double alpha = a.node.attrF("alpha");
    return mapUnary(a, [alpha](double x) { return x < 0 ? alpha * x : x; }, nullptr);
  };
  t[slot(K::kElu)] = [](const KernelArgs &a) {
    double alpha = a.node.attrF("alpha");
    return mapUnary(a, [alpha](double x) { return x < 0 ? alpha * (std::exp(x) - 1.0) : x; },
                    nullptr);
  };
  t[slot(K::kHardSigmoid)] = [](const KernelArgs &a) {
    double alpha = a.node.attrF("alpha");
    double beta = a.node.attrF("beta");
    return mapUnary(
        a, [alpha, beta](double x) { return std::max(0.0, std::min(1.0, alpha * x + beta)); },
        nullptr);
  };
  t[slot(K::kSwish)] = [](const KernelArgs &a) {
    double alpha = a.node.attrF("alpha");
    return mapUnary(a, [alpha](double x) { return x * sigmoid(alpha * x); }, nullptr);
  };
  unaryF(t, K::kSoftplus, softplus);
  t[slot(K::kGelu)] = gelu;
  unaryF(t, K::kSin, [](double x) { return std::sin(x); });
  unaryF(t, K::kCos, [](double x) { return std::cos(x); });
  unaryF(t, K::kTan, [](double x) { return std::tan(x); });
  unaryF(t, K::kAsin, [](double x) { return std::asin(x); });
  unaryF(t, K::kAcos, [](double x) { return std::acos(x); });
  unaryF(t, K::kAtan, [](double x) { return std::atan(x); });
  unaryF(t, K::kSinh, [](double x) { return std::sinh(x); });
  unaryF(t, K::kCosh, [](double x) { return std::cosh(x); });
  unaryF(t, K::kAsinh, [](double x) { return std::asinh(x); });
  unaryF(t, K::kAcosh, [](double x) { return std::acosh(x); });
  unaryF(t, K::kAtanh, [](double x) { return std::atanh(x); });
  unaryF(t, K::kFloor, [](double x) { return std::floor(x); });
  unaryF(t, K::kCeil, [](double x) { return std::ceil(x); });
  // nearbyint rounds half to even in the default rounding mode.
  unaryF(t, K::kRound, [](double x) { return std::nearbyint(x); });
  unaryFI(t, K::kSign, signOf, [](int64_t x) { return int64_t{x > 0 ? 1 : (x < 0 ? -1 : 0)}; });
  t[slot(K::kNot)] = logicalNot;
  t[slot(K::kIsNaN)] = [](const KernelArgs &a) {
    return mapUnary(a, [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, nullptr, DType::kBool);
  };
  t[slot(K::kIsInf)] = isInf;
  t[slot(K::kCast)] = cast;
  t[slot(K::kIdentity)] = identity;
  t[slot(K::kDropout)] = dropout;
  t[slot(K::kClip)] = clip;

  // Binary arithmetic.
  t[slot(K::kAdd)] = [](const KernelArgs &a) {
    return arith(a, [](double x, double y) { return x + y; }, wrapAdd);
  };
  t[slot(K::kSub)] = [](const KernelArgs &a) {
    return arith(a, [](double x, double y) { return x - y; }, wrapSub);
  };
  t[slot(K::kMul)] = [](const KernelArgs &a) {
    return arith(a, [](double x, double y) { return x * y; }, wrapMul);
  };
  t[slot(K::kDiv)] = [](const KernelArgs &a) {
    return arith(a, [](double x, double y) { return x / y; }, intDiv, /*intDivision=*/true);
  };
  t[slot(K::kPow)] = pow;
  t[slot(K::kMod)] = mod;

  // Variadic.
  t[slot(K::kMax)] = [](const KernelArgs &a) {
    return variadic(a, maxF, [](int64_t x, int64_t y) { return std::max(x, y); }, false);
  };
  t[slot(K::kMin)] = [](const KernelArgs &a) {
    return variadic(a, minF, [](int64_t x, int64_t y) { return std::min(x, y); }, false);
  };
  t[slot(K::kSum)] = [](const KernelArgs &a) {
    return variadic(a, [](double x, double y) { return x + y; }, wrapAdd, false);
  };
  t[slot(K::kMean)] = [](const KernelArgs &a) {
    return variadic(a, [](double x, double y) { return x + y; }, wrapAdd, true);
  };

  // Comparisons and logic.
  t[slot(K::kEqual)] = [](const KernelArgs &a) {
    return compare(a, Operands::kNumericOrBool, [](double x, double y) { return x == y; },
                   [](int64_t x, int64_t y) { return x == y; });
  };
  t[slot(K::kLess)] = [](const KernelArgs &a) {
    return compare(a, Operands::kNumeric, [](double x, double y) { return x < y; },
                   [](int64_t x, int64_t y) { return x < y; });
  };
  t[slot(K::kLessOrEqual)] = [](const KernelArgs &a) {
    return compare(a, Operands::kNumeric, [](double x, double y) { return x <= y; },
                   [](int64_t x, int64_t y) { return x <= y; });
  };
  t[slot(K::kGreater)] = [](const KernelArgs &a) {
    return compare(a, Operands::kNumeric, [](double x, double y) { return x > y; },
                   [](int64_t x, int64_t y) { return x > y; });
  };
  t[slot(K::kGreaterOrEqual)] = [](const KernelArgs &a) {
    return compare(a, Operands::kNumeric, [](double x, double y) { return x >= y; },
                   [](int64_t x, int64_t y) { return x >= y; });
  };
  t[slot(K::kAnd)] = [](const KernelArgs &a) {
    return compare(a, Operands::kBool, nullptr, [](int64_t x, int64_t y) { return x && y; });
  };
  t[slot(K::kOr)] = [](const KernelArgs &a) {
    return compare(a, Operands::kBool, nullptr, [](int64_t x, int64_t y) { return x || y; });
  };
  t[slot(K::kXor)] = [](const KernelArgs &a) {
    return compare(a, Operands::kBool, nullptr,
                   [](int64_t x, int64_t y) { return (x != 0) != (y != 0); });
  };
  t[slot(K::kWhere)] = where;
  t[slot(K::kPRelu)] = prelu;
  t[slot(K::kBitShift)] = bitShift;
  t[slot(K::kBitwiseAnd)] = [](const KernelArgs &a) { return bitwise(a, [](int64_t x, int64_t y) { return x & y; }); };
  t[slot(K::kBitwiseOr)] = [](const KernelArgs &a) { return bitwise(a, [](int64_t x, int64_t y) { return x | y; }); };
  t[slot(K::kBitwiseXor)] = [](const KernelArgs &a) { return bitwise(a, [](int64_t x, int64_t y) { return x ^ y; }); };
  t[slot(K::kBitwiseNot)] = bitwiseNot;
  t[slot(K::kQuantizeLinear)] = quantizeLinear;
  t[slot(K::kDequantizeLinear)] = dequantizeLinear;
}

}  // namespace fusec::interp
