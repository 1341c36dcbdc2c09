//===- Profile.cpp - Per-step timing report of a profiled artifact run -===//
//
// Static step costs, medians and the JSON report (see Profile.h). No CUDA.
//
//===----------------------------------------------------------------------===//
#include "runtime/internal/Profile.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

namespace fusec::rt {

namespace {

uint64_t bytesOfDistinct(const Manifest &m, const std::vector<int> &ids) {
  std::set<int> seen;
  uint64_t total = 0;
  for (int id : ids) {
    if (id < 0 || m.bufferIndex(id) < 0 || !seen.insert(id).second)
      continue;
    total += m.buffer(id).bytes;
  }
  return total;
}

} // namespace

const char *stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::kKernel:
    return "kernel";
  case StepKind::kGemm:
    return "gemm";
  case StepKind::kConv:
    return "conv";
  case StepKind::kCopy:
    return "copy";
  }
  return "?";
}

StepCost stepCost(const Manifest &m, const StepDesc &step) {
  StepCost cost;
  switch (step.kind) {
  case StepKind::kKernel:
    cost.bytes = bytesOfDistinct(m, step.buffers);
    break;
  case StepKind::kGemm: {
    const GemmDesc &g = step.gemm;
    cost.bytes = bytesOfDistinct(m, {g.a, g.b, g.c, g.d, g.bias});
    cost.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                 static_cast<double>(g.k) * static_cast<double>(g.batch);
    break;
  }
  case StepKind::kConv: {
    const ConvDesc &c = step.conv;
    cost.bytes = bytesOfDistinct(m, {c.x, c.w, c.bias, c.y});
    double perOutput = 1;
    for (size_t i = 1; i < c.wShape.size(); ++i)
      perOutput *= static_cast<double>(c.wShape[i]);
    cost.flops = 2.0 * static_cast<double>(numElements(c.yShape)) * perOutput;
    break;
  }
  case StepKind::kCopy:
    cost.bytes = 2 * step.bytes;
    break;
  }
  return cost;
}

double median(std::vector<float> values) {
  if (values.empty())
    return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double hi = values[mid];
  if (values.size() % 2 == 1)
    return hi;
  double lo = *std::max_element(values.begin(), values.begin() + mid);
  return (lo + hi) / 2;
}

void StepProfile::reset(size_t numSteps) {
  samples_.assign(numSteps, {});
  runs_ = 0;
}

void StepProfile::addRun(const std::vector<float> &stepUs) {
  if (stepUs.size() != samples_.size())
    return;
  for (size_t i = 0; i < stepUs.size(); ++i)
    samples_[i].push_back(stepUs[i]);
  ++runs_;
}

std::string formatProfileJson(const Manifest &m, const StepProfile &profile) {
  nlohmann::json steps = nlohmann::json::array();
  double total = 0;
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepDesc &s = m.steps[i];
    StepCost cost = stepCost(m, s);
    double med = 0, lo = 0;
    if (i < profile.numSteps() && !profile.samples(i).empty()) {
      const std::vector<float> &v = profile.samples(i);
      med = median(v);
      lo = *std::min_element(v.begin(), v.end());
    }
    total += med;
    steps.push_back({{"index", i},
                     {"name", s.name},
                     {"kind", stepKindName(s.kind)},
                     {"median_us", med},
                     {"min_us", lo},
                     {"bytes", cost.bytes},
                     {"flops", cost.flops}});
  }
  nlohmann::json report = {{"model", m.model},
                           {"runs", profile.runs()},
                           {"total_us", total},
                           {"steps", std::move(steps)}};
  // Replace invalid UTF-8 in names rather than throwing.
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace fusec::rt
