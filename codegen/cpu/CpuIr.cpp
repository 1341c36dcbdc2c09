//===- CpuIr.cpp - Module state, conversions and the lane emitter ---------===//
#include "codegen/cpu/CpuIr.h"

#include <algorithm>
#include <cmath>
#include <limits>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "llvm/IR/IntrinsicsX86.h"
#pragma GCC diagnostic pop

namespace fusec::codegen::cpu {

using program::BinaryOp;
using program::Expr;
using program::ExprKind;
using program::ScalarType;
using program::UnaryOp;

CpuModuleBuilder::Impl::Impl(const CpuTarget &t, const std::string &name)
    : target(t), mod(std::make_unique<llvm::Module>(name, ctx)), B(ctx) {
  lanes = std::max(1, t.vectorBits / 32);
  i1 = llvm::Type::getInt1Ty(ctx);
  i8 = llvm::Type::getInt8Ty(ctx);
  i16 = llvm::Type::getInt16Ty(ctx);
  i32 = llvm::Type::getInt32Ty(ctx);
  i64 = llvm::Type::getInt64Ty(ctx);
  f16 = llvm::Type::getHalfTy(ctx);
  f32 = llvm::Type::getFloatTy(ctx);
  f64 = llvm::Type::getDoubleTy(ctx);
  i8p = llvm::PointerType::getUnqual(i8);
  i8pp = llvm::PointerType::getUnqual(i8p);
  // fusert_cpu_kernel.h, field by field.
  rangeFnTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {i8p, i64, i64, i32}, false);
  parallelForTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                          {i8p, i64, i64, llvm::PointerType::getUnqual(rangeFnTy), i8p}, false);
  llvm::Type *f32p = llvm::PointerType::getUnqual(f32);
  sgemmTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                    {i32, i32, i64, i64, i64, f32, f32p, i64, f32p, i64, f32, f32p, i64}, false);
  ctxTy = llvm::StructType::create(ctx,
                                   {i32, i32, i8p, llvm::PointerType::getUnqual(parallelForTy),
                                    llvm::PointerType::getUnqual(sgemmTy), i8p, i64,
                                    llvm::PointerType::getUnqual(i64), i64},
                                   "struct.fusert_cpu_context");
  entryTy = llvm::FunctionType::get(i32, {i8pp, llvm::PointerType::getUnqual(ctxTy)}, false);
  closureTy = llvm::StructType::create(ctx, {i8pp, llvm::PointerType::getUnqual(ctxTy)}, "fusec.closure");
}

llvm::Value *CpuModuleBuilder::Impl::stackSlot(llvm::Type *t, const char *name) {
  llvm::IRBuilder<> eb(entryBlock, entryBlock->begin());
  return eb.CreateAlloca(t, nullptr, name);
}

void CpuModuleBuilder::Impl::loop(llvm::Value *lo, llvm::Value *hi, int64_t step,
                                  const std::function<void(llvm::Value *)> &body, const char *name) {
  llvm::BasicBlock *pre = B.GetInsertBlock();
  llvm::BasicBlock *hdr = llvm::BasicBlock::Create(ctx, name, fn);
  llvm::BasicBlock *bb = llvm::BasicBlock::Create(ctx, std::string(name) + ".body", fn);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".end", fn);
  B.CreateBr(hdr);
  B.SetInsertPoint(hdr);
  llvm::PHINode *i = B.CreatePHI(i64, 2, "i");
  i->addIncoming(lo, pre);
  B.CreateCondBr(B.CreateICmpSLT(i, hi), bb, exit);
  B.SetInsertPoint(bb);
  body(i);
  llvm::Value *next = B.CreateAdd(i, c64(step), "", /*HasNUW=*/false, /*HasNSW=*/true);
  i->addIncoming(next, B.GetInsertBlock());
  B.CreateBr(hdr);
  B.SetInsertPoint(exit);
}

void CpuModuleBuilder::Impl::ifThen(llvm::Value *cond, const std::function<void()> &then) {
  llvm::BasicBlock *tb = llvm::BasicBlock::Create(ctx, "then", fn);
  llvm::BasicBlock *join = llvm::BasicBlock::Create(ctx, "endif", fn);
  B.CreateCondBr(cond, tb, join);
  B.SetInsertPoint(tb);
  then();
  B.CreateBr(join);
  B.SetInsertPoint(join);
}

void CpuModuleBuilder::Impl::setTargetAttrs(llvm::Function *f) {
  f->addFnAttr("target-cpu", target.cpu);
  if (!target.featureString.empty()) f->addFnAttr("target-features", target.featureString);
  f->addFnAttr(llvm::Attribute::NoUnwind);
}

llvm::Function *CpuModuleBuilder::Impl::beginBody(const std::string &symbol) {
  fn = llvm::Function::Create(rangeFnTy, llvm::Function::InternalLinkage, symbol + ".body", *mod);
  setTargetAttrs(fn);
  entryBlock = llvm::BasicBlock::Create(ctx, "entry", fn);
  B.SetInsertPoint(entryBlock);
  loadSymbols(bodyContext());
  return fn;
}

void CpuModuleBuilder::Impl::loadSymbols(llvm::Value *ctxPtr) {
  symbolValues.clear();
  if (symbolNames.empty()) return;
  llvm::Value *syms = B.CreateLoad(llvm::PointerType::getUnqual(i64), B.CreateStructGEP(ctxTy, ctxPtr, 7), "symbols");
  for (size_t i = 0; i < symbolNames.size(); ++i)
    symbolValues.push_back(B.CreateLoad(i64, B.CreateConstGEP1_64(i64, syms, i), "sym." + symbolNames[i]));
}

llvm::Value *CpuModuleBuilder::Impl::ext(const program::SymExtent &e) {
  llvm::Value *v = c64(e.coeff());
  for (const std::string &name : e.symbols()) {
    auto it = std::find(symbolNames.begin(), symbolNames.end(), name);
    if (it == symbolNames.end() || symbolValues.empty()) {
      // Not a symbol of this module: a generator bug; the verifier of the
      // fitted program makes this unreachable (program/Symbolic.h).
      symbolError = name;
      return c64(0);
    }
    v = B.CreateMul(v, symbolValues[it - symbolNames.begin()]);
  }
  return e.offset() ? B.CreateAdd(v, c64(e.offset())) : v;
}

llvm::Value *CpuModuleBuilder::Impl::bodyBuffers() {
  llvm::Value *cl = B.CreateBitCast(fn->getArg(0), llvm::PointerType::getUnqual(closureTy));
  return B.CreateLoad(i8pp, B.CreateStructGEP(closureTy, cl, 0), "buffers");
}

llvm::Value *CpuModuleBuilder::Impl::bodyContext() {
  llvm::Value *cl = B.CreateBitCast(fn->getArg(0), llvm::PointerType::getUnqual(closureTy));
  return B.CreateLoad(llvm::PointerType::getUnqual(ctxTy), B.CreateStructGEP(closureTy, cl, 1), "ctx");
}

llvm::Value *CpuModuleBuilder::Impl::bufferPtr(int b, llvm::Type *elemTy) {
  llvm::Value *bufs = bodyBuffers();
  llvm::Value *p = B.CreateLoad(i8p, B.CreateConstGEP1_64(i8p, bufs, b));
  return B.CreateBitCast(p, llvm::PointerType::getUnqual(elemTy), "buf" + std::to_string(b));
}

void CpuModuleBuilder::Impl::emitEntry(const std::string &symbol, llvm::Function *body, int64_t n,
                                       int64_t grain, int64_t work) {
  emitEntry(symbol, body, [&] { return c64(n); }, [&] { return c64(grain); }, [&] { return c64(work); });
}

void CpuModuleBuilder::Impl::emitEntry(const std::string &symbol, llvm::Function *body,
                                       const std::function<llvm::Value *()> &nOf,
                                       const std::function<llvm::Value *()> &grainOf,
                                       const std::function<llvm::Value *()> &workOf) {
  fn = llvm::Function::Create(entryTy, llvm::Function::ExternalLinkage, symbol, *mod);
  setTargetAttrs(fn);
  entryBlock = llvm::BasicBlock::Create(ctx, "entry", fn);
  B.SetInsertPoint(entryBlock);
  loadSymbols(fn->getArg(1));
  llvm::Value *n = nOf(), *grain = grainOf(), *work = workOf();
  llvm::Value *cl = B.CreateAlloca(closureTy, nullptr, "closure");
  B.CreateStore(fn->getArg(0), B.CreateStructGEP(closureTy, cl, 0));
  B.CreateStore(fn->getArg(1), B.CreateStructGEP(closureTy, cl, 1));
  llvm::Value *run = body;
  if (streamingBody_) {
    // Every streamed buffer aligned to streamAlign_ bytes: the streaming body.
    llvm::Value *bufs = fn->getArg(0);
    llvm::Value *bad = c64(0);
    for (int b : streamed_) {
      llvm::Value *p = B.CreateLoad(i8p, B.CreateConstGEP1_64(i8p, bufs, b));
      bad = B.CreateOr(bad, B.CreateAnd(B.CreatePtrToInt(p, i64), c64(streamAlign_ - 1)));
    }
    run = B.CreateSelect(B.CreateICmpEQ(bad, c64(0)), streamingBody_, body);
  }
  streamingBody_ = nullptr;
  streamed_.clear();
  // Nothing to do for n <= 0; on the calling thread below inlineWork
  // (constants fold these tests away for a static step).
  llvm::Value *positive = B.CreateICmpSGT(n, c64(0));
  ifThen(B.CreateAnd(positive, B.CreateICmpSLT(work, c64(target.inlineWork))), [&] {
    B.CreateCall(rangeFnTy, run, {B.CreateBitCast(cl, i8p), c64(0), n, c32(0)});
  });
  ifThen(B.CreateAnd(positive, B.CreateICmpSGE(work, c64(target.inlineWork))), [&] {
    llvm::Value *c = fn->getArg(1);
    llvm::Value *pool = B.CreateLoad(i8p, B.CreateStructGEP(ctxTy, c, 2), "pool");
    llvm::Value *pf = B.CreateLoad(llvm::PointerType::getUnqual(parallelForTy), B.CreateStructGEP(ctxTy, c, 3),
                                   "parallel_for");
    llvm::Value *g = B.CreateSelect(B.CreateICmpSGT(grain, c64(1)), grain, c64(1));
    B.CreateCall(parallelForTy, pf, {pool, n, g, run, B.CreateBitCast(cl, i8p)});
  });
  B.CreateRet(c32(0));
}

void CpuModuleBuilder::Impl::endStreamingStores() {
  if (target.x86) B.CreateCall(llvm::Intrinsic::getDeclaration(mod.get(), llvm::Intrinsic::x86_sse_sfence));
}

llvm::Type *storageType(CpuModuleBuilder::Impl &I, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return I.f32;
    case ir::DType::kF64: return I.f64;
    case ir::DType::kF16: return I.f16;
    case ir::DType::kBF16: return I.i16;
    case ir::DType::kU8: case ir::DType::kI8: case ir::DType::kBool: return I.i8;
    case ir::DType::kF8E4M3FN: case ir::DType::kF8E4M3FNUZ: case ir::DType::kF8E5M2:
    case ir::DType::kF8E5M2FNUZ: return I.i8;
    case ir::DType::kU16: case ir::DType::kI16: return I.i16;
    case ir::DType::kU32: case ir::DType::kI32: return I.i32;
    case ir::DType::kI64: case ir::DType::kU64: return I.i64;
    default: return nullptr;
  }
}

llvm::Type *computeType(CpuModuleBuilder::Impl &I, ScalarType t) {
  switch (t) {
    case ScalarType::kBool: return I.i1;
    case ScalarType::kI64: case ScalarType::kIdx: return I.i64;
    case ScalarType::kF32: return I.f32;
    case ScalarType::kF64: return I.f64;
  }
  return I.f32;
}

namespace {
llvm::Type *vecOf(llvm::Type *elem, llvm::Value *like) {
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType()))
    return llvm::FixedVectorType::get(elem, vt->getNumElements());
  return elem;
}
int widthOf(llvm::Value *v) {
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return vt->getNumElements();
  return 1;
}
bool isFloatT(ScalarType t) { return t == ScalarType::kF32 || t == ScalarType::kF64; }
bool isIntT(ScalarType t) { return t == ScalarType::kI64 || t == ScalarType::kIdx; }

llvm::Value *splatLike(CpuModuleBuilder::Impl &I, llvm::Type *elem, llvm::Value *like, double v, bool fp) {
  llvm::Constant *c = fp ? llvm::ConstantFP::get(elem, v) : llvm::ConstantInt::get(elem, static_cast<int64_t>(v), true);
  const int w = widthOf(like);
  return like->getType()->isVectorTy() ? I.B.CreateVectorSplat(w, c) : static_cast<llvm::Value *>(c);
}

/// The 256 values of float8 dtype \p dtype as a constant f32 table
/// (ir::decodeNarrowFloat, the interpreter's decoding: every code is exact
/// in f32), one per module.
llvm::GlobalVariable *float8Table(CpuModuleBuilder::Impl &I, ir::DType dtype) {
  const std::string name = std::string("fusec.decode.") + ir::dtypeName(dtype);
  if (llvm::GlobalVariable *g = I.mod->getNamedGlobal(name)) return g;
  std::vector<llvm::Constant *> vals;
  for (int c = 0; c < 256; ++c)
    vals.push_back(llvm::ConstantFP::get(I.f32, static_cast<float>(ir::decodeNarrowFloat(dtype, static_cast<uint8_t>(c)))));
  auto *ty = llvm::ArrayType::get(I.f32, 256);
  return new llvm::GlobalVariable(*I.mod, ty, true, llvm::GlobalValue::PrivateLinkage,
                                  llvm::ConstantArray::get(ty, vals), name);
}

/// Float8 codes (i8 lanes) of \p dtype to f32 by table lookup.
llvm::Value *decodeFloat8(CpuModuleBuilder::Impl &I, llvm::Value *raw, ir::DType dtype) {
  auto &B = I.B;
  llvm::GlobalVariable *tab = float8Table(I, dtype);
  llvm::Value *idx = B.CreateZExt(raw, vecOf(I.i64, raw));
  llvm::Value *ptrs = B.CreateInBoundsGEP(tab->getValueType(), tab, {I.c64(0), idx});
  if (!raw->getType()->isVectorTy()) return B.CreateAlignedLoad(I.f32, ptrs, llvm::Align(4));
  auto *vt = llvm::FixedVectorType::get(I.f32, widthOf(raw));
  return B.CreateMaskedGather(vt, ptrs, llvm::Align(4),
                              llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(I.i1, widthOf(raw))));
}

/// The code of \p dtype (i8 lanes) for f32 lanes \p v that hold values of
/// the format (roundToFloat8's results), NaN or an Inf.
llvm::Value *exactFloat8Code(CpuModuleBuilder::Impl &I, llvm::Value *v, ir::DType dtype) {
  auto &B = I.B;
  const program::Float8Format f = program::float8Format(dtype);
  const int minExp = 1 - f.bias;
  auto ci = [&](int64_t x) { return splatLike(I, I.i32, v, static_cast<double>(x), false); };
  auto cf = [&](double x) { return splatLike(I, I.f32, v, x, true); };
  llvm::Value *bits = B.CreateBitCast(v, vecOf(I.i32, v));
  llvm::Value *sign = B.CreateShl(B.CreateLShr(bits, ci(31)), ci(7));
  llvm::Value *a = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  llvm::Value *ab = B.CreateBitCast(a, vecOf(I.i32, v));
  // Below the smallest normal: a multiple of 2^(minExp - mantBits).
  llvm::Value *sub = B.CreateFCmpOLT(a, cf(std::ldexp(1.0, minExp)));
  llvm::Value *subCode = B.CreateFPToUI(B.CreateFMul(a, cf(std::ldexp(1.0, f.mantBits - minExp))), vecOf(I.i32, v));
  // Normal: the f32 exponent and top mantissa bits, rebiased.
  llvm::Value *normCode = B.CreateSub(B.CreateLShr(ab, ci(23 - f.mantBits)), ci(int64_t{127 - f.bias} << f.mantBits));
  llvm::Value *code = B.CreateSelect(sub, subCode, normCode);
  llvm::Value *nan = B.CreateFCmpUNO(v, v);
  llvm::Value *inf = B.CreateICmpEQ(ab, ci(0x7f800000));
  if (f.fnuz) {
    // One NaN (0x80), no -0; no Inf (an Inf here means NaN, as an overflow).
    llvm::Value *signedCode = B.CreateSelect(B.CreateICmpEQ(code, ci(0)), ci(0), B.CreateOr(code, sign));
    code = B.CreateSelect(B.CreateOr(nan, inf), ci(0x80), signedCode);
  } else {
    code = B.CreateSelect(nan, ci(f.nanCode), B.CreateSelect(inf, ci(f.hasInf ? 0x7c : f.nanCode), code));
    code = B.CreateOr(code, sign);
  }
  return B.CreateTrunc(code, vecOf(I.i8, v));
}

}  // namespace

llvm::Value *roundToFloat8(CpuModuleBuilder::Impl &I, llvm::Value *x, ir::DType dtype, bool saturate) {
  // Round to nearest even at the quantum of x's binade in the format (the
  // subnormal quantum below its normal range): |x| * 2^-q is exact, rint
  // rounds it half to even in the default mode, times 2^q is exact. The
  // exponent of |x| comes from its bits (f32 / f64 subnormals, zero: below
  // the format's range anyway); Inf and NaN go through as Inf (an overflow)
  // and NaN. Then the overflow rule and the sign (ir::encodeNarrowFloat).
  auto &B = I.B;
  const program::Float8Format f = program::float8Format(dtype);
  llvm::Type *ft = x->getType()->getScalarType();
  const bool dbl = ft == I.f64;
  llvm::Type *it = dbl ? I.i64 : I.i32;
  const int mb = dbl ? 52 : 23, eb = dbl ? 1023 : 127;
  auto ci = [&](int64_t v) { return splatLike(I, it, x, static_cast<double>(v), false); };
  auto cf = [&](double v) { return splatLike(I, ft, x, v, true); };
  llvm::Value *a = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *e = B.CreateSub(B.CreateLShr(B.CreateBitCast(a, vecOf(it, x)), ci(mb)), ci(eb));
  llvm::Value *minE = ci(1 - f.bias);
  llvm::Value *q = B.CreateSub(B.CreateSelect(B.CreateICmpSGT(e, minE), e, minE), ci(f.mantBits));
  llvm::Value *inv = B.CreateBitCast(B.CreateShl(B.CreateSub(ci(eb), q), ci(mb)), vecOf(ft, x));
  llvm::Value *quantum = B.CreateBitCast(B.CreateShl(B.CreateAdd(ci(eb), q), ci(mb)), vecOf(ft, x));
  llvm::Value *r = B.CreateFMul(B.CreateUnaryIntrinsic(llvm::Intrinsic::rint, B.CreateFMul(a, inv)), quantum);
  const double overflow = saturate ? f.maxFinite
                          : f.hasInf ? std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::quiet_NaN();
  r = B.CreateSelect(B.CreateFCmpOGT(r, cf(f.maxFinite)), cf(overflow), r);
  r = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  if (f.fnuz) r = B.CreateSelect(B.CreateFCmpOEQ(r, cf(0.0)), cf(0.0), r);  // no -0
  return r;
}

llvm::Value *widenStorage(CpuModuleBuilder::Impl &I, llvm::Value *raw, ir::DType dtype) {
  auto &B = I.B;
  switch (dtype) {
    case ir::DType::kF32: case ir::DType::kF64: return raw;
    case ir::DType::kF16: return B.CreateFPExt(raw, vecOf(I.f32, raw));
    case ir::DType::kBF16: {
      llvm::Value *w = B.CreateShl(B.CreateZExt(raw, vecOf(I.i32, raw)), 16);
      return B.CreateBitCast(w, vecOf(I.f32, raw));
    }
    case ir::DType::kI8: case ir::DType::kI16: case ir::DType::kI32: return B.CreateSExt(raw, vecOf(I.i64, raw));
    case ir::DType::kU8: case ir::DType::kU16: case ir::DType::kU32: return B.CreateZExt(raw, vecOf(I.i64, raw));
    case ir::DType::kBool: return B.CreateICmpNE(raw, llvm::Constant::getNullValue(raw->getType()));
    case ir::DType::kF8E4M3FN: case ir::DType::kF8E4M3FNUZ: case ir::DType::kF8E5M2: case ir::DType::kF8E5M2FNUZ:
      return decodeFloat8(I, raw, dtype);
    default: return raw;
  }
}

llvm::Value *narrowToStorage(CpuModuleBuilder::Impl &I, llvm::Value *v, ScalarType from, ir::DType dtype) {
  auto &B = I.B;
  v = convertScalar(I, v, from, program::computeTypeOf(dtype));
  switch (dtype) {
    case ir::DType::kF32: case ir::DType::kF64: return v;
    case ir::DType::kF16: return B.CreateFPTrunc(v, vecOf(I.f16, v));
    case ir::DType::kBF16: {
      const int w = widthOf(v);
      llvm::Value *bits = B.CreateBitCast(v, vecOf(I.i32, v));
      llvm::Value *lsb = B.CreateAnd(B.CreateLShr(bits, 16), splatI(I, I.i32, w, 1));
      llvm::Value *r = B.CreateLShr(B.CreateAdd(B.CreateAdd(bits, splatI(I, I.i32, w, 0x7fff)), lsb), 16);
      llvm::Value *nan = B.CreateFCmpUNO(v, v);
      llvm::Value *q = B.CreateOr(B.CreateLShr(bits, 16), splatI(I, I.i32, w, 0x40));
      return B.CreateTrunc(B.CreateSelect(nan, q, r), vecOf(I.i16, v));
    }
    case ir::DType::kBool: return B.CreateZExt(v, vecOf(I.i8, v));
    case ir::DType::kF8E4M3FN: case ir::DType::kF8E4M3FNUZ: case ir::DType::kF8E5M2: case ir::DType::kF8E5M2FNUZ:
      // Values of the format (rounded by a kRoundF8* op or decoded) keep
      // their code; anything else rounds as Cast with saturate = 0 would,
      // so that a decoded Inf or NaN stores as itself.
      return exactFloat8Code(I, roundToFloat8(I, v, dtype, false), dtype);
    default: {
      llvm::Type *st = storageType(I, dtype);
      return st == I.i64 ? v : B.CreateTrunc(v, vecOf(st, v));
    }
  }
}

llvm::Value *convertScalar(CpuModuleBuilder::Impl &I, llvm::Value *v, ScalarType from, ScalarType to) {
  auto &B = I.B;
  if (from == to || (isIntT(from) && isIntT(to))) return v;
  llvm::Type *dst = vecOf(computeType(I, to), v);
  if (from == ScalarType::kBool) return isFloatT(to) ? B.CreateUIToFP(v, dst) : B.CreateZExt(v, dst);
  if (to == ScalarType::kBool)
    return isFloatT(from) ? B.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
                          : B.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  if (isIntT(from)) return B.CreateSIToFP(v, dst);
  if (isIntT(to)) return B.CreateFreeze(B.CreateFPToSI(v, dst));  // NaN / out of range: some integer
  return to == ScalarType::kF64 ? B.CreateFPExt(v, dst) : B.CreateFPTrunc(v, dst);
}

llvm::Value *splatF(CpuModuleBuilder::Impl &I, llvm::Type *elem, int w, double v) {
  return I.B.CreateVectorSplat(w, llvm::ConstantFP::get(elem, v));
}
llvm::Value *splatI(CpuModuleBuilder::Impl &I, llvm::Type *elem, int w, int64_t v) {
  return I.B.CreateVectorSplat(w, llvm::ConstantInt::get(elem, v, true));
}
llvm::Value *iota(CpuModuleBuilder::Impl &I, int w) {
  std::vector<llvm::Constant *> c;
  for (int i = 0; i < w; ++i) c.push_back(llvm::ConstantInt::get(I.i64, i));
  return llvm::ConstantVector::get(c);
}
llvm::Value *broadcast(CpuModuleBuilder::Impl &I, llvm::Value *v, int w) {
  if (widthOf(v) == w && w == 1) return v;
  return I.B.CreateShuffleVector(v, llvm::UndefValue::get(v->getType()), std::vector<int>(w, 0));
}
llvm::Value *prefixMask(CpuModuleBuilder::Impl &I, int w, llvm::Value *active) {
  return I.B.CreateICmpSLT(iota(I, w), I.B.CreateVectorSplat(w, active));
}

// ---------------------------------------------------------------------------
// Lanes

Lanes::Lanes(CpuModuleBuilder::Impl &impl, const program::KernelSpec &spec, const std::vector<llvm::Value *> &bufs,
             std::vector<llvm::Value *> dims, int vecDim, int w, llvm::Value *mask, int64_t vecBlock)
    : I(impl), s_(spec), bufs_(bufs), dims_(std::move(dims)), vecDim_(vecDim), vecBlock_(vecBlock), w_(w),
      mask_(mask) {
  analyse();
}

void Lanes::analyse() {
  const size_t n = s_.exprs.size();
  known_.assign(n, 1);
  coef_.assign(n, 0);
  dep_.assign(n, 0);
  std::vector<char> &dep = dep_;
  for (size_t i = 0; i < n; ++i) {
    const Expr &e = s_.exprs[i];
    if (e.kind == ExprKind::kIndex) {
      dep[i] = e.ival == vecDim_;
      coef_[i] = dep[i] ? 1 : 0;
      continue;
    }
    for (int o : e.operands) dep[i] |= dep[o];
    if (e.guard >= 0) dep[i] |= dep[e.guard];
    if (!dep[i]) continue;
    known_[i] = 0;
    if (e.kind == ExprKind::kBinary && e.type == ScalarType::kIdx) {
      const int a = e.operands[0], b = e.operands[1];
      const BinaryOp op = static_cast<BinaryOp>(e.op);
      int64_t c;
      const bool inBlock = vecBlock_ > 0 && s_.exprs[a].kind == ExprKind::kIndex && s_.exprs[a].ival == vecDim_ &&
                           s_.isConst(b, &c) && c > 0 && c % vecBlock_ == 0;
      if (inBlock && op == BinaryOp::kDiv) {
        dep[i] = 0;  // the block's number: every lane's (lane 0's where loads use one)
        known_[i] = 1;
      } else if (inBlock && op == BinaryOp::kMod) {
        known_[i] = 1;
        coef_[i] = 1;
      } else if ((op == BinaryOp::kAdd || op == BinaryOp::kSub) && known_[a] && known_[b]) {
        known_[i] = 1;
        coef_[i] = op == BinaryOp::kAdd ? coef_[a] + coef_[b] : coef_[a] - coef_[b];
      } else if (op == BinaryOp::kMul && known_[a] && s_.isConst(b, &c)) {
        known_[i] = 1;
        coef_[i] = coef_[a] * c;
      } else if (op == BinaryOp::kMul && known_[b] && s_.isConst(a, &c)) {
        known_[i] = 1;
        coef_[i] = coef_[b] * c;
      }
    }
  }
}

llvm::Value *Lanes::andMask(llvm::Value *a, llvm::Value *b) {
  if (!a) return b;
  if (!b) return a;
  return I.B.CreateAnd(a, b);
}

llvm::Value *Lanes::offset(int b, const std::vector<int> &idx, int64_t *laneStride) {
  const std::vector<int64_t> &shape = s_.buffers[b].shape;
  const std::vector<program::SymExtent> &sym = s_.buffers[b].symbolicShape;
  llvm::Value *off = nullptr;
  int64_t stride = 1, ls = 0;
  // Dynamic shapes: the stride once a symbolic dim is in it (its value is
  // then known at run time only, and so is the lane stride through it).
  program::SymExtent symStride = program::SymExtent::constant(1);
  bool symbolic = false;
  bool affine = true;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t v;
    if (!(s_.isConst(idx[d], &v) && v == 0)) {
      llvm::Value *t = emit(idx[d]);
      if (symbolic) t = I.B.CreateMul(t, I.B.CreateVectorSplat(w_, I.ext(symStride)));
      else if (stride != 1) t = I.B.CreateMul(t, splatI(I, I.i64, w_, stride));
      off = off ? I.B.CreateAdd(off, t) : t;
      if (known_[idx[d]] && (!symbolic || coef_[idx[d]] == 0)) ls += symbolic ? 0 : coef_[idx[d]] * stride;
      else affine = false;
    }
    if (d < sym.size() && !sym[d].isConstant()) symbolic = true;
    symStride = symStride * (d < sym.size() ? sym[d] : program::SymExtent::constant(shape[d]));
    stride *= shape[d];
  }
  *laneStride = affine ? ls : -1;
  return off ? off : splatI(I, I.i64, w_, 0);
}

llvm::Value *Lanes::load(const Expr &e) {
  auto &B = I.B;
  const int b = static_cast<int>(e.ival);
  const program::BufferDesc &desc = s_.buffers[b];
  if (b == 0 && override0_) return override0_;
  llvm::Type *st = storageType(I, desc.dtype);
  llvm::Type *vt = llvm::FixedVectorType::get(st, w_);
  llvm::Value *guard = e.guard >= 0 ? emit(e.guard) : nullptr;
  int64_t ls = -1;
  llvm::Value *off = offset(b, e.operands, &ls);
  llvm::Value *m = andMask(mask_, guard);
  const llvm::Align align(st->getScalarSizeInBits() / 8 ? st->getScalarSizeInBits() / 8 : 1);
  llvm::Value *raw;
  if (ls == 1 || (w_ == 1 && !m)) {
    llvm::Value *p = B.CreateGEP(st, bufs_[b], B.CreateExtractElement(off, uint64_t{0}));
    p = B.CreateBitCast(p, llvm::PointerType::getUnqual(vt));
    raw = m ? static_cast<llvm::Value *>(B.CreateMaskedLoad(vt, p, align, m, llvm::Constant::getNullValue(vt)))
            : static_cast<llvm::Value *>(B.CreateAlignedLoad(vt, p, align));
  } else if (ls == 0 && !guard) {
    // Every lane reads one element; lane 0 is always active.
    llvm::Value *p = B.CreateGEP(st, bufs_[b], B.CreateExtractElement(off, uint64_t{0}));
    raw = B.CreateVectorSplat(w_, B.CreateAlignedLoad(st, p, align));
  } else {
    llvm::Value *ptrs = B.CreateGEP(st, bufs_[b], off);
    raw = B.CreateMaskedGather(vt, ptrs, align, m, llvm::Constant::getNullValue(vt));
  }
  llvm::Value *v = widenStorage(I, raw, desc.dtype);
  return convertScalar(I, v, program::computeTypeOf(desc.dtype), e.type);
}

void Lanes::store(const program::Store &s) {
  auto &B = I.B;
  const program::BufferDesc &desc = s_.buffers[s.buffer];
  const ScalarType vt = s_.exprs[s.value].type;
  llvm::Value *v = narrowToStorage(I, emit(s.value), vt, desc.dtype);
  llvm::Value *guard = s.guard >= 0 ? emit(s.guard) : nullptr;
  int64_t ls = -1;
  llvm::Value *off = offset(s.buffer, s.index, &ls);
  llvm::Value *m = andMask(mask_, guard);
  llvm::Type *st = storageType(I, desc.dtype);
  const llvm::Align align(st->getScalarSizeInBits() / 8 ? st->getScalarSizeInBits() / 8 : 1);
  if (ls == 1 || (w_ == 1 && !m)) {
    llvm::Value *p = B.CreateGEP(st, bufs_[s.buffer], B.CreateExtractElement(off, uint64_t{0}));
    p = B.CreateBitCast(p, llvm::PointerType::getUnqual(v->getType()));
    const bool stream = !m && ls == 1 && w_ > 1 && streamed_ &&
                        std::find(streamed_->begin(), streamed_->end(), s.buffer) != streamed_->end();
    if (m) {
      B.CreateMaskedStore(v, p, align, m);
    } else if (stream) {
      // MOVNTPS and friends: aligned to the whole vector (the entry point checked the buffer).
      llvm::StoreInst *sti = B.CreateAlignedStore(v, p, llvm::Align(uint64_t(w_) * align.value()));
      llvm::Metadata *one = llvm::ConstantAsMetadata::get(B.getInt32(1));
      sti->setMetadata(llvm::LLVMContext::MD_nontemporal, llvm::MDNode::get(I.ctx, one));
    } else {
      B.CreateAlignedStore(v, p, align);
    }
  } else {
    llvm::Value *ptrs = B.CreateGEP(st, bufs_[s.buffer], off);
    B.CreateMaskedScatter(v, ptrs, align, m ? m : llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(I.i1, w_)));
  }
}

llvm::Value *Lanes::emit(int id) {
  auto it = memo_.find(id);
  if (it != memo_.end()) return it->second;
  const Expr &e = s_.exprs[id];
  auto &B = I.B;
  llvm::Value *v = nullptr;
  switch (e.kind) {
    case ExprKind::kConst:
      if (isFloatT(e.type)) v = splatF(I, computeType(I, e.type), w_, e.fval);
      else v = splatI(I, computeType(I, e.type), w_, e.type == ScalarType::kBool ? (e.ival != 0) : e.ival);
      break;
    case ExprKind::kIndex:
      v = dims_[e.ival] ? dims_[e.ival] : splatI(I, I.i64, w_, 0);
      break;
    case ExprKind::kLoad: v = load(e); break;
    case ExprKind::kUnary: v = unary(e); break;
    case ExprKind::kBinary: v = binary(e); break;
    case ExprKind::kSelect:
      v = B.CreateSelect(emit(e.operands[0]), emit(e.operands[1]), emit(e.operands[2]));
      break;
    case ExprKind::kCast: {
      const ScalarType from = s_.exprs[e.operands[0]].type;
      llvm::Value *x = emit(e.operands[0]);
      if (e.ival == 1 && isIntT(from) && isFloatT(e.type))  // castU64: the i64 bits are a u64
        v = B.CreateUIToFP(x, vecOf(computeType(I, e.type), x));
      else if (e.ival == 1 && isFloatT(from) && isIntT(e.type))
        v = B.CreateFreeze(B.CreateFPToUI(x, vecOf(I.i64, x)));
      else
        v = convertScalar(I, x, from, e.type);
      break;
    }
    case ExprKind::kReduceResult: {
      llvm::Value *slot = (*slots_)[e.ival];
      llvm::Type *t = llvm::FixedVectorType::get(computeType(I, e.type), 1);
      v = broadcast(I, B.CreateLoad(t, slot), w_);
      break;
    }
    case ExprKind::kSymbol:  // an extent bound at run time (i64, like kIdx)
      v = B.CreateVectorSplat(w_, I.ext(s_.symbolics[e.ival]));
      break;
  }
  memo_[id] = v;
  return v;
}

llvm::Value *Lanes::unary(const Expr &e) {
  auto &B = I.B;
  ScalarType at = s_.exprs[e.operands[0]].type;
  llvm::Value *x = emit(e.operands[0]);
  const UnaryOp op = static_cast<UnaryOp>(e.op);
  if (at == ScalarType::kBool) {
    if (op == UnaryOp::kNot) return B.CreateNot(x);
    // Other ops on bools compute on 0 / 1.
    x = convertScalar(I, x, at, ScalarType::kI64);
    at = ScalarType::kI64;
  }
  if (isIntT(at)) {
    llvm::Value *zero = splatI(I, I.i64, w_, 0);
    switch (op) {
      case UnaryOp::kNeg: return B.CreateNeg(x);
      case UnaryOp::kAbs: return B.CreateSelect(B.CreateICmpSLT(x, zero), B.CreateNeg(x), x);
      case UnaryOp::kSign:
        return B.CreateSub(B.CreateZExt(B.CreateICmpSGT(x, zero), x->getType()),
                           B.CreateZExt(B.CreateICmpSLT(x, zero), x->getType()));
      case UnaryOp::kFloor: case UnaryOp::kCeil: case UnaryOp::kRound: return x;
      case UnaryOp::kIsNaN: case UnaryOp::kIsPosInf: case UnaryOp::kIsNegInf:
        return llvm::Constant::getNullValue(llvm::FixedVectorType::get(I.i1, w_));
      case UnaryOp::kNot: return B.CreateICmpEQ(x, zero);
      default: {
        // Integer math through double (as the CUDA backend's fx:: functions).
        llvm::Value *d = B.CreateSIToFP(x, llvm::FixedVectorType::get(I.f64, w_));
        llvm::Value *r = mathUnary(I, op, d);
        if (r->getType()->getScalarType()->isIntegerTy()) return r;
        return e.type == ScalarType::kI64 || e.type == ScalarType::kIdx
                   ? B.CreateFreeze(B.CreateFPToSI(r, x->getType()))
                   : convertScalar(I, r, ScalarType::kF64, e.type);
      }
    }
  }
  // Floats.
  llvm::Type *vt = x->getType();
  llvm::Type *et = vt->getScalarType();
  switch (op) {
    case UnaryOp::kNeg: return B.CreateFNeg(x);
    case UnaryOp::kAbs: return B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    case UnaryOp::kSqrt: return B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case UnaryOp::kRsqrt: return B.CreateFDiv(splatF(I, et, w_, 1.0), B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case UnaryOp::kRecip: return B.CreateFDiv(splatF(I, et, w_, 1.0), x);
    case UnaryOp::kFloor: return B.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    case UnaryOp::kCeil: return B.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    case UnaryOp::kRound: return B.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x);  // default mode: half to even
    case UnaryOp::kSign: {
      llvm::Value *z = splatF(I, et, w_, 0.0);
      // Neither above nor below zero: x itself (a signed zero or NaN, which
      // stays NaN as in the reference).
      return B.CreateSelect(B.CreateFCmpOGT(x, z), splatF(I, et, w_, 1.0),
                            B.CreateSelect(B.CreateFCmpOLT(x, z), splatF(I, et, w_, -1.0), x));
    }
    case UnaryOp::kNot: return B.CreateFCmpOEQ(x, splatF(I, et, w_, 0.0));
    case UnaryOp::kIsNaN: return B.CreateFCmpUNO(x, x);
    case UnaryOp::kIsPosInf: return B.CreateFCmpOEQ(x, splatF(I, et, w_, std::numeric_limits<double>::infinity()));
    case UnaryOp::kIsNegInf: return B.CreateFCmpOEQ(x, splatF(I, et, w_, -std::numeric_limits<double>::infinity()));
    case UnaryOp::kRoundF16: {
      if (et == I.f64) x = B.CreateFPTrunc(x, llvm::FixedVectorType::get(I.f32, w_));
      llvm::Value *r = B.CreateFPExt(B.CreateFPTrunc(x, llvm::FixedVectorType::get(I.f16, w_)),
                                     llvm::FixedVectorType::get(I.f32, w_));
      return et == I.f64 ? B.CreateFPExt(r, vt) : r;
    }
    case UnaryOp::kRoundBF16: {
      if (et == I.f64) x = B.CreateFPTrunc(x, llvm::FixedVectorType::get(I.f32, w_));
      llvm::Value *r = widenStorage(I, narrowToStorage(I, x, ScalarType::kF32, ir::DType::kBF16), ir::DType::kBF16);
      return et == I.f64 ? B.CreateFPExt(r, vt) : r;
    }
    default: {
      ir::DType f8 = ir::DType::kF8E4M3FN;
      bool saturate = true;
      if (program::roundF8Of(op, &f8, &saturate)) return roundToFloat8(I, x, f8, saturate);
      return mathUnary(I, op, x);
    }
  }
}

bool Lanes::isF32Const(int id, double v) const {
  const Expr &x = s_.exprs[id];
  return x.kind == ExprKind::kConst && x.type == ScalarType::kF32 && x.fval == v;
}

int Lanes::halfOf(int id) const {
  const Expr &x = s_.exprs[id];
  if (x.kind != ExprKind::kBinary || static_cast<BinaryOp>(x.op) != BinaryOp::kMul || x.type != ScalarType::kF32)
    return -1;
  if (isF32Const(x.operands[0], 0.5)) return x.operands[1];
  if (isF32Const(x.operands[1], 0.5)) return x.operands[0];
  return -1;
}

namespace {

/// u(t) (its expr) of an f32 1 + u(t) (either order) with u the unary \p op, else -1.
int onePlusUnaryOf(const program::KernelSpec &s, int id, UnaryOp op) {
  const Expr &x = s.exprs[id];
  if (x.kind != ExprKind::kBinary || static_cast<BinaryOp>(x.op) != BinaryOp::kAdd || x.type != ScalarType::kF32)
    return -1;
  for (int side = 0; side < 2; ++side) {
    const Expr &one = s.exprs[x.operands[side]];
    const Expr &u = s.exprs[x.operands[1 - side]];
    if (one.kind == ExprKind::kConst && one.type == ScalarType::kF32 && one.fval == 1.0 &&
        u.kind == ExprKind::kUnary && static_cast<UnaryOp>(u.op) == op && u.type == ScalarType::kF32)
      return x.operands[1 - side];
  }
  return -1;
}

}  // namespace

llvm::Value *Lanes::geluErf(const Expr &e) {
  for (int side = 0; side < 2; ++side) {
    const int x = halfOf(e.operands[side]), erf = onePlusUnaryOf(s_, e.operands[1 - side], UnaryOp::kErf);
    if (x < 0 || erf < 0) continue;
    const int t = s_.exprs[erf].operands[0];
    // t = x / sqrt 2 (the lowering's x * 0.7071067811865476, a constant
    // that rounds to the same f32): the fused rational evaluation.
    const Expr &te = s_.exprs[t];
    if (te.kind == ExprKind::kBinary && static_cast<BinaryOp>(te.op) == BinaryOp::kMul &&
        te.type == ScalarType::kF32)
      for (int k = 0; k < 2; ++k) {
        const Expr &cst = s_.exprs[te.operands[1 - k]];
        if (te.operands[k] == x && cst.kind == ExprKind::kConst && cst.type == ScalarType::kF32 &&
            static_cast<float>(cst.fval) == static_cast<float>(0.70710678118654752440))
          return mathGeluErf(I, emit(x));
      }
    // Any other t: 0.5 x (1 + erf t) = h + h erf(t), one FMA.
    llvm::Value *h = emit(e.operands[side]);
    return I.B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {h->getType()}, {h, emit(erf), h});
  }
  return nullptr;
}

llvm::Value *Lanes::geluTanh(const Expr &e) {
  auto tanhOf = [&](int id) {
    const int u = onePlusUnaryOf(s_, id, UnaryOp::kTanh);
    return u < 0 ? -1 : s_.exprs[u].operands[0];
  };
  for (int side = 0; side < 2; ++side) {
    const int x = halfOf(e.operands[side]), t = tanhOf(e.operands[1 - side]);
    if (x < 0 || t < 0) continue;
    // 0.5 x (1 + tanh t) = x sigmoid(2 t) = x / (1 + exp(-2 t)) exactly: one
    // exp and one divide instead of tanh's exp, divide, odd polynomial and
    // select (gpt2_tiny 8 x 128, c_fc + GELU over 1024 x 512 on one
    // thread: the epilogue ~0.62 -> ~0.32 ms). Saturates like the tanh form
    // (x for large t, +-0 for very negative t: exp clamps at 88.8).
    auto &B = I.B;
    llvm::Value *xv = emit(x), *tv = emit(t);
    llvm::Value *ex = mathUnary(I, UnaryOp::kExp, B.CreateFMul(tv, splatF(I, I.f32, w_, -2.0)));
    return B.CreateFDiv(xv, B.CreateFAdd(splatF(I, I.f32, w_, 1.0), ex));
  }
  return nullptr;
}

llvm::Value *Lanes::binary(const Expr &e) {
  auto &B = I.B;
  const ScalarType at = s_.exprs[e.operands[0]].type;
  const BinaryOp op = static_cast<BinaryOp>(e.op);
  double cf = 0;
  const Expr &eb = s_.exprs[e.operands[1]];
  // pow with a constant exponent: the common cases exactly.
  if (op == BinaryOp::kPow && isFloatT(at) && eb.kind == ExprKind::kConst) {
    cf = eb.fval;
    llvm::Value *a = emit(e.operands[0]);
    if (cf == 1.0) return a;
    if (cf == 2.0) return B.CreateFMul(a, a);
    if (cf == 3.0) return B.CreateFMul(B.CreateFMul(a, a), a);
    if (cf == 0.5) return B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
    if (cf == -1.0) return B.CreateFDiv(splatF(I, a->getType()->getScalarType(), w_, 1.0), a);
  }
  if (op == BinaryOp::kMul && at == ScalarType::kF32 && e.type == ScalarType::kF32) {
    if (llvm::Value *g = geluTanh(e)) return g;
    if (llvm::Value *g = geluErf(e)) return g;
  }
  llvm::Value *a = emit(e.operands[0]);
  llvm::Value *b = emit(e.operands[1]);
  if (at == ScalarType::kBool) {
    switch (op) {
      case BinaryOp::kAnd: return B.CreateAnd(a, b);
      case BinaryOp::kOr: return B.CreateOr(a, b);
      case BinaryOp::kXor: case BinaryOp::kNe: return B.CreateXor(a, b);
      case BinaryOp::kEq: return B.CreateNot(B.CreateXor(a, b));
      default:
        a = B.CreateZExt(a, llvm::FixedVectorType::get(I.i64, w_));
        b = B.CreateZExt(b, llvm::FixedVectorType::get(I.i64, w_));
        break;
    }
  }
  if (!isFloatT(at)) {
    llvm::Value *zero = splatI(I, I.i64, w_, 0);
    llvm::Value *one = splatI(I, I.i64, w_, 1);
    llvm::Value *minus1 = splatI(I, I.i64, w_, -1);
    switch (op) {
      case BinaryOp::kAdd: return B.CreateAdd(a, b);
      case BinaryOp::kSub: return B.CreateSub(a, b);
      case BinaryOp::kMul: return B.CreateMul(a, b);
      case BinaryOp::kDiv: case BinaryOp::kMod: case BinaryOp::kFmod: {
        // Division by 0 gives 0 and by -1 negates: never a trap.
        llvm::Value *bz = B.CreateICmpEQ(b, zero), *bm = B.CreateICmpEQ(b, minus1);
        llvm::Value *safe = B.CreateSelect(B.CreateOr(bz, bm), one, b);
        if (op == BinaryOp::kDiv) return B.CreateSelect(bz, zero, B.CreateSelect(bm, B.CreateNeg(a), B.CreateSDiv(a, safe)));
        llvm::Value *r = B.CreateSelect(B.CreateOr(bz, bm), zero, B.CreateSRem(a, safe));
        if (op == BinaryOp::kFmod || at == ScalarType::kIdx) return r;
        // Sign of the divisor (Python / ONNX Mod with fmod = 0).
        llvm::Value *fix = B.CreateAnd(B.CreateICmpNE(r, zero),
                                       B.CreateXor(B.CreateICmpSLT(r, zero), B.CreateICmpSLT(b, zero)));
        return B.CreateSelect(fix, B.CreateAdd(r, b), r);
      }
      case BinaryOp::kPow: {
        // Square and multiply over the 63 bits of a non-negative exponent.
        llvm::Value *r = one, *base = a, *ex = b;
        for (int bit = 0; bit < 63; ++bit) {
          llvm::Value *set = B.CreateICmpNE(B.CreateAnd(ex, one), zero);
          r = B.CreateSelect(set, B.CreateMul(r, base), r);
          base = B.CreateMul(base, base);
          ex = B.CreateLShr(ex, one);
        }
        llvm::Value *neg = B.CreateICmpSLT(b, zero);
        llvm::Value *odd = B.CreateICmpNE(B.CreateAnd(b, one), zero);
        llvm::Value *negr = B.CreateSelect(B.CreateICmpEQ(a, one), one,
                                           B.CreateSelect(B.CreateICmpEQ(a, minus1),
                                                          B.CreateSelect(odd, minus1, one), zero));
        return B.CreateSelect(neg, negr, r);
      }
      case BinaryOp::kMax: return B.CreateSelect(B.CreateICmpSGT(a, b), a, b);
      case BinaryOp::kMin: return B.CreateSelect(B.CreateICmpSLT(a, b), a, b);
      case BinaryOp::kEq: return B.CreateICmpEQ(a, b);
      case BinaryOp::kNe: return B.CreateICmpNE(a, b);
      case BinaryOp::kLt: return B.CreateICmpSLT(a, b);
      case BinaryOp::kLe: return B.CreateICmpSLE(a, b);
      case BinaryOp::kGt: return B.CreateICmpSGT(a, b);
      case BinaryOp::kGe: return B.CreateICmpSGE(a, b);
      case BinaryOp::kAnd: return B.CreateICmpNE(B.CreateAnd(a, b), zero);
      case BinaryOp::kOr: return B.CreateICmpNE(B.CreateOr(a, b), zero);
      case BinaryOp::kXor: return B.CreateXor(B.CreateICmpNE(a, zero), B.CreateICmpNE(b, zero));
      case BinaryOp::kShl: return B.CreateShl(a, b);
      case BinaryOp::kShr: return B.CreateAShr(a, b);
      case BinaryOp::kBitAnd: return B.CreateAnd(a, b);
      case BinaryOp::kBitOr: return B.CreateOr(a, b);
      case BinaryOp::kBitXor: return B.CreateXor(a, b);
      // u64 values in the i64 bits.
      case BinaryOp::kDivU: case BinaryOp::kModU: {
        llvm::Value *bz = B.CreateICmpEQ(b, zero);
        llvm::Value *safe = B.CreateSelect(bz, one, b);
        return B.CreateSelect(bz, zero, op == BinaryOp::kDivU ? B.CreateUDiv(a, safe) : B.CreateURem(a, safe));
      }
      case BinaryOp::kMaxU: return B.CreateSelect(B.CreateICmpUGT(a, b), a, b);
      case BinaryOp::kMinU: return B.CreateSelect(B.CreateICmpULT(a, b), a, b);
      case BinaryOp::kLtU: return B.CreateICmpULT(a, b);
      case BinaryOp::kLeU: return B.CreateICmpULE(a, b);
      case BinaryOp::kGtU: return B.CreateICmpUGT(a, b);
      case BinaryOp::kGeU: return B.CreateICmpUGE(a, b);
      case BinaryOp::kShrU: return B.CreateLShr(a, b);
    }
    return a;
  }
  llvm::Type *et = a->getType()->getScalarType();
  switch (op) {
    case BinaryOp::kAdd: return B.CreateFAdd(a, b);
    case BinaryOp::kSub: return B.CreateFSub(a, b);
    case BinaryOp::kMul: return B.CreateFMul(a, b);
    case BinaryOp::kDiv:
      // A divisor that is the same on every lane (a row's sum or standard
      // deviation): one reciprocal, which LLVM hoists out of the row loop,
      // and a multiply per element instead of a vector divide (within one
      // rounding of a / b). For |b| < 2^-64 (1 / b could overflow) the
      // reciprocal is taken of b * 2^64 and the product scaled back. Not
      // for a constant divisor (x / 255 must round as the division does:
      // quantisation scales are such quotients, and a result one ulp off
      // rounds to another integer), nor when a is uniform too (nothing to
      // save); LLVM turns a power-of-two constant into a multiply itself.
      if (w_ > 1 && dep_[e.operands[0]] && !dep_[e.operands[1]] &&
          s_.exprs[e.operands[1]].kind != ExprKind::kConst && et == I.f32) {
        llvm::Value *one = splatF(I, et, w_, 1.0);
        llvm::Value *tiny = B.CreateFCmpOLT(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, b),
                                            splatF(I, et, w_, std::ldexp(1.0, -64)));
        llvm::Value *bs = B.CreateSelect(tiny, B.CreateFMul(b, splatF(I, et, w_, std::ldexp(1.0, 64))), b);
        llvm::Value *prod = B.CreateFMul(a, B.CreateFDiv(one, bs));
        return B.CreateSelect(tiny, B.CreateFMul(prod, splatF(I, et, w_, std::ldexp(1.0, 64))), prod);
      }
      return B.CreateFDiv(a, b);
    case BinaryOp::kFmod: return B.CreateFRem(a, b);
    case BinaryOp::kMod: {
      llvm::Value *r = B.CreateFRem(a, b);
      llvm::Value *z = splatF(I, et, w_, 0.0);
      llvm::Value *fix = B.CreateAnd(B.CreateFCmpONE(r, z), B.CreateXor(B.CreateFCmpOLT(r, z), B.CreateFCmpOLT(b, z)));
      return B.CreateSelect(fix, B.CreateFAdd(r, b), r);
    }
    case BinaryOp::kPow: return mathPow(I, a, b);
    // NaN-propagating, as the reference: (a != a || a > b) ? a : b.
    case BinaryOp::kMax: return B.CreateSelect(B.CreateOr(B.CreateFCmpUNO(a, a), B.CreateFCmpOGT(a, b)), a, b);
    case BinaryOp::kMin: return B.CreateSelect(B.CreateOr(B.CreateFCmpUNO(a, a), B.CreateFCmpOLT(a, b)), a, b);
    case BinaryOp::kEq: return B.CreateFCmpOEQ(a, b);
    case BinaryOp::kNe: return B.CreateFCmpUNE(a, b);
    case BinaryOp::kLt: return B.CreateFCmpOLT(a, b);
    case BinaryOp::kLe: return B.CreateFCmpOLE(a, b);
    case BinaryOp::kGt: return B.CreateFCmpOGT(a, b);
    case BinaryOp::kGe: return B.CreateFCmpOGE(a, b);
    case BinaryOp::kAnd: case BinaryOp::kOr: case BinaryOp::kXor: {
      llvm::Value *z = splatF(I, et, w_, 0.0);
      llvm::Value *x = B.CreateFCmpUNE(a, z), *y = B.CreateFCmpUNE(b, z);
      return op == BinaryOp::kAnd ? B.CreateAnd(x, y) : op == BinaryOp::kOr ? B.CreateOr(x, y) : B.CreateXor(x, y);
    }
    case BinaryOp::kShl: case BinaryOp::kShr: case BinaryOp::kBitAnd: case BinaryOp::kBitOr: case BinaryOp::kBitXor:  // integers only (KernelSpec.h); never built on floats
    case BinaryOp::kDivU: case BinaryOp::kModU: case BinaryOp::kMaxU: case BinaryOp::kMinU: case BinaryOp::kLtU:
    case BinaryOp::kLeU: case BinaryOp::kGtU: case BinaryOp::kGeU: case BinaryOp::kShrU:
      return a;
  }
  return a;
}

}  // namespace fusec::codegen::cpu
