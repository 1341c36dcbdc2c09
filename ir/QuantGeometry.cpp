//===- QuantGeometry.cpp - QuantizeLinear / DequantizeLinear parameters ---===//
#include "ir/QuantGeometry.h"

#include "absl/strings/str_cat.h"

namespace fusec::ir {
namespace {

absl::Status bad(const std::string &why) { return absl::InvalidArgumentError(why); }

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) absl::StrAppend(&out, i ? "," : "", s[i] < 0 ? "?" : absl::StrCat(s[i]));
  return out + "]";
}

}  // namespace

absl::StatusOr<QuantGeometry> quantGeometry(const Node &n, const std::vector<int64_t> &x,
                                            const std::vector<int64_t> &param) {
  QuantGeometry g;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t block = n.getInt("block_size", 0);
  if (block < 0) return bad(absl::StrCat("block_size = ", block, " must be >= 0"));
  int64_t count = 1;
  bool known = true;
  for (int64_t d : param) {
    if (d < 0) known = false;
    else count *= d;
  }
  if (param.empty() || (param.size() == 1 && known && count == 1)) return g;  // per tensor
  int64_t axis = n.getInt("axis", 1);
  if (axis < -rank || axis >= rank)
    return bad(absl::StrCat("axis ", axis, " is out of range for x of rank ", rank));
  if (axis < 0) axis += rank;
  g.axis = axis;
  if (block == 0) {
    if (param.size() != 1)
      return bad(absl::StrCat("a scale / zero point of shape ", shapeText(param),
                              " needs block_size > 0 (per-tensor ones hold one element, per-axis ones are 1-D)"));
    if (param[0] >= 0 && x[axis] >= 0 && param[0] != x[axis])
      return bad(absl::StrCat("per-axis scale / zero point of length ", param[0], " for x ", shapeText(x),
                              " along axis ", axis, " (extent ", x[axis], ")"));
    g.mode = QuantMode::kPerAxis;
    return g;
  }
  if (static_cast<int64_t>(param.size()) != rank)
    return bad(absl::StrCat("blocked scale / zero point of shape ", shapeText(param), " for x ", shapeText(x),
                            ": the ranks differ"));
  for (int64_t d = 0; d < rank; ++d) {
    if (param[d] < 0 || x[d] < 0) continue;
    const int64_t want = d == axis ? (x[d] + block - 1) / block : x[d];
    if (param[d] != want)
      return bad(absl::StrCat("blocked scale / zero point of shape ", shapeText(param), " for x ", shapeText(x),
                              " with block_size ", block, " along axis ", axis, ": dim ", d, " is ", param[d],
                              ", expected ", want));
  }
  g.mode = QuantMode::kBlocked;
  g.blockSize = block;
  return g;
}

bool quantRange(DType t, int64_t *lo, int64_t *hi) {
  switch (t) {
    case DType::kU8: *lo = 0; *hi = 255; return true;
    case DType::kI8: *lo = -128; *hi = 127; return true;
    case DType::kU16: *lo = 0; *hi = 65535; return true;
    case DType::kI16: *lo = -32768; *hi = 32767; return true;
    case DType::kI32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    case DType::kU32: *lo = 0; *hi = UINT32_MAX; return true;
    default: return narrowIntRange(t, lo, hi);
  }
}

absl::StatusOr<DType> quantizeResultDType(const Node &n, DType zeroPoint) {
  const int64_t code = n.getInt("output_dtype", 0);
  DType out = DType::kU8;
  if (code != 0) {
    std::optional<DType> t = dtypeFromOnnx(static_cast<int32_t>(code));
    if (!t) return bad(absl::StrCat("output_dtype ", code, " is not a dtype fusec supports"));
    out = *t;
    if (zeroPoint != DType::kUndefined && zeroPoint != out)
      return bad(absl::StrCat("output_dtype ", dtypeName(out), " differs from the zero point's dtype ",
                              dtypeName(zeroPoint)));
  } else if (zeroPoint != DType::kUndefined) {
    out = zeroPoint;
  }
  if (out != DType::kU8 && out != DType::kI8 && out != DType::kU16 && out != DType::kI16 &&
      !isNarrowInt(out) && (!isNarrowFloat(out) || out == DType::kF8E8M0))
    return bad(absl::StrCat("quantising to ", dtypeName(out),
                            " is not supported (u8, i8, u16, i16, i4, u4, i2, u2, float8 (not e8m0) "
                            "and f4e2m1 are)"));
  return out;
}

absl::StatusOr<DType> dequantizeResultDType(const Node &n, DType scale) {
  const int64_t code = n.getInt("output_dtype", 0);
  if (code == 0) {
    if (scale != DType::kUndefined && !isFloat(scale))
      return bad(absl::StrCat("a scale of dtype ", dtypeName(scale), " needs output_dtype"));
    return scale;
  }
  std::optional<DType> t = dtypeFromOnnx(static_cast<int32_t>(code));
  if (!t || !isFloat(*t)) return bad(absl::StrCat("output_dtype ", code, " is not a float dtype"));
  return *t;
}

absl::StatusOr<DType> quantizeComputeDType(const Node &n, DType x, DType scale) {
  const int64_t code = n.getInt("precision", 0);
  if (code != 0) {
    std::optional<DType> t = dtypeFromOnnx(static_cast<int32_t>(code));
    if (!t || !isFloat(*t)) return bad(absl::StrCat("precision ", code, " is not a float dtype"));
    return *t;
  }
  if (!isFloat(x)) return DType::kF64;  // numpy: int32 / float32 is float64
  if (x == scale || !isFloat(scale)) return x;  // an f8e8m0 scale: x's dtype
  auto rank = [](DType t) { return t == DType::kF64 ? 3 : t == DType::kF32 ? 2 : 1; };
  if (rank(x) == rank(scale)) return DType::kF32;  // f16 with bf16
  return rank(x) > rank(scale) ? x : scale;
}

}  // namespace fusec::ir
