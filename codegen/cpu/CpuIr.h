//===- CpuIr.h - Shared IR-building pieces of the cpu code generator -*- C++ -*-===//
//
// Internal to codegen/cpu: the module state (CpuModuleBuilder::Impl), the
// ABI types of fusert_cpu_kernel.h mirrored in LLVM IR, loops, storage
// conversions, the vector math library (CpuMath.cpp) and the lane emitter
// that evaluates a KernelSpec expression DAG on W lanes at once.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CPU_CPUIR_H
#define FUSEC_CODEGEN_CPU_CPUIR_H

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#pragma GCC diagnostic pop

#include "codegen/cpu/CpuCodegen.h"

namespace fusec::codegen::cpu {

/// The module being built and the types every part uses.
struct CpuModuleBuilder::Impl {
  Impl(const CpuTarget &t, const std::string &name);

  CpuTarget target;
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod;
  llvm::IRBuilder<> B;
  uint64_t workspace = 0;  ///< bytes per thread, max over entry points
  int lanes = 4;           ///< vector lanes of one kernel loop (vectorBits / 32)

  llvm::Type *i1, *i8, *i16, *i32, *i64, *f16, *f32, *f64;
  llvm::PointerType *i8p, *i8pp;
  llvm::StructType *ctxTy = nullptr;         ///< struct fusert_cpu_context
  llvm::FunctionType *rangeFnTy = nullptr;   ///< fusert_cpu_range_fn
  llvm::FunctionType *parallelForTy = nullptr;
  llvm::FunctionType *sgemmTy = nullptr;
  llvm::FunctionType *entryTy = nullptr;     ///< fusert_cpu_kernel_fn
  llvm::StructType *closureTy = nullptr;     ///< {i8** buffers, ctx*}

  // Function emission state.
  llvm::Function *fn = nullptr;
  llvm::BasicBlock *entryBlock = nullptr;

  /// Dynamic shapes: the module's symbols, in the manifest's order
  /// (fusert_cpu_context.symbols); empty for static shapes.
  std::vector<std::string> symbolNames;
  /// Their values in the function being built (loaded in its entry block
  /// by beginBody / emitEntry).
  std::vector<llvm::Value *> symbolValues;
  /// A symbol ext() did not know (a generator bug; finish() reports it).
  std::string symbolError;
  /// Loads every symbol value from context \p ctxPtr at the insertion point.
  void loadSymbols(llvm::Value *ctxPtr);
  /// The i64 value of \p e in the current function: a constant, or the
  /// product of its coefficient and the symbols' run-time values.
  llvm::Value *ext(const program::SymExtent &e);

  llvm::Value *c64(int64_t v) { return llvm::ConstantInt::get(i64, v, true); }
  llvm::Value *c32(int32_t v) { return llvm::ConstantInt::get(i32, v, true); }
  /// An alloca of \p t in the current function's entry block (mem2reg-able).
  llvm::Value *stackSlot(llvm::Type *t, const char *name = "");
  /// for (i = lo; i < hi; i += step) body(i); i64 values.
  void loop(llvm::Value *lo, llvm::Value *hi, int64_t step, const std::function<void(llvm::Value *)> &body,
            const char *name = "loop");
  /// if (cond) then();
  void ifThen(llvm::Value *cond, const std::function<void()> &then);
  /// Sets the function attributes of the target (cpu, features) on \p f.
  void setTargetAttrs(llvm::Function *f);
  /// The entry point \p symbol: closure {buffers, ctx} on its stack, then
  /// ctx->parallel_for(pool, n, grain, body, &closure); returns 0. \p body
  /// is an internal fusert_cpu_range_fn built by the caller. \p work: the
  /// step's size in multiply-adds or elements; below target.inlineWork the
  /// body runs on the calling thread as body(&closure, 0, n, 0) (a tiny
  /// step costs less than waking the pool's workers).
  void emitEntry(const std::string &symbol, llvm::Function *body, int64_t n, int64_t grain, int64_t work);
  /// The same with \p n, \p grain and \p work computed at run time (i64
  /// values built in the entry point by the callbacks; dynamic shapes).
  void emitEntry(const std::string &symbol, llvm::Function *body, const std::function<llvm::Value *()> &n,
                 const std::function<llvm::Value *()> &grain, const std::function<llvm::Value *()> &work);
  /// A second body for the same work whose stores to the buffers
  /// \p streamed are streaming stores that need those buffers aligned to
  /// \p align bytes: emitEntry then calls \p streamingBody when every one
  /// of them is aligned at run time, \p body otherwise. Call before
  /// emitEntry; it applies to that call only.
  void setStreamingVariant(llvm::Function *streamingBody, std::vector<int> streamed, int64_t align) {
    streamingBody_ = streamingBody;
    streamed_ = std::move(streamed);
    streamAlign_ = align;
  }
  /// Ends a body that made streaming stores: an sfence (x86), so that they
  /// are visible to the thread that waits for this chunk (streaming stores
  /// are weakly ordered: the pool's release/acquire does not cover them).
  void endStreamingStores();
  /// A new internal range function "<symbol>.body"; the builder is left in
  /// its entry block. Arguments: closure, begin, end, thread.
  llvm::Function *beginBody(const std::string &symbol);
  /// In a body: the buffers array and the context from the closure.
  llvm::Value *bodyBuffers();
  llvm::Value *bodyContext();
  /// In a body: buffer \p b of the step as a pointer to \p elemTy.
  llvm::Value *bufferPtr(int b, llvm::Type *elemTy);

 private:
  llvm::Function *streamingBody_ = nullptr;
  std::vector<int> streamed_;
  int64_t streamAlign_ = 0;
};

/// The LLVM type holding one element of \p dtype in memory.
llvm::Type *storageType(CpuModuleBuilder::Impl &I, ir::DType dtype);
/// The LLVM type of compute type \p t (bool i1, integers i64, f32, f64).
llvm::Type *computeType(CpuModuleBuilder::Impl &I, program::ScalarType t);
/// Raw elements (vector of storageType) to the compute type of \p dtype.
llvm::Value *widenStorage(CpuModuleBuilder::Impl &I, llvm::Value *raw, ir::DType dtype);
/// A compute value of type \p from to the storage of \p dtype (floats
/// round to nearest even; bf16 by bit arithmetic, NaN stays NaN).
llvm::Value *narrowToStorage(CpuModuleBuilder::Impl &I, llvm::Value *v, program::ScalarType from,
                             ir::DType dtype);
/// Float8 (program::isKernelFloat8): \p x (f32 or f64 lanes) rounded to the
/// nearest value of \p dtype, kept in x's type (UnaryOp::kRoundF8*).
llvm::Value *roundToFloat8(CpuModuleBuilder::Impl &I, llvm::Value *x, ir::DType dtype, bool saturate);
/// Converts \p v between compute types (kCast semantics).
llvm::Value *convertScalar(CpuModuleBuilder::Impl &I, llvm::Value *v, program::ScalarType from,
                           program::ScalarType to);
/// <W x T> of constant \p v.
llvm::Value *splatF(CpuModuleBuilder::Impl &I, llvm::Type *elem, int w, double v);
llvm::Value *splatI(CpuModuleBuilder::Impl &I, llvm::Type *elem, int w, int64_t v);
/// <0, 1, ..., W-1> as i64.
llvm::Value *iota(CpuModuleBuilder::Impl &I, int w);
/// Broadcasts lane 0 of \p v (any vector) to \p w lanes.
llvm::Value *broadcast(CpuModuleBuilder::Impl &I, llvm::Value *v, int w);
/// The mask of the first \p active lanes of \p w (runtime i64 \p active).
llvm::Value *prefixMask(CpuModuleBuilder::Impl &I, int w, llvm::Value *active);

// Vector math (CpuMath.cpp): f32 vectors by polynomials emitted as IR;
// f64 through libm, lane by lane.
llvm::Value *mathUnary(CpuModuleBuilder::Impl &I, program::UnaryOp op, llvm::Value *x);
llvm::Value *mathPow(CpuModuleBuilder::Impl &I, llvm::Value *a, llvm::Value *b);
/// The erf GELU 0.5 x (1 + erf(x / sqrt 2)) of f32 lanes \p x in one
/// rational evaluation (CpuMath.cpp, F::geluErf).
llvm::Value *mathGeluErf(CpuModuleBuilder::Impl &I, llvm::Value *x);
/// True if mathUnary covers \p op for floats.
bool isMathUnary(program::UnaryOp op);

// Helpers of the tiled entry points (CpuKernels.cpp).
/// Loads \p w (static) elements of \p dtype at \p base + \p off (i64
/// elements) as <w x f32> (masked by \p mask when not null).
llvm::Value *loadF32(CpuModuleBuilder::Impl &I, llvm::Value *base, ir::DType dtype, llvm::Value *off, int w,
                     llvm::Value *mask);
/// Stores f32 lanes \p v as \p dtype at \p base + \p off (masked by \p mask when not null).
void storeFrom(CpuModuleBuilder::Impl &I, llvm::Value *v, llvm::Value *base, ir::DType dtype, llvm::Value *off,
               llvm::Value *mask);
/// fn(j, mask) over [0, n) (runtime i64 \p n) in vectors of \p w; the last
/// one under a lane mask (null for full vectors).
void dynVectorLoop(CpuModuleBuilder::Impl &I, llvm::Value *n, int w,
                   const std::function<void(llvm::Value *, llvm::Value *)> &fn);
/// Signed minimum of two i64 values.
llvm::Value *smin(CpuModuleBuilder::Impl &I, llvm::Value *a, llvm::Value *b);
/// \p b rounded up to a multiple of 64.
uint64_t align64(uint64_t b);
/// What a tiled chunk body (\p body: closure, begin, end, thread) needs of
/// its fusert_cpu_context: ctx->sgemm (field 4) and the calling worker's
/// workspace slice as f32* (ctx->workspace, field 5, plus thread *
/// ctx->workspace_bytes_per_thread, field 6; fusert_cpu_kernel.h).
std::pair<llvm::Value *, llvm::Value *> sgemmAndWorkspace(CpuModuleBuilder::Impl &I, llvm::Function *body);

/// Adds entry point \p symbol computing attention \p a (CpuAttention.cpp;
/// buffers as program/AttentionSpec.h). checkCpuAttention(a) must hold.
absl::Status addAttention(CpuModuleBuilder::Impl &I, const program::AttentionSpec &a, const std::string &symbol);

/// Evaluates expressions of one KernelSpec on W lanes: one instance per
/// loop body (values are cached per instance).
class Lanes {
 public:
  /// \p bufs[i]: spec buffer i as a pointer to its storage type (null for
  /// buffers replaced by \p override0). \p dims: per domain dim the <W x i64>
  /// index (or null for dims not in scope). \p vecDim: the dim that varies
  /// across lanes (-1: none). \p mask: active lanes (<W x i1>) or null = all.
  /// \p vecBlock (> 0): the active lanes' vecDim indices lie in one block
  /// [j * vecBlock, (j + 1) * vecBlock), so index(vecDim) / c is the same
  /// in each and index(vecDim) % c advances by one per lane, for c a
  /// multiple of vecBlock (lane 0 is active).
  Lanes(CpuModuleBuilder::Impl &I, const program::KernelSpec &spec, const std::vector<llvm::Value *> &bufs,
        std::vector<llvm::Value *> dims, int vecDim, int w, llvm::Value *mask, int64_t vecBlock = 0);
  /// Loads of buffer 0 yield \p v (<W x f32>; the GEMM accumulator).
  void overrideBuffer0(llvm::Value *v) { override0_ = v; }
  /// Reduction results: allocas of <1 x T>.
  void setReductionSlots(const std::vector<llvm::Value *> *slots) { slots_ = slots; }
  /// Stores to the buffers in \p buffers that are unmasked, unguarded and
  /// contiguous across lanes are streaming stores (!nontemporal, aligned
  /// to the vector size): the caller guarantees that alignment
  /// (CpuModuleBuilder::Impl::setStreamingVariant).
  void setStreamedBuffers(const std::vector<int> *buffers) { streamed_ = buffers; }
  /// Expression \p id evaluates to \p v (a value an earlier pass cached).
  void preset(int id, llvm::Value *v) { memo_[id] = v; }
  /// The values emitted (or preset) so far, by expression.
  const std::map<int, llvm::Value *> &values() const { return memo_; }
  llvm::Value *emit(int id);
  /// Emits store \p s (masked by the lanes and its guard).
  void store(const program::Store &s);
  llvm::Value *mask() const { return mask_; }
  int width() const { return w_; }

 private:
  llvm::Value *load(const program::Expr &e);
  llvm::Value *unary(const program::Expr &e);
  llvm::Value *binary(const program::Expr &e);
  /// \p e (an f32 multiply) as x / (1 + exp(-2 t)) when it is the tanh
  /// GELU 0.5 x * (1 + tanh(t)) (operands in either order); else nullptr.
  llvm::Value *geluTanh(const program::Expr &e);
  /// \p e (an f32 multiply) when it is the erf GELU 0.5 x * (1 + erf(t))
  /// (operands in either order): with t = x / sqrt 2 (x * 0.70710677) one
  /// mathGeluErf, otherwise h + h erf(t) with h = 0.5 x (one FMA instead of
  /// an add and a multiply); else nullptr.
  llvm::Value *geluErf(const program::Expr &e);
  /// x of an f32 0.5 * x (either order), else -1.
  int halfOf(int id) const;
  /// Whether expr \p id is the f32 constant \p v.
  bool isF32Const(int id, double v) const;
  /// Flat element offset (<W x i64>) of index exprs \p idx into buffer \p b,
  /// and its stride across lanes when known (-1 = not affine).
  llvm::Value *offset(int b, const std::vector<int> &idx, int64_t *laneStride);
  llvm::Value *andMask(llvm::Value *a, llvm::Value *b);
  void analyse();

  CpuModuleBuilder::Impl &I;
  const program::KernelSpec &s_;
  const std::vector<llvm::Value *> &bufs_;
  std::vector<llvm::Value *> dims_;
  int vecDim_;
  int64_t vecBlock_;
  int w_;
  llvm::Value *mask_;
  llvm::Value *override0_ = nullptr;
  const std::vector<llvm::Value *> *slots_ = nullptr;
  const std::vector<int> *streamed_ = nullptr;
  std::map<int, llvm::Value *> memo_;
  std::vector<char> known_;     ///< coef_ is exact for this expr
  std::vector<char> dep_;       ///< the expr varies across lanes
  std::vector<int64_t> coef_;   ///< d expr / d lane (index exprs)
};

}  // namespace fusec::codegen::cpu

#endif  // FUSEC_CODEGEN_CPU_CPUIR_H
