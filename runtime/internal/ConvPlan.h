//===- ConvPlan.h - A manifest conv step as a cached cuDNN convolution -===//
//
// Only built when libfusert is configured with cuDNN (FUSERT_HAVE_CUDNN).
// ONNX Conv is a cross-correlation, which is cuDNN's CUDNN_CROSS_CORRELATION
// mode; 1-D convolutions are run as 2-D ones with a trailing extent of 1.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_CONVPLAN_H
#define FUSEC_RUNTIME_INTERNAL_CONVPLAN_H

#include <cstddef>

#include <cudnn.h>

#include "runtime/internal/Manifest.h"

namespace fusec::rt {

/// \returns OK for CUDNN_STATUS_SUCCESS, else FUSERT_CUDNN_ERROR with cuDNN's
/// message.
Status cudnnStatus(cudnnStatus_t err, const std::string &what);

/// The cuDNN descriptors and chosen algorithm of one conv step.
class ConvPlan {
public:
  ConvPlan() = default;
  ConvPlan(const ConvPlan &) = delete;
  ConvPlan &operator=(const ConvPlan &) = delete;
  ~ConvPlan();

  /// Creates the descriptors for \p desc and picks the fastest algorithm
  /// whose workspace is at most \p maxWorkspace bytes (cuDNN's estimate; no
  /// benchmarking). Errors: FUSERT_INVALID_ARGUMENT (asymmetric pads),
  /// FUSERT_CUDNN_ERROR.
  Status init(cudnnHandle_t handle, const ConvDesc &desc, size_t maxWorkspace);

  /// Workspace bytes the chosen algorithm needs.
  size_t workspaceBytes() const { return workspaceBytes_; }

  /// Enqueues y = conv(x, w) (+ bias) on the handle's current stream.
  /// Errors: FUSERT_CUDNN_ERROR.
  Status run(const void *x, const void *w, const void *bias, void *y,
             void *workspace) const;

private:
  cudnnHandle_t handle_ = nullptr;
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspaceBytes_ = 0;
};

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_CONVPLAN_H
