//===- ConvGeometry.cpp - ConvTranspose geometry ---------------------------===//
//
// See ConvGeometry.h.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvGeometry.h"

#include "absl/strings/str_cat.h"
#include "support/Status.h"

namespace fusec::ir {

namespace {

absl::Status bad(const Node &n, const std::string &msg) {
  return absl::InvalidArgumentError(absl::StrCat(n.describe(), ": ", msg));
}

}  // namespace

absl::StatusOr<ConvTransposeGeometry> convTransposeGeometry(const Node &n,
                                                            const std::vector<int64_t> &x,
                                                            const std::vector<int64_t> &w) {
  if (x.size() < 3 || x.size() != w.size())
    return bad(n, absl::StrCat("X and W must have the same rank >= 3, got ", x.size(), " and ",
                               w.size()));
  const size_t k = x.size() - 2;
  ConvTransposeGeometry g;
  g.group = n.getInt("group", 1);
  if (g.group < 1) return bad(n, absl::StrCat("group ", g.group, " must be positive"));
  g.inChannels = x[1];
  if (w[0] >= 0 && x[1] >= 0 && w[0] != x[1])
    return bad(n, absl::StrCat("W's dim 0 (", w[0], ") must equal X's channels (", x[1], ")"));
  if (x[1] >= 0 && x[1] % g.group != 0)
    return bad(n, absl::StrCat("channels ", x[1], " not divisible by group ", g.group));
  g.outChannels = w[1] < 0 ? -1 : w[1] * g.group;
  auto list = [&](const char *name, int64_t dflt, size_t len) -> absl::StatusOr<std::vector<int64_t>> {
    std::vector<int64_t> v = n.getInts(name, std::vector<int64_t>(len, dflt));
    if (v.size() != len)
      return bad(n, absl::StrCat(name, " has ", v.size(), " values, expected ", len));
    return v;
  };
  FUSEC_ASSIGN_OR_RETURN(g.strides, list("strides", 1, k));
  FUSEC_ASSIGN_OR_RETURN(g.dilations, list("dilations", 1, k));
  std::vector<int64_t> wk(w.begin() + 2, w.end());
  FUSEC_ASSIGN_OR_RETURN(g.kernel, list("kernel_shape", 0, k));
  if (!n.hasAttr("kernel_shape")) g.kernel = wk;
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> outPad, list("output_padding", 0, k));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> pads, list("pads", 0, 2 * k));
  std::vector<int64_t> outShape = n.getInts("output_shape");
  // Some exporters write output_shape with the N and C dims in front.
  if (outShape.size() == k + 2) outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (!outShape.empty() && outShape.size() != k)
    return bad(n, absl::StrCat("output_shape has ", outShape.size(), " values, expected ", k));
  const std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER" && autoPad != "VALID")
    return bad(n, absl::StrCat("unknown auto_pad '", autoPad, "'"));
  for (size_t i = 0; i < k; ++i) {
    if (g.strides[i] < 1 || g.dilations[i] < 1)
      return bad(n, "strides and dilations must be positive");
    if (g.kernel[i] < 1 && wk[i] >= 0) return bad(n, "kernel extents must be positive");
    if (wk[i] >= 0 && g.kernel[i] != wk[i])
      return bad(n, absl::StrCat("kernel_shape ", g.kernel[i], " differs from W's extent ", wk[i]));
    if (outPad[i] < 0 || (outPad[i] >= g.strides[i] && outPad[i] >= g.dilations[i]))
      return bad(n, absl::StrCat("output_padding ", outPad[i], " must be below the stride or dilation"));
    if (pads[i] < 0 || pads[i + k] < 0) return bad(n, "pads must be non-negative");
  }
  g.inSpatial.assign(x.begin() + 2, x.end());
  g.padBegin.assign(k, 0);
  g.outSpatial.assign(k, -1);
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = g.inSpatial[i];
    const int64_t full = in < 0 || g.kernel[i] < 1
                             ? -1
                             : g.strides[i] * (in - 1) + outPad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (same) {
      const int64_t out = outShape.empty() ? (in < 0 ? -1 : in * g.strides[i]) : outShape[i];
      g.outSpatial[i] = out;
      if (full >= 0 && out >= 0) {
        const int64_t total = full - out;
        // Floor division, as the reference's // on a negative total.
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        g.padBegin[i] = autoPad == "SAME_UPPER" ? half : total - half;
      }
    } else {
      if (autoPad != "VALID") g.padBegin[i] = pads[i];
      const int64_t end = autoPad == "VALID" ? 0 : pads[i + k];
      if (!outShape.empty()) {
        g.outSpatial[i] = outShape[i];
      } else if (full >= 0) {
        const int64_t out = full - g.padBegin[i] - end;
        if (out < 0)
          return bad(n, absl::StrCat("pads ", g.padBegin[i], " + ", end, " exceed the full output extent ",
                                     full, " of spatial axis ", i));
        g.outSpatial[i] = out;
      }
    }
    if (!outShape.empty() && outShape[i] < 0)
      return bad(n, absl::StrCat("output_shape ", outShape[i], " is negative"));
  }
  return g;
}

}  // namespace fusec::ir
