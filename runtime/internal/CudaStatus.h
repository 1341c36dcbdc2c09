//===- CudaStatus.h - CUDA / cuBLASLt errors as runtime statuses -===//
//
// Turns error codes of the CUDA runtime and cuBLASLt into Status values that
// carry the library's own name and description of the error.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_CUDASTATUS_H
#define FUSEC_RUNTIME_INTERNAL_CUDASTATUS_H

#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "runtime/internal/Status.h"

namespace fusec::rt {

/// \returns OK for cudaSuccess, else FUSERT_CUDA_ERROR "\p what: <name>
/// (<description>)".
inline Status cudaStatus(cudaError_t err, const std::string &what) {
  if (err == cudaSuccess)
    return Status();
  return Status(FUSERT_CUDA_ERROR, strCat(what, ": ", cudaGetErrorName(err),
                                          " (", cudaGetErrorString(err), ")"));
}

/// \returns OK for CUBLAS_STATUS_SUCCESS, else FUSERT_CUBLAS_ERROR.
inline Status cublasStatus(cublasStatus_t err, const std::string &what) {
  if (err == CUBLAS_STATUS_SUCCESS)
    return Status();
  return Status(FUSERT_CUBLAS_ERROR,
                strCat(what, ": ", cublasLtGetStatusName(err), " (",
                       cublasLtGetStatusString(err), ")"));
}

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_CUDASTATUS_H
