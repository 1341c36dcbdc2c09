//===- KernelSpec.h - Target-neutral description of one kernel --*- C++ -*-===//
//
// A KernelSpec is what one fused group becomes before any backend sees it
// (DESIGN.md, "KernelSpec"). It has no CUDA, NKI or CPU concept in it.
//
//  - A *domain*: named loop dims with extents (an integer, specialised, and
//    its symbolic form SymExtent, e.g. 4*batch*seq), each parallel or
//    reduced. Parallel dims come first; reduced dims (if any) last. One
//    "row" is one point of the parallel dims; the reduced dims span the row.
//  - *Buffers*: the kernel's arguments (inputs and outputs), each with a
//    storage dtype and a static row-major shape. Buffer i is launcher
//    argument i. Buffers carry no identity: two launches of one spec may
//    bind different tensors.
//  - A *body*: a DAG of scalar expressions (Expr), hash-consed so that equal
//    sub-expressions share one id. Index maps are expressions too: a Load
//    names a buffer and one index expression per buffer dim (broadcast = a
//    constant 0, transpose = permuted dims, slice = start + step * i, gather
//    = an index computed from another Load). A Load may carry a guard: when
//    the guard is false the load does not touch memory and yields 0 (used by
//    Pad, Concat, pooling windows).
//  - *Reductions* over the reduced dims (sum, prod, max, min, argmax,
//    argmin). A reduction's body may use results of earlier reductions
//    (softmax: max, then sum of exp(x - max); variance: sum of (x - mean)^2,
//    the two-pass algorithm). kReduceResult exprs read a reduction's result.
//  - *Stores* (outputs with index maps). A store whose value and indices do
//    not depend on reduced dims is row-level (written once per row).
//
// Library calls (GEMM, convolution) and attention are their own kinds; their
// parameters live in Lowering.h (they name graph Values).
//
// Scalar semantics: floats compute in f32 (f64 for f64 tensors); integers in
// i64; kIdx is index arithmetic (integer, width chosen by the backend). Loads
// convert storage to compute type, stores convert back (round to nearest).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_KERNELSPEC_H
#define FUSEC_PROGRAM_KERNELSPEC_H

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "program/AttentionSpec.h"
#include "program/SymExtent.h"
#include "ir/DType.h"

namespace fusec::program {

/// Compute (register) types of scalar expressions.
enum class ScalarType { kBool, kI64, kIdx, kF32, kF64 };
const char *scalarTypeName(ScalarType t);
/// The compute type that values stored as \p storage are computed in.
ScalarType computeTypeOf(ir::DType storage);

enum class ExprKind {
  kConst,         ///< fval (floats) or ival (integers, bool)
  kIndex,         ///< the loop index of domain dim `ival` (kIdx)
  kLoad,          ///< buffer `ival` at operands (one kIdx per buffer dim); guard optional
  kUnary,         ///< op = UnaryOp, operands[0]
  kBinary,        ///< op = BinaryOp, operands[0..1]
  kSelect,        ///< operands[0] (bool) ? operands[1] : operands[2]
  kCast,          ///< convert operands[0] to type; ival 1: its i64 side is u64 bits (castU64)
  kReduceResult,  ///< result of reduction `ival` (row-level)
  /// An integer known only at run time: symbolics[ival] (a SymExtent such
  /// as 4*batch*seq) evaluated with the symbols bound from the inputs'
  /// shapes (dynamic shapes, program/Symbolic.h). Type kIdx or kI64.
  kSymbol,
};

enum class UnaryOp {
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kRecip, kErf, kTanh, kSigmoid, kSin, kCos,
  kFloor, kCeil, kRound /* half to even */, kSign, kNot, kIsNaN, kIsPosInf, kIsNegInf,
  kLog1p, kRoundF16 /* round an f32 to the nearest f16, keep f32 */, kRoundBF16,
  kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh,  ///< C's tan, asin, ... (libm semantics)
  /// Round a float (f32 or f64, kept in its type) to the nearest value of a
  /// float8 format, ties to even, as ir::encodeNarrowFloat (Cast to it):
  /// saturating, an overflow or Inf gives the largest finite value of its
  /// sign; the *NoSat forms give NaN, or +-Inf for E5M2. FNUZ formats give +0
  /// for a negative value that rounds to zero. The result decodes exactly.
  kRoundF8E4M3FN, kRoundF8E4M3FNUZ, kRoundF8E5M2, kRoundF8E5M2FNUZ,
  kRoundF8E4M3FNNoSat, kRoundF8E4M3FNUZNoSat, kRoundF8E5M2NoSat, kRoundF8E5M2FNUZNoSat,
};
enum class BinaryOp {
  kAdd, kSub, kMul, kDiv /* integers truncate */, kMod /* sign of divisor */, kFmod,
  kPow, kMax, kMin, kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kXor,
  kShl, kShr,  ///< integers only: a << b, a >> b (arithmetic); b must lie in [0, 63]
  kBitAnd, kBitOr, kBitXor,  ///< integers only: a & b, a | b, a ^ b on the i64 bits
  /// Integers only, the i64 bits read as u64 (values of u64 tensors):
  /// a / b (b = 0 gives 0), a % b, max, min, the four orders, a >> b
  /// (logical; b in [0, 63]).
  kDivU, kModU, kMaxU, kMinU, kLtU, kLeU, kGtU, kGeU, kShrU,
};
const char *unaryOpName(UnaryOp op);
const char *binaryOpName(BinaryOp op);
/// True for the float8 formats kernels store (ir::DType f8e4m3fn,
/// f8e4m3fnuz, f8e5m2, f8e5m2fnuz): one byte per element, computed in f32.
bool isKernelFloat8(ir::DType t);
/// The kRoundF8* op for float8 dtype \p t (isKernelFloat8) and saturation.
UnaryOp roundF8Op(ir::DType t, bool saturate);
/// For a kRoundF8* op: its dtype and saturation; false for other ops.
bool roundF8Of(UnaryOp op, ir::DType *t, bool *saturate);
/// The format parameters of float8 dtype \p t (isKernelFloat8), as the
/// backends' conversions use them (ir/DType.cpp has the same table).
struct Float8Format {
  int mantBits;      ///< explicit mantissa bits
  int bias;          ///< exponent bias; the smallest normal is 2^(1 - bias)
  double maxFinite;  ///< largest finite value
  bool hasInf;       ///< E5M2: Inf codes 0x7c / 0xfc
  bool fnuz;         ///< single NaN 0x80, no -0
  int nanCode;       ///< positive NaN written (0x80 for FNUZ)
};
Float8Format float8Format(ir::DType t);
/// For a binary op on u64 values: its unsigned form (kDiv -> kDivU, ...),
/// or \p op itself where the i64 bits give the u64 result (add, sub, mul,
/// eq, ne, shl, bitwise).
BinaryOp unsignedBinaryOp(BinaryOp op);

struct Expr {
  ExprKind kind = ExprKind::kConst;
  ScalarType type = ScalarType::kF32;
  int op = 0;
  double fval = 0;
  int64_t ival = 0;
  std::vector<int> operands;
  int guard = -1;  ///< kLoad: bool expr; -1 = always in bounds
};

struct LoopDim {
  std::string name;   ///< "d0", ... (for printing only)
  int64_t extent = 1;  ///< the specialised extent (what the CUDA backend compiles for)
  bool reduced = false;
  /// The extent as the model states it (SymExtent.h); constant(extent)
  /// unless the lowering knows the symbols it came from.
  SymExtent symbolic = SymExtent::constant(1);
};

struct BufferDesc {
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;  ///< specialised, row-major, dense
  bool written = false;        ///< true for outputs
  /// The dims as the model states them (one per shape dim); constants
  /// unless the lowering knows the symbols they came from.
  std::vector<SymExtent> symbolicShape;
};

enum class ReduceKind { kSum, kProd, kMax, kMin, kArgMax, kArgMin };
const char *reduceKindName(ReduceKind k);

struct Reduction {
  ReduceKind kind = ReduceKind::kSum;
  int body = -1;               ///< element-level expr reduced over the reduced dims
  ScalarType type = ScalarType::kF32;  ///< of the result (kI64 for arg*)
  bool selectLastIndex = false;        ///< arg*: ties pick the last index
};

struct Store {
  int buffer = -1;
  std::vector<int> index;  ///< one kIdx expr per buffer dim
  int value = -1;
  int guard = -1;          ///< store only where true; -1 = always
};

enum class SpecKind {
  kPointwise,  ///< no reduced dims: one pass over the domain
  kReduce,     ///< rows: reductions over the reduced dims, then the epilogue
  kAttention,  ///< online-softmax attention: parameters in KernelSpec::attention
};
const char *specKindName(SpecKind k);

/// One generated kernel. Built with the helpers below, which hash-cons
/// expressions and fold constant index arithmetic.
class KernelSpec {
 public:
  SpecKind kind = SpecKind::kPointwise;
  std::vector<LoopDim> dims;
  std::vector<BufferDesc> buffers;
  std::vector<Expr> exprs;
  std::vector<Reduction> reductions;
  std::vector<Store> stores;
  /// kAttention: the attention parameters (buffers mirror its Q, K, V,
  /// biases, O order); dims/exprs/reductions/stores stay empty.
  AttentionSpec attention;
  /// The forms of the kSymbol expressions (their ival indexes this).
  std::vector<SymExtent> symbolics;

  /// Adds a loop dim; \returns its index. Parallel dims must come first.
  int addDim(int64_t extent, bool reduced);
  int addBuffer(ir::DType dtype, std::vector<int64_t> shape, bool written);
  /// Records that dim \p dim's extent is \p e (its integer extent stays the
  /// specialised one). Symbolic dims show in printKernelSpec().
  void setSymbolicExtent(int dim, const SymExtent &e) { dims[dim].symbolic = e; }
  /// Records the symbolic dims of buffer \p buffer (one per shape dim).
  void setSymbolicShape(int buffer, std::vector<SymExtent> shape) {
    buffers[buffer].symbolicShape = std::move(shape);
  }
  /// True if a loop extent, buffer dim, kSymbol expression or attention
  /// parameter is symbolic (the kernel runs for shapes bound at run time).
  bool hasSymbolicExtents() const;

  /// Integer constants (kIdx, kI64) equal in value are one
  /// expression. Off (LoweringOptions::distinctIntConstants), each constI()
  /// is a new expression, so that the spec's structure does not depend on
  /// which values coincide (expressions over different constants stay
  /// different); bool and float constants are merged either way.
  bool mergeIntConstants = true;

  // Expression builders (hash-consed; operands must already exist).
  int constF(double v, ScalarType t = ScalarType::kF32);
  int constI(int64_t v, ScalarType t = ScalarType::kIdx);
  int constB(bool v) { return constI(v ? 1 : 0, ScalarType::kBool); }
  int index(int dim);
  int load(int buffer, std::vector<int> idx, int guard = -1);
  int unary(UnaryOp op, int a);
  /// Binary op; comparisons and logic give kBool, others a's type. Integer
  /// kIdx arithmetic with constants is folded (x*1, x+0, 0*x, constants).
  int binary(BinaryOp op, int a, int b);
  int select(int c, int a, int b);
  int cast(int a, ScalarType t);
  /// cast() where the integer side (operand or result, kI64) holds u64
  /// bits: u64 -> float converts the unsigned value, float -> u64 truncates
  /// to an unsigned value (out-of-range as C leaves it; kernels clamp first).
  int castU64(int a, ScalarType t);
  int reduceResult(int reduction);
  int addReduction(ReduceKind k, int body, bool selectLast = false);
  void addStore(int buffer, std::vector<int> idx, int value, int guard = -1);

  /// Flat row-major offset of \p idx in \p shape (kIdx expr).
  int linearize(const std::vector<int> &idx, const std::vector<int64_t> &shape);
  /// Inverse of linearize: the indices of flat offset \p flat in \p shape.
  std::vector<int> delinearize(int flat, const std::vector<int64_t> &shape);

  const Expr &expr(int id) const { return exprs[id]; }
  bool isConst(int id, int64_t *v = nullptr) const;
  int numParallelDims() const;
  /// Product of parallel / reduced extents.
  int64_t parallelSize() const;
  int64_t reducedSize() const;
  /// True if \p id depends on a reduced dim (not counting reduction results).
  bool dependsOnReducedDim(int id) const;
  /// dependsOnReducedDim() of every expression, in one pass.
  std::vector<bool> reducedDimDependence() const;
  /// True if \p id depends (transitively) on a reduction result.
  bool dependsOnReduction(int id) const;

 private:
  int intern(Expr e);
  std::map<std::tuple<int, int, int, uint64_t, int64_t, std::vector<int>, int>, int> cache_;
};

/// Text form of \p spec, one line per dim, buffer, expr, reduction and store.
/// Deterministic; used by tests (FileCheck) and as the structural key.
std::string printKernelSpec(const KernelSpec &spec);

/// Canonical key: equal for structurally equal specs (buffer identity is not
/// part of a spec), different otherwise. Backends emit one kernel per key.
std::string canonicalKey(const KernelSpec &spec);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_KERNELSPEC_H
