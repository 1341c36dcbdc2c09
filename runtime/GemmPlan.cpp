//===- GemmPlan.cpp - A manifest gemm step as cached cuBLASLt matmuls -===//
//
// See GemmPlan.h for the row-major to column-major mapping and the tiles.
// Descriptors are built once at load; each tile's heuristic result is cached
// and only recomputed when a run's pointers are less aligned than the ones
// it was chosen for.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/GemmPlan.h"

#include "runtime/internal/CudaStatus.h"

namespace fusec::rt {
namespace {

cudaDataType_t cudaType(fusert_dtype dtype) {
  switch (dtype) {
  case FUSERT_F16:
    return CUDA_R_16F;
  case FUSERT_BF16:
    return CUDA_R_16BF;
  case FUSERT_F64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

cublasLtEpilogue_t ltEpilogue(Epilogue e) {
  switch (e) {
  case Epilogue::kNone:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::kBias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::kRelu:
    return CUBLASLT_EPILOGUE_RELU;
  case Epilogue::kReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case Epilogue::kGelu:
    return CUBLASLT_EPILOGUE_GELU;
  case Epilogue::kGeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// Creates a column-major rows x cols layout with leading dimension \p ld,
/// batched \p batch times \p stride elements apart.
Status makeLayout(cublasLtMatrixLayout_t &out, cudaDataType_t type,
                  int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                  int64_t stride, const char *what) {
  FUSERT_RETURN_IF_ERROR(cublasStatus(
      cublasLtMatrixLayoutCreate(&out, type, rows, cols, ld), what));
  if (batch == 1)
    return Status();
  int32_t count = static_cast<int32_t>(batch);
  FUSERT_RETURN_IF_ERROR(cublasStatus(
      cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                       &count, sizeof(count)),
      what));
  return cublasStatus(
      cublasLtMatrixLayoutSetAttribute(
          out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
          sizeof(stride)),
      what);
}

uint32_t alignmentOf(const void *ptr, int64_t strideBytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(ptr) |
                  static_cast<uint64_t>(strideBytes) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1)); // lowest set bit
}


const char *bytesAt(const void *p, int64_t elements, size_t elem) {
  return p ? static_cast<const char *>(p) + elements * static_cast<int64_t>(elem)
           : nullptr;
}

} // namespace

GemmPlan::~GemmPlan() {
  for (Call &c : calls_) {
    if (c.first)
      cublasLtMatrixLayoutDestroy(c.first);
    if (c.second)
      cublasLtMatrixLayoutDestroy(c.second);
    if (c.c)
      cublasLtMatrixLayoutDestroy(c.c);
    if (c.d)
      cublasLtMatrixLayoutDestroy(c.d);
  }
  if (op_)
    cublasLtMatmulDescDestroy(op_);
}

Status GemmPlan::init(cublasLtHandle_t lt, const GemmDesc &desc,
                      const GemmPointers &ptrs, size_t workspaceBytes,
                      const std::vector<GemmBCopy> &bCopies) {
  desc_ = desc;
  lt_ = lt;
  workspaceBytes_ = workspaceBytes;
  const GemmDesc &g = desc_;
  if (g.c < 0) // no C: nothing to add, whatever beta says
    desc_.beta = 0.0;
  alphaF_ = static_cast<float>(g.alpha);
  betaF_ = static_cast<float>(desc_.beta);
  alphaD_ = g.alpha;
  betaD_ = desc_.beta;

  bool f64 = g.dtype == FUSERT_F64;
  cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (g.dtype == FUSERT_F32 && g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                             : CUBLAS_COMPUTE_32F);
  cudaDataType_t scale = f64 ? CUDA_R_64F : CUDA_R_32F;
  FUSERT_RETURN_IF_ERROR(cublasStatus(
      cublasLtMatmulDescCreate(&op_, compute, scale), "cublasLtMatmulDescCreate"));
  // cuBLASLt's A is our B and its B is our A (see GemmPlan.h).
  cublasOperation_t opFirst = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = ltEpilogue(g.epilogue);
  FUSERT_RETURN_IF_ERROR(cublasStatus(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA,
                                     &opFirst, sizeof(opFirst)),
      "set TRANSA"));
  FUSERT_RETURN_IF_ERROR(cublasStatus(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB,
                                     &opSecond, sizeof(opSecond)),
      "set TRANSB"));
  FUSERT_RETURN_IF_ERROR(cublasStatus(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                     &epilogue, sizeof(epilogue)),
      "set EPILOGUE"));

  const std::vector<GemmTile> tiles = gemmTiles(g);
  calls_.resize(tiles.size());
  for (size_t i = 0; i < tiles.size(); ++i) {
    calls_[i].tile = tiles[i];
    FUSERT_RETURN_IF_ERROR(makeCall(calls_[i], bCopies));
    FUSERT_RETURN_IF_ERROR(pickAlgo(calls_[i], tilePointers(calls_[i], ptrs)));
  }
  return Status();
}

Status GemmPlan::makeCall(Call &call, const std::vector<GemmBCopy> &bCopies) {
  const GemmDesc &g = desc_;
  const GemmTile &t = call.tile;
  const bool whole = t.rowStep == 1 && t.row0 == 0 && t.col0 == 0 &&
                     t.rows == g.m && t.cols == g.n;
  const int64_t batch = whole ? g.batch : 1;
  // B: the run's dense B, or a copy (main tiles only).
  int64_t ldB = denseLdB(g);
  call.bOffset = g.transB ? t.col0 * ldB : t.col0;
  if (t.main && !whole)
    for (const GemmBCopy &c : bCopies) {
      if (!c.data || (g.transB ? c.shift != 0 : c.shift != t.col0))
        continue;
      call.fixedB = c.data;
      ldB = c.ld;
      call.bOffset = g.transB ? t.col0 * ldB : 0;
      break;
    }
  // A's rows row0, row0 + rowStep, ... (never transposed when tiled); C and
  // D's rows likewise, from column col0.
  call.aOffset = t.row0 * g.k;
  call.cdOffset = t.row0 * g.n + t.col0;
  cudaDataType_t type = cudaType(g.dtype);
  // C has D's type (cuBLASLt's Ctype is its Dtype for these GEMMs).
  cudaDataType_t dType = cudaType(g.dDtype);
  // Row-major B is [k,n] (or [n,k] if transposed); read column-major it is
  // n x k with ld n (or k x n with ld k), or the copy's ld.
  FUSERT_RETURN_IF_ERROR(makeLayout(call.first, type, g.transB ? g.k : t.cols,
                                    g.transB ? t.cols : g.k, ldB, batch,
                                    g.strideB, "layout of b"));
  FUSERT_RETURN_IF_ERROR(makeLayout(
      call.second, type, g.transA ? t.rows : g.k, g.transA ? g.k : t.rows,
      g.transA ? g.m : g.k * t.rowStep, batch, g.strideA, "layout of a"));
  FUSERT_RETURN_IF_ERROR(makeLayout(call.c, dType, t.cols, t.rows,
                                    g.n * t.rowStep, batch,
                                    g.c >= 0 ? g.strideC : g.strideD,
                                    "layout of c"));
  return makeLayout(call.d, dType, t.cols, t.rows, g.n * t.rowStep, batch,
                    g.strideD, "layout of d");
}

GemmPointers GemmPlan::tilePointers(const Call &call,
                                    const GemmPointers &ptrs) const {
  const size_t elem = fusert_dtype_size(desc_.dtype);
  const size_t dElem = fusert_dtype_size(desc_.dDtype);
  GemmPointers p;
  p.a = bytesAt(ptrs.a, call.aOffset, elem);
  p.b = bytesAt(call.fixedB ? call.fixedB : ptrs.b, call.bOffset, elem);
  p.c = bytesAt(ptrs.c, call.cdOffset, dElem);
  p.d = const_cast<char *>(bytesAt(ptrs.d, call.cdOffset, dElem));
  p.bias = ptrs.bias; // tiled steps have no bias (gemmTiles)
  return p;
}

void GemmPlan::alignments(const GemmPointers &ptrs, uint32_t out[4]) const {
  const int64_t elem = static_cast<int64_t>(fusert_dtype_size(desc_.dtype));
  const int64_t dElem = static_cast<int64_t>(fusert_dtype_size(desc_.dDtype));
  bool batched = desc_.batch > 1;
  auto stride = [&](int64_t s, int64_t bytes) { return batched ? s * bytes : 0; };
  out[0] = alignmentOf(ptrs.b, stride(desc_.strideB, elem));
  out[1] = alignmentOf(ptrs.a, stride(desc_.strideA, elem));
  out[2] = ptrs.c ? alignmentOf(ptrs.c, stride(desc_.strideC, dElem))
                  : alignmentOf(ptrs.d, stride(desc_.strideD, dElem));
  out[3] = alignmentOf(ptrs.d, stride(desc_.strideD, dElem));
}

Status GemmPlan::pickAlgo(Call &call, const GemmPointers &ptrs) {
  uint32_t align[4];
  alignments(ptrs, align);
  cublasLtMatmulPreference_t pref = nullptr;
  FUSERT_RETURN_IF_ERROR(cublasStatus(cublasLtMatmulPreferenceCreate(&pref),
                                      "cublasLtMatmulPreferenceCreate"));
  Status status = cublasStatus(
      cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes_,
          sizeof(workspaceBytes_)),
      "set MAX_WORKSPACE_BYTES");
  const cublasLtMatmulPreferenceAttributes_t kAlignAttrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && status.ok(); ++i)
    status = cublasStatus(cublasLtMatmulPreferenceSetAttribute(
                              pref, kAlignAttrs[i], &align[i], sizeof(uint32_t)),
                          "set MIN_ALIGNMENT");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status.ok())
    status = cublasStatus(
        cublasLtMatmulAlgoGetHeuristic(lt_, op_, call.first, call.second,
                                       call.c, call.d, pref, 1, &result, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  cublasLtMatmulPreferenceDestroy(pref);
  FUSERT_RETURN_IF_ERROR(status);
  const GemmTile &t = call.tile;
  if (found == 0)
    return Status(FUSERT_CUBLAS_ERROR,
                  strCat("no cuBLASLt algorithm for ", fusert_dtype_name(desc_.dtype),
                         " gemm m=", desc_.m, " n=", desc_.n, " k=", desc_.k,
                         " batch=", desc_.batch, " d_dtype=",
                         fusert_dtype_name(desc_.dDtype), " (tile rows ", t.row0,
                         "+", t.rowStep, "i x ", t.rows, ", columns ", t.col0,
                         "+", t.cols, ")"));
  call.algo = result.algo;
  for (int i = 0; i < 4; ++i)
    call.algoAlign[i] = align[i];
  return Status();
}

Status GemmPlan::run(const GemmPointers &ptrs, void *workspace,
                     cudaStream_t stream) {
  if (ptrs.bias)
    FUSERT_RETURN_IF_ERROR(cublasStatus(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &ptrs.bias, sizeof(ptrs.bias)),
        "set BIAS_POINTER"));
  bool f64 = desc_.dtype == FUSERT_F64;
  const void *alpha = f64 ? static_cast<const void *>(&alphaD_) : &alphaF_;
  const void *beta = f64 ? static_cast<const void *>(&betaD_) : &betaF_;
  for (Call &call : calls_) {
    const GemmPointers p = tilePointers(call, ptrs);
    uint32_t align[4];
    alignments(p, align);
    for (int i = 0; i < 4; ++i)
      if (align[i] < call.algoAlign[i]) {
        FUSERT_RETURN_IF_ERROR(pickAlgo(call, p));
        break;
      }
    const void *c = p.c ? p.c : p.d;
    FUSERT_RETURN_IF_ERROR(cublasStatus(
        cublasLtMatmul(lt_, op_, alpha, p.b, call.first, p.a, call.second, beta,
                       c, call.c, p.d, call.d, &call.algo, workspace,
                       workspaceBytes_, stream),
        "cublasLtMatmul"));
  }
  return Status();
}

} // namespace fusec::rt
