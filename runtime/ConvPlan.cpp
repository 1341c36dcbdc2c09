//===- ConvPlan.cpp - A manifest conv step as a cached cuDNN convolution -===//
//
// Uses cuDNN's descriptor API (cudnnConvolutionForward), then adds the bias
// with cudnnAddTensor. f32 convolutions use FMA math (no TF32) so results
// match the reference interpreter; f16/bf16 may use tensor cores.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/ConvPlan.h"

#include <vector>

namespace fusec::rt {
namespace {

cudnnDataType_t cudnnType(fusert_dtype dtype) {
  switch (dtype) {
  case FUSERT_F16:
    return CUDNN_DATA_HALF;
  case FUSERT_BF16:
    return CUDNN_DATA_BFLOAT16;
  case FUSERT_F64:
    return CUDNN_DATA_DOUBLE;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

std::vector<int> toInt(const std::vector<int64_t> &v) {
  return std::vector<int>(v.begin(), v.end());
}

Status setPacked(cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                 const std::vector<int> &dims) {
  std::vector<int> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return cudnnStatus(cudnnSetTensorNdDescriptor(desc, type,
                                                static_cast<int>(dims.size()),
                                                dims.data(), strides.data()),
                     "cudnnSetTensorNdDescriptor");
}

} // namespace

Status cudnnStatus(cudnnStatus_t err, const std::string &what) {
  if (err == CUDNN_STATUS_SUCCESS)
    return Status();
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  return Status(FUSERT_CUDNN_ERROR, strCat(what, ": ", cudnnGetErrorString(err),
                                           detail[0] ? " (" : "", detail,
                                           detail[0] ? ")" : ""));
}

ConvPlan::~ConvPlan() {
  if (x_)
    cudnnDestroyTensorDescriptor(x_);
  if (y_)
    cudnnDestroyTensorDescriptor(y_);
  if (bias_)
    cudnnDestroyTensorDescriptor(bias_);
  if (w_)
    cudnnDestroyFilterDescriptor(w_);
  if (conv_)
    cudnnDestroyConvolutionDescriptor(conv_);
}

Status ConvPlan::init(cudnnHandle_t handle, const ConvDesc &desc,
                      size_t maxWorkspace) {
  handle_ = handle;
  type_ = cudnnType(desc.dtype);
  size_t spatial = desc.xShape.size() - 2;
  std::vector<int> pads, strides, dilations;
  for (size_t i = 0; i < spatial; ++i) {
    if (desc.pads[i] != desc.pads[i + spatial])
      return invalidArgument("asymmetric pads are not supported by cuDNN; the "
                             "code generator must pad explicitly");
    pads.push_back(static_cast<int>(desc.pads[i]));
    strides.push_back(static_cast<int>(desc.strides[i]));
    dilations.push_back(static_cast<int>(desc.dilations[i]));
  }
  std::vector<int> x = toInt(desc.xShape), w = toInt(desc.wShape),
                   y = toInt(desc.yShape);
  if (spatial == 1) { // cuDNN wants at least 4-D tensors
    x.push_back(1);
    w.push_back(1);
    y.push_back(1);
    pads.push_back(0);
    strides.push_back(1);
    dilations.push_back(1);
  }
  std::vector<int> b(y.size(), 1);
  b[1] = y[1];

  FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnCreateTensorDescriptor(&x_), "create x"));
  FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnCreateTensorDescriptor(&y_), "create y"));
  FUSERT_RETURN_IF_ERROR(
      cudnnStatus(cudnnCreateTensorDescriptor(&bias_), "create bias"));
  FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnCreateFilterDescriptor(&w_), "create w"));
  FUSERT_RETURN_IF_ERROR(
      cudnnStatus(cudnnCreateConvolutionDescriptor(&conv_), "create conv"));
  FUSERT_RETURN_IF_ERROR(setPacked(x_, type_, x));
  FUSERT_RETURN_IF_ERROR(setPacked(y_, type_, y));
  FUSERT_RETURN_IF_ERROR(setPacked(bias_, type_, b));
  FUSERT_RETURN_IF_ERROR(cudnnStatus(
      cudnnSetFilterNdDescriptor(w_, type_, CUDNN_TENSOR_NCHW,
                                 static_cast<int>(w.size()), w.data()),
      "cudnnSetFilterNdDescriptor"));
  cudnnDataType_t accum =
      desc.dtype == FUSERT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  FUSERT_RETURN_IF_ERROR(cudnnStatus(
      cudnnSetConvolutionNdDescriptor(conv_, static_cast<int>(pads.size()),
                                      pads.data(), strides.data(),
                                      dilations.data(),
                                      CUDNN_CROSS_CORRELATION, accum),
      "cudnnSetConvolutionNdDescriptor"));
  FUSERT_RETURN_IF_ERROR(cudnnStatus(
      cudnnSetConvolutionGroupCount(conv_, static_cast<int>(desc.group)),
      "cudnnSetConvolutionGroupCount"));
  cudnnMathType_t math = (desc.dtype == FUSERT_F16 || desc.dtype == FUSERT_BF16)
                             ? CUDNN_TENSOR_OP_MATH
                             : CUDNN_FMA_MATH;
  FUSERT_RETURN_IF_ERROR(cudnnStatus(cudnnSetConvolutionMathType(conv_, math),
                                     "cudnnSetConvolutionMathType"));

  int outDims[8] = {0};
  FUSERT_RETURN_IF_ERROR(cudnnStatus(
      cudnnGetConvolutionNdForwardOutputDim(conv_, x_, w_,
                                            static_cast<int>(y.size()), outDims),
      "cudnnGetConvolutionNdForwardOutputDim"));
  for (size_t i = 0; i < y.size(); ++i)
    if (outDims[i] != y[i])
      return invalidArgument("cuDNN computes output dim ", i, " = ", outDims[i],
                             ", manifest y_shape says ", y[i]);

  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  FUSERT_RETURN_IF_ERROR(cudnnStatus(
      cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                             &count, perf),
      "cudnnGetConvolutionForwardAlgorithm_v7"));
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        perf[i].memory <= maxWorkspace) {
      algo_ = perf[i].algo;
      workspaceBytes_ = perf[i].memory;
      // Keep the math type the heuristic assumed for this algorithm.
      return cudnnStatus(cudnnSetConvolutionMathType(conv_, perf[i].mathType),
                         "cudnnSetConvolutionMathType");
    }
  return Status(FUSERT_CUDNN_ERROR,
                "no cuDNN forward algorithm fits the workspace limit");
}

Status ConvPlan::run(const void *x, const void *w, const void *bias, void *y,
                     void *workspace) const {
  float oneF = 1.0f, zeroF = 0.0f;
  double oneD = 1.0, zeroD = 0.0;
  bool f64 = type_ == CUDNN_DATA_DOUBLE;
  const void *one = f64 ? static_cast<const void *>(&oneD) : &oneF;
  const void *zero = f64 ? static_cast<const void *>(&zeroD) : &zeroF;
  FUSERT_RETURN_IF_ERROR(cudnnStatus(
      cudnnConvolutionForward(handle_, one, x_, x, w_, w, conv_, algo_,
                              workspace, workspaceBytes_, zero, y_, y),
      "cudnnConvolutionForward"));
  if (!bias)
    return Status();
  return cudnnStatus(cudnnAddTensor(handle_, one, bias_, bias, one, y_, y),
                     "cudnnAddTensor");
}

} // namespace fusec::rt
