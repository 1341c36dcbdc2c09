//===- GemmPlan.cpp - A manifest gemm step as a cached cuBLASLt matmul -===//
//
// See GemmPlan.h for the row-major to column-major mapping. Descriptors are
// built once at load; the heuristic result is cached and only recomputed when
// a run's pointers are less aligned than the ones it was chosen for.
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

} // namespace

GemmPlan::~GemmPlan() {
  if (first_)
    cublasLtMatrixLayoutDestroy(first_);
  if (second_)
    cublasLtMatrixLayoutDestroy(second_);
  if (c_)
    cublasLtMatrixLayoutDestroy(c_);
  if (d_)
    cublasLtMatrixLayoutDestroy(d_);
  if (op_)
    cublasLtMatmulDescDestroy(op_);
}

Status GemmPlan::init(cublasLtHandle_t lt, const GemmDesc &desc,
                      const GemmPointers &ptrs, size_t workspaceBytes) {
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

  cudaDataType_t type = cudaType(g.dtype);
  // Row-major B is [k,n] (or [n,k] if transposed); read column-major it is
  // n x k with ld n (or k x n with ld k).
  FUSERT_RETURN_IF_ERROR(makeLayout(first_, type, g.transB ? g.k : g.n,
                                    g.transB ? g.n : g.k, g.transB ? g.k : g.n,
                                    g.batch, g.strideB, "layout of b"));
  FUSERT_RETURN_IF_ERROR(makeLayout(second_, type, g.transA ? g.m : g.k,
                                    g.transA ? g.k : g.m, g.transA ? g.m : g.k,
                                    g.batch, g.strideA, "layout of a"));
  FUSERT_RETURN_IF_ERROR(makeLayout(c_, type, g.n, g.m, g.n, g.batch,
                                    g.c >= 0 ? g.strideC : g.strideD,
                                    "layout of c"));
  FUSERT_RETURN_IF_ERROR(
      makeLayout(d_, type, g.n, g.m, g.n, g.batch, g.strideD, "layout of d"));
  return pickAlgo(ptrs);
}

void GemmPlan::alignments(const GemmPointers &ptrs, uint32_t out[4]) const {
  size_t elem = fusert_dtype_size(desc_.dtype);
  bool batched = desc_.batch > 1;
  auto stride = [&](int64_t s) {
    return batched ? s * static_cast<int64_t>(elem) : 0;
  };
  out[0] = alignmentOf(ptrs.b, stride(desc_.strideB));
  out[1] = alignmentOf(ptrs.a, stride(desc_.strideA));
  out[2] = ptrs.c ? alignmentOf(ptrs.c, stride(desc_.strideC))
                  : alignmentOf(ptrs.d, stride(desc_.strideD));
  out[3] = alignmentOf(ptrs.d, stride(desc_.strideD));
}

Status GemmPlan::pickAlgo(const GemmPointers &ptrs) {
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
        cublasLtMatmulAlgoGetHeuristic(lt_, op_, first_, second_, c_, d_, pref,
                                       1, &result, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  cublasLtMatmulPreferenceDestroy(pref);
  FUSERT_RETURN_IF_ERROR(status);
  if (found == 0)
    return Status(FUSERT_CUBLAS_ERROR,
                  strCat("no cuBLASLt algorithm for ", fusert_dtype_name(desc_.dtype),
                         " gemm m=", desc_.m, " n=", desc_.n, " k=", desc_.k,
                         " batch=", desc_.batch));
  algo_ = result.algo;
  for (int i = 0; i < 4; ++i)
    algoAlign_[i] = align[i];
  return Status();
}

Status GemmPlan::run(const GemmPointers &ptrs, void *workspace,
                     cudaStream_t stream) {
  uint32_t align[4];
  alignments(ptrs, align);
  for (int i = 0; i < 4; ++i)
    if (align[i] < algoAlign_[i]) {
      FUSERT_RETURN_IF_ERROR(pickAlgo(ptrs));
      break;
    }
  if (ptrs.bias)
    FUSERT_RETURN_IF_ERROR(cublasStatus(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &ptrs.bias, sizeof(ptrs.bias)),
        "set BIAS_POINTER"));
  bool f64 = desc_.dtype == FUSERT_F64;
  const void *alpha = f64 ? static_cast<const void *>(&alphaD_) : &alphaF_;
  const void *beta = f64 ? static_cast<const void *>(&betaD_) : &betaF_;
  const void *c = ptrs.c ? ptrs.c : ptrs.d;
  return cublasStatus(cublasLtMatmul(lt_, op_, alpha, ptrs.b, first_, ptrs.a,
                                     second_, beta, c, c_, ptrs.d, d_, &algo_,
                                     workspace, workspaceBytes_, stream),
                      "cublasLtMatmul");
}

} // namespace fusec::rt
