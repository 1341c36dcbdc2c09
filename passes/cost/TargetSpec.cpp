//===- TargetSpec.cpp - Roofline parameters of a target -------------------===//
//
// Parses target_spec.proto text (google::protobuf::TextFormat) into the
// TargetSpec struct and serves the built-in targets, whose text is compiled
// into the binary (internal/BuiltinTargets.h).
//
//===----------------------------------------------------------------------===//
#include "passes/cost/TargetSpec.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/cost/internal/BuiltinTargets.h"
#include "support/Status.h"
#include "target_spec.pb.h"

namespace fusec::passes {
namespace {

/// Collects protobuf text-format diagnostics as "line:col: message".
class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    errors_.push_back(absl::StrCat(line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string &message) override {}
  std::string str() const { return absl::StrJoin(errors_, "; "); }

 private:
  std::vector<std::string> errors_;
};

double lookupRate(const std::map<ir::DType, double> &rates, ir::DType t) {
  if (auto it = rates.find(t); it != rates.end()) return it->second;
  if (auto it = rates.find(ir::DType::kF32); it != rates.end()) return it->second;
  return rates.empty() ? 0.0 : rates.begin()->second;
}

absl::Status convertRates(const google::protobuf::RepeatedPtrField<cost::FlopRate> &in,
                          const char *what, std::map<ir::DType, double> &peak,
                          std::map<ir::DType, double> &datasheet) {
  if (in.empty()) return absl::InvalidArgumentError(absl::StrCat("no ", what, " rates"));
  for (const cost::FlopRate &r : in) {
    std::optional<ir::DType> t = ir::dtypeFromName(r.dtype());
    if (!t)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rate has unknown dtype '", r.dtype(), "'"));
    if (!(r.flops() > 0))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rate for ", r.dtype(), " must be positive"));
    if (peak.count(*t))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rate for ", r.dtype(), " given twice"));
    peak[*t] = r.flops();
    datasheet[*t] = r.datasheet_flops() > 0 ? r.datasheet_flops() : r.flops();
  }
  return absl::OkStatus();
}

}  // namespace

double TargetSpec::matrixFlops(ir::DType t) const { return lookupRate(peakMatrixFlops, t); }
double TargetSpec::vectorFlops(ir::DType t) const { return lookupRate(peakVectorFlops, t); }

absl::StatusOr<TargetSpec> parseTargetSpec(const std::string &text) {
  cost::TargetSpecProto proto;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &proto))
    return absl::InvalidArgumentError(absl::StrCat("bad target spec: ", errors.str()));

  TargetSpec spec;
  spec.name = proto.name();
  spec.backend = proto.backend();
  spec.arch = proto.arch();
  if (spec.name.empty()) return absl::InvalidArgumentError("target spec has no name");
  auto fail = [&](const std::string &msg) {
    return absl::InvalidArgumentError(absl::StrCat("target '", spec.name, "': ", msg));
  };
  if (spec.backend != "cuda" && spec.backend != "nki")
    return fail(absl::StrCat("backend must be \"cuda\" or \"nki\", got \"", spec.backend, "\""));
  if (!(proto.memory_bandwidth() > 0)) return fail("memory_bandwidth must be positive");
  spec.memoryBandwidth = proto.memory_bandwidth();
  spec.datasheetMemoryBandwidth = proto.datasheet_memory_bandwidth() > 0
                                      ? proto.datasheet_memory_bandwidth()
                                      : proto.memory_bandwidth();
  if (absl::Status s = convertRates(proto.matrix(), "matrix", spec.peakMatrixFlops,
                                    spec.datasheetMatrixFlops);
      !s.ok())
    return fail(std::string(s.message()));
  if (absl::Status s = convertRates(proto.vector(), "vector", spec.peakVectorFlops,
                                    spec.datasheetVectorFlops);
      !s.ok())
    return fail(std::string(s.message()));
  if (proto.on_chip_bytes_per_unit() < 0 || proto.num_units() < 0 || proto.l2_bytes() < 0)
    return fail("on_chip_bytes_per_unit, num_units and l2_bytes must not be negative");
  spec.onChipBytesPerUnit = proto.on_chip_bytes_per_unit();
  spec.numUnits = proto.num_units();
  spec.l2Bytes = proto.l2_bytes();
  spec.sources.assign(proto.sources().begin(), proto.sources().end());
  return spec;
}

std::vector<std::string> builtinTargetNames() {
  std::vector<std::string> names;
  for (const internal::BuiltinTargetText &t : internal::builtinTargetTexts())
    names.push_back(t.name);
  return names;
}

absl::StatusOr<TargetSpec> loadBuiltinTarget(const std::string &name) {
  for (const internal::BuiltinTargetText &t : internal::builtinTargetTexts()) {
    if (name != t.name) continue;
    FUSEC_ASSIGN_OR_RETURN(TargetSpec spec, parseTargetSpec(t.text));
    FUSEC_RET_CHECK(spec.name == name, "built-in target file '", name,
                    ".textproto' names itself '", spec.name, "'");
    return spec;
  }
  return absl::NotFoundError(absl::StrCat("unknown target '", name, "' (known: ",
                                          absl::StrJoin(builtinTargetNames(), ", "), ")"));
}

}  // namespace fusec::passes
