//===- CpuMath.cpp - Vector math emitted as LLVM IR -----------------------===//
//
// f32: exp, log, tanh, erf, sigmoid, log1p and pow are polynomials written
// here as IR on whole vectors (no libm call, so they stay vectorised):
// Polynomials and the reductions are chains of llvm.fmuladd (FMA where the
// CPU has it).
//   exp:  Cody-Waite reduction x = k ln2 + r (ln2 split in two), degree-6
//         polynomial of e^r on |r| <= ln2/2 fitted here (see F::exp; within
//         1.5 ulp), 2^k applied by VSCALEFPS with AVX-512, else as two
//         exponent-field scalings, so that denormal and overflowing results
//         come out right.
//   log:  x = 2^e m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
//         s = (m-1)/(m+1), odd series to s^11 (|s| <= 0.172).
//   tanh: Taylor series to x^15 for |x| < 0.55, else 1 - 2/(e^{2|x|}+1).
//   erf:  x N(x^2) / D(x^2), degree 5 over 5, fitted here on |x| <= 3.925
//         (clamped outside; |error| <= 3e-7 in f32, see F::erf).
//   erf GELU: 0.5 x (1 + erf(x / sqrt 2)) as h + h q, q the same rational
//         form fitted for erf(x / sqrt 2) (see F::geluErf).
//   log1p: log(u) - ((u-1)-x)/u with u = 1+x (Goldberg's correction).
//   pow:  exp(b log|a|), the sign of a for integral b, NaN for a < 0 and
//         non-integral b, pow(a, 0) = 1.
// sin and cos (f32) and every f64 function call libm lane by lane.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/cpu/CpuIr.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/IR/IntrinsicsX86.h"
#pragma GCC diagnostic pop

namespace fusec::codegen::cpu {

using program::UnaryOp;

namespace {

int widthOf(llvm::Value *v) { return llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements(); }

/// Calls libm's \p name (one or two operands of \p et) lane by lane.
llvm::Value *libmLanes(CpuModuleBuilder::Impl &I, const char *name, llvm::Value *a, llvm::Value *b = nullptr) {
  auto &B = I.B;
  llvm::Type *et = a->getType()->getScalarType();
  std::vector<llvm::Type *> params(b ? 2 : 1, et);
  llvm::FunctionCallee f = I.mod->getOrInsertFunction(name, llvm::FunctionType::get(et, params, false));
  if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotThrow();
    fn->setOnlyAccessesInaccessibleMemory();
  }
  llvm::Value *out = llvm::UndefValue::get(a->getType());
  for (int l = 0; l < widthOf(a); ++l) {
    std::vector<llvm::Value *> args = {B.CreateExtractElement(a, uint64_t(l))};
    if (b) args.push_back(B.CreateExtractElement(b, uint64_t(l)));
    out = B.CreateInsertElement(out, B.CreateCall(f, args), uint64_t(l));
  }
  return out;
}

struct F {
  CpuModuleBuilder::Impl &I;
  int w;
  llvm::Value *c(double v) { return splatF(I, I.f32, w, v); }
  llvm::Value *ci(int64_t v) { return splatI(I, I.i32, w, v); }
  llvm::Value *add(llvm::Value *a, llvm::Value *b) { return I.B.CreateFAdd(a, b); }
  llvm::Value *sub(llvm::Value *a, llvm::Value *b) { return I.B.CreateFSub(a, b); }
  llvm::Value *mul(llvm::Value *a, llvm::Value *b) { return I.B.CreateFMul(a, b); }
  /// a * b + c, fused where the CPU has FMA (llvm.fmuladd): one rounding
  /// and one instruction instead of two.
  llvm::Value *fma(llvm::Value *a, llvm::Value *b, llvm::Value *c) {
    return I.B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
  }
  llvm::Value *div(llvm::Value *a, llvm::Value *b) { return I.B.CreateFDiv(a, b); }
  llvm::Value *sel(llvm::Value *m, llvm::Value *a, llvm::Value *b) { return I.B.CreateSelect(m, a, b); }
  /// Horner: coefs[0] + x*(coefs[1] + x*(...)), one fmuladd a step.
  llvm::Value *poly(llvm::Value *x, std::initializer_list<double> coefs) {
    std::vector<double> cs(coefs);
    llvm::Value *r = c(cs.back());
    for (size_t i = cs.size() - 1; i-- > 0;) r = fma(x, r, c(cs[i]));
    return r;
  }
  llvm::Value *abs(llvm::Value *x) { return I.B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  llvm::Value *copysign(llvm::Value *m, llvm::Value *s) {
    return I.B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, m, s);
  }
  llvm::Value *isnan(llvm::Value *x) { return I.B.CreateFCmpUNO(x, x); }

  /// Whether 2^k scaling can be one AVX-512 VSCALEFPS (16 f32 lanes and
  /// the target has avx512f).
  bool hasScalef() const {
    return w == 16 && I.target.x86 && I.target.hasFeature("avx512f");
  }

  /// e^x: x clamped to [-104, 88.8] (e^x is 0 or inf in f32 beyond), k =
  /// rint(x log2 e), r = x - k ln 2 in two FMAs (Cody-Waite, ln 2 split in
  /// two), e^r on |r| <= ln2/2 by a degree-6 polynomial with c0 = 1 (the
  /// fitted c1 rounds to 1) fitted for this file by scripts/fit_cpu_math.py
  /// (relative error, Lawson-reweighted least squares in f64, rounded to
  /// f32; relative error 2.1e-9 in exact arithmetic, the whole exp within
  /// 1.5 half-ulps in f32 for normal results),
  /// then p 2^k: with AVX-512 one VSCALEFPS (exact scaling with one
  /// rounding, so subnormal and overflowing results come out right),
  /// otherwise two exponent-field multiplies 2^(k/2) 2^(k - k/2) (each
  /// factor a normal float). NaN stays NaN.
  llvm::Value *exp(llvm::Value *x) {
    auto &B = I.B;
    // The clamps compare the constant first, so that a NaN x fails the
    // compare and is selected: min(88.8, x) and max(-104, x) propagate NaN
    // (one VMINPS / VMAXPS each on x86, no NaN test and blend), and a NaN
    // flows through k, r, p and the scaling to the result.
    llvm::Value *xc = sel(B.CreateFCmpOLT(c(88.8), x), c(88.8), x);
    xc = sel(B.CreateFCmpOGT(c(-104.0), xc), c(-104.0), xc);
    // k = rint(x log2 e) by the round-to-nearest-even shifter 1.5 * 2^23
    // (|x log2 e| <= 151, so the sum's ulp is 1): an FMA and a subtract
    // instead of a multiply and a rounding instruction.
    constexpr double kShifter = 12582912.0;
    llvm::Value *k = sub(fma(xc, c(1.44269504088896341), c(kShifter)), c(kShifter));
    llvm::Value *r = fma(k, c(-0.693359375), xc);
    r = fma(k, c(2.12194440054690583e-4), r);
    llvm::Value *p = poly(r, {1.0, 1.0, 0.4999999403953552, 0.1666642129421234, 0.041668057441711426,
                              0.008374965749680996, 0.0013842710759490728});
    llvm::Value *res;
    if (hasScalef()) {
      // VSCALEFPS p, k: p * 2^floor(k) (k is integral), all lanes, current rounding (4).
      llvm::Function *f = llvm::Intrinsic::getDeclaration(I.mod.get(), llvm::Intrinsic::x86_avx512_mask_scalef_ps_512);
      res = B.CreateCall(f, {p, k, llvm::UndefValue::get(p->getType()), B.getInt16(0xffff), B.getInt32(4)});
    } else {
      llvm::Type *vi = llvm::FixedVectorType::get(I.i32, w);
      llvm::Value *ki = B.CreateFreeze(B.CreateFPToSI(k, vi));
      llvm::Value *k1 = B.CreateAShr(ki, ci(1));
      llvm::Value *k2 = B.CreateSub(ki, k1);
      auto scale = [&](llvm::Value *e) {
        return B.CreateBitCast(B.CreateShl(B.CreateAdd(e, ci(127)), ci(23)), llvm::FixedVectorType::get(I.f32, w));
      };
      res = mul(mul(p, scale(k1)), scale(k2));
    }
    return res;
  }

  llvm::Value *log(llvm::Value *x) {
    auto &B = I.B;
    llvm::Type *vi = llvm::FixedVectorType::get(I.i32, w);
    llvm::Value *small = B.CreateFCmpOLT(x, c(1.17549435e-38));
    llvm::Value *xs = sel(small, mul(x, c(8388608.0)), x);
    llvm::Value *bits = B.CreateBitCast(xs, vi);
    llvm::Value *e = B.CreateSub(B.CreateAnd(B.CreateLShr(bits, ci(23)), ci(0xff)), ci(127));
    e = B.CreateSub(e, sel(small, ci(23), ci(0)));
    llvm::Value *m = B.CreateBitCast(B.CreateOr(B.CreateAnd(bits, ci(0x7fffff)), ci(0x3f800000)),
                                     llvm::FixedVectorType::get(I.f32, w));
    llvm::Value *big = B.CreateFCmpOGT(m, c(1.41421356237309505));
    m = sel(big, mul(m, c(0.5)), m);
    e = sel(big, B.CreateAdd(e, ci(1)), e);
    llvm::Value *f = sub(m, c(1.0));
    llvm::Value *s = div(f, add(c(2.0), f));
    llvm::Value *s2 = mul(s, s);
    llvm::Value *tail = mul(s2, poly(s2, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11}));
    llvm::Value *logm = add(mul(c(2.0), s), mul(s, tail));
    llvm::Value *ef = B.CreateSIToFP(e, llvm::FixedVectorType::get(I.f32, w));
    llvm::Value *res = add(mul(ef, c(0.693359375)), add(logm, mul(ef, c(-2.12194440054690583e-4))));
    const double inf = std::numeric_limits<double>::infinity();
    res = sel(B.CreateFCmpOEQ(x, c(inf)), c(inf), res);
    res = sel(B.CreateOr(B.CreateFCmpOLT(x, c(0.0)), isnan(x)), c(std::nan("")), res);
    return sel(B.CreateFCmpOEQ(x, c(0.0)), c(-inf), res);
  }

  llvm::Value *tanh(llvm::Value *x) {
    auto &B = I.B;
    llvm::Value *ax = abs(x);
    llvm::Value *e = exp(mul(c(2.0), ax));
    llvm::Value *big = copysign(sub(c(1.0), div(c(2.0), add(e, c(1.0)))), x);
    llvm::Value *x2 = mul(x, x);
    llvm::Value *small = add(x, mul(mul(x, x2), poly(x2, {-1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835,
                                                          -1382.0 / 155925, 21844.0 / 6081075,
                                                          -929569.0 / 638512875})));
    // tanh is odd: the small branch keeps x's sign, -0 included (x + x^3 p
    // rounds -0 + +0 to +0; red team, stop 33).
    return sel(B.CreateFCmpOLT(ax, c(0.55)), copysign(small, x), big);
  }

  /// erf(x) = x N(x^2) / D(x^2) on |x| <= 3.925 (clamped outside, where
  /// erf rounds to +-1 in f32), N and D of degree 5, the quotient clamped to
  /// [-1, 1]. The coefficients were fitted for this file by
  /// scripts/fit_cpu_math.py (iterated weighted least squares on the
  /// relative error, Sanathanan-Koerner then Lawson reweighting, in f64,
  /// then rounded to f32): relative error 1.9e-8 in
  /// exact arithmetic; evaluated in f32 with FMA, max |error| 3.0e-7 over
  /// [-4.5, 4.5] (at x ~ 3.6, where erf is within 4e-7 of 1) and relative
  /// error 3.0e-7 everywhere else, subnormal x included (erf(x) = 1.128 x
  /// there). One branch, no exp: 10 FMAs, a divide and 6 other operations
  /// (the former Taylor series + Abramowitz-Stegun 7.1.26 pair evaluated
  /// both branches and an exp). NaN stays NaN (the clamps keep it), +-inf
  /// gives +-1.
  llvm::Value *erf(llvm::Value *x) {
    auto &B = I.B;
    constexpr double kMax = 3.925;
    // Clamp with compares that are false for NaN, so NaN passes through.
    llvm::Value *xc = sel(B.CreateFCmpOGT(x, c(kMax)), c(kMax), x);
    xc = sel(B.CreateFCmpOLT(xc, c(-kMax)), c(-kMax), xc);
    llvm::Value *s = mul(xc, xc);
    llvm::Value *n = poly(s, {1.1283791065216064, 0.19059206545352936, 0.05276907980442047, 0.0037724778521806,
                              0.0002848419244401157, 2.046041117864661e-06});
    llvm::Value *d = poly(s, {1.0, 0.5022405385971069, 0.11418202519416809, 0.014983055181801319,
                              0.0011638401774689555, 3.804783045779914e-05});
    llvm::Value *q = div(mul(xc, n), d);
    q = sel(B.CreateFCmpOGT(q, c(1.0)), c(1.0), q);
    return sel(B.CreateFCmpOLT(q, c(-1.0)), c(-1.0), q);
  }

  /// The erf GELU 0.5 x (1 + erf(x / sqrt 2)) as h + h q (one FMA), h =
  /// x / 2, q = u N(u^2) / D(u^2) ~ erf(u / sqrt 2) with u = x clamped to
  /// [-5.55, 5.55] (3.925 sqrt 2, where erf is +-1 in f32): erf's rational
  /// form fitted in the scaled variable (scripts/fit_cpu_math.py gelu;
  /// relative error of q 1.9e-8 in exact arithmetic), so the multiply by
  /// 1/sqrt 2, the add of 1 and the clamps of the quotient disappear
  /// (|q| may exceed 1 by a few ulps: h + h q then differs from x by about
  /// 1e-7 |x|; below -5.55 the result is x * 0). In f32 with FMA within
  /// 8.6e-7 of the exact GELU for x <= 0 (the worst near -5.3, where 1 + q
  /// cancels), relative 2.0e-7 for x >= 0 (CpuRun.GeluErfMatchesLibm).
  /// NaN stays NaN; +inf gives +inf and -inf NaN, as the unfused form.
  llvm::Value *geluErf(llvm::Value *x) {
    auto &B = I.B;
    constexpr double kMax = 5.55;
    llvm::Value *u = sel(B.CreateFCmpOGT(x, c(kMax)), c(kMax), x);
    u = sel(B.CreateFCmpOLT(u, c(-kMax)), c(-kMax), u);
    llvm::Value *s = mul(u, u);
    llvm::Value *n = poly(s, {0.7978845238685608, 0.06737705320119858, 0.009327935054898262, 0.00033337436616420746,
                              1.2588538993441034e-05, 4.5221543842899337e-08});
    llvm::Value *d = poly(s, {1.0, 0.2511109709739685, 0.028543444350361824, 0.0018726858543232083,
                              7.273072696989402e-05, 1.1891474969161209e-06});
    llvm::Value *q = div(mul(u, n), d);
    llvm::Value *h = mul(x, c(0.5));
    // Below -5.55, q(-5.55) = -1 + 6e-8 would leave h + h q = -3e-8 x, which
    // grows without bound (red team, stop 32); the GELU there is below 1e-7
    // in magnitude: x * 0 (-0, as the unfused form; NaN for -inf).
    return sel(B.CreateFCmpOLT(x, c(-kMax)), mul(x, c(0.0)), fma(h, q, h));
  }

  llvm::Value *log1p(llvm::Value *x) {
    auto &B = I.B;
    llvm::Value *u = add(c(1.0), x);
    llvm::Value *lu = log(u);
    llvm::Value *res = sub(lu, div(sub(sub(u, c(1.0)), x), u));
    const double inf = std::numeric_limits<double>::infinity();
    llvm::Value *edge = B.CreateOr(B.CreateFCmpOEQ(u, c(0.0)), B.CreateFCmpOEQ(abs(u), c(inf)));
    res = sel(edge, lu, res);
    return sel(B.CreateFCmpOEQ(u, c(1.0)), x, res);
  }

  llvm::Value *pow(llvm::Value *a, llvm::Value *b) {
    auto &B = I.B;
    llvm::Value *r = exp(mul(b, log(abs(a))));
    llvm::Value *bi = B.CreateFCmpOEQ(B.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b), b);
    llvm::Value *h = mul(b, c(0.5));
    llvm::Value *odd = B.CreateAnd(bi, B.CreateFCmpUNE(B.CreateUnaryIntrinsic(llvm::Intrinsic::rint, h), h));
    llvm::Value *neg = B.CreateFCmpOLT(a, c(0.0));
    // -0.0 keeps its sign under an odd integral exponent (IEEE pow:
    // pow(-0, -1) = -inf, pow(-0, 3) = -0).
    llvm::Type *it = llvm::FixedVectorType::get(I.i32, widthOf(a));  // f32 lanes (f64 goes to libm)
    llvm::Value *negZero = B.CreateAnd(B.CreateFCmpOEQ(a, c(0.0)),
                                       B.CreateICmpSLT(B.CreateBitCast(a, it), llvm::Constant::getNullValue(it)));
    r = sel(neg, sel(bi, sel(odd, B.CreateFNeg(r), r), c(std::nan(""))),
            sel(B.CreateAnd(negZero, odd), B.CreateFNeg(r), r));
    return sel(B.CreateOr(B.CreateFCmpOEQ(b, c(0.0)), B.CreateFCmpOEQ(a, c(1.0))), c(1.0), r);
  }
};

}  // namespace

bool isMathUnary(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp: case UnaryOp::kLog: case UnaryOp::kTanh: case UnaryOp::kErf: case UnaryOp::kSigmoid:
    case UnaryOp::kSin: case UnaryOp::kCos: case UnaryOp::kLog1p:
    case UnaryOp::kTan: case UnaryOp::kAsin: case UnaryOp::kAcos: case UnaryOp::kAtan: case UnaryOp::kSinh:
    case UnaryOp::kCosh: case UnaryOp::kAsinh: case UnaryOp::kAcosh: case UnaryOp::kAtanh:
      return true;
    default: return false;
  }
}

llvm::Value *mathUnary(CpuModuleBuilder::Impl &I, UnaryOp op, llvm::Value *x) {
  auto &B = I.B;
  const bool f64 = x->getType()->getScalarType()->isDoubleTy();
  if (f64) {
    const int w = widthOf(x);
    switch (op) {
      case UnaryOp::kExp: return libmLanes(I, "exp", x);
      case UnaryOp::kLog: return libmLanes(I, "log", x);
      case UnaryOp::kTanh: return libmLanes(I, "tanh", x);
      case UnaryOp::kErf: return libmLanes(I, "erf", x);
      case UnaryOp::kSin: return libmLanes(I, "sin", x);
      case UnaryOp::kCos: return libmLanes(I, "cos", x);
      case UnaryOp::kLog1p: return libmLanes(I, "log1p", x);
      case UnaryOp::kTan: return libmLanes(I, "tan", x);
      case UnaryOp::kAsin: return libmLanes(I, "asin", x);
      case UnaryOp::kAcos: return libmLanes(I, "acos", x);
      case UnaryOp::kAtan: return libmLanes(I, "atan", x);
      case UnaryOp::kSinh: return libmLanes(I, "sinh", x);
      case UnaryOp::kCosh: return libmLanes(I, "cosh", x);
      case UnaryOp::kAsinh: return libmLanes(I, "asinh", x);
      case UnaryOp::kAcosh: return libmLanes(I, "acosh", x);
      case UnaryOp::kAtanh: return libmLanes(I, "atanh", x);
      case UnaryOp::kSigmoid:
        return B.CreateFDiv(splatF(I, I.f64, w, 1.0),
                            B.CreateFAdd(splatF(I, I.f64, w, 1.0), libmLanes(I, "exp", B.CreateFNeg(x))));
      case UnaryOp::kSqrt: return B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case UnaryOp::kAbs: return B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      case UnaryOp::kRsqrt:
        return B.CreateFDiv(splatF(I, I.f64, w, 1.0), B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
      case UnaryOp::kRecip: return B.CreateFDiv(splatF(I, I.f64, w, 1.0), x);
      default: return x;
    }
  }
  F f{I, widthOf(x)};
  switch (op) {
    case UnaryOp::kExp: return f.exp(x);
    case UnaryOp::kLog: return f.log(x);
    case UnaryOp::kTanh: return f.tanh(x);
    case UnaryOp::kErf: return f.erf(x);
    case UnaryOp::kSigmoid: return f.div(f.c(1.0), f.add(f.c(1.0), f.exp(B.CreateFNeg(x))));
    case UnaryOp::kLog1p: return f.log1p(x);
    case UnaryOp::kSin: return libmLanes(I, "sinf", x);
    case UnaryOp::kCos: return libmLanes(I, "cosf", x);
    case UnaryOp::kTan: return libmLanes(I, "tanf", x);
    case UnaryOp::kAsin: return libmLanes(I, "asinf", x);
    case UnaryOp::kAcos: return libmLanes(I, "acosf", x);
    case UnaryOp::kAtan: return libmLanes(I, "atanf", x);
    case UnaryOp::kSinh: return libmLanes(I, "sinhf", x);
    case UnaryOp::kCosh: return libmLanes(I, "coshf", x);
    case UnaryOp::kAsinh: return libmLanes(I, "asinhf", x);
    case UnaryOp::kAcosh: return libmLanes(I, "acoshf", x);
    case UnaryOp::kAtanh: return libmLanes(I, "atanhf", x);
    default: return x;
  }
}

llvm::Value *mathGeluErf(CpuModuleBuilder::Impl &I, llvm::Value *x) {
  F f{I, widthOf(x)};
  return f.geluErf(x);
}

llvm::Value *mathPow(CpuModuleBuilder::Impl &I, llvm::Value *a, llvm::Value *b) {
  if (a->getType()->getScalarType()->isDoubleTy()) return libmLanes(I, "pow", a, b);
  F f{I, widthOf(a)};
  return f.pow(a, b);
}

}  // namespace fusec::codegen::cpu
