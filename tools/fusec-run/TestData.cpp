//===- TestData.cpp - The ONNX backend-test data layout, for fusec-run ---===//
#include "tools/fusec-run/TestData.h"

#include <filesystem>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx/OnnxImporter.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::tools {
namespace fs = std::filesystem;

absl::StatusOr<std::vector<NamedTensor>> loadSeries(const std::string &dir, const std::string &prefix) {
  std::vector<NamedTensor> out;
  std::error_code ec;
  for (int i = 0;; ++i) {
    fs::path p = fs::path(dir) / absl::StrCat(prefix, "_", i, ".pb");
    if (!fs::exists(p, ec)) break;
    std::string name;
    FUSEC_ASSIGN_OR_RETURN(ir::Tensor t, frontend::loadTensorProtoFile(p.string(), &name));
    out.emplace_back(name, std::move(t));
  }
  // A file numbered past the first missing index.
  const std::regex pattern(prefix + "_([0-9]+)\\.pb");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string file = it->path().filename().string();
    if (!std::regex_match(file, m, pattern)) continue;
    if (m[1].str().size() > 9 || std::stoll(m[1].str()) >= static_cast<long long>(out.size()))
      return absl::InvalidArgumentError(absl::StrCat(
          printable(file), " in '", printable(dir), "' follows a gap: ", prefix, "_", out.size(),
          ".pb is missing (the files are numbered from 0 without gaps)"));
  }
  return out;
}

absl::StatusOr<std::vector<int>> matchSeries(const std::vector<NamedTensor> &data,
                                             const std::vector<std::string> &slots, const std::string &prefix) {
  std::vector<int> taken(slots.size(), -1);
  std::vector<bool> used(data.size(), false);
  auto slotNamed = [&](const std::string &name) -> int {
    for (size_t j = 0; j < slots.size(); ++j)
      if (!name.empty() && slots[j] == name) return static_cast<int>(j);
    return -1;
  };
  for (size_t k = 0; k < data.size(); ++k) {
    const int j = slotNamed(data[k].first);
    if (j >= 0 && taken[j] < 0) {
      taken[j] = static_cast<int>(k);
      used[k] = true;
    }
  }
  for (size_t k = 0; k < data.size(); ++k) {
    if (used[k] || k >= slots.size() || taken[k] >= 0 || slotNamed(data[k].first) >= 0) continue;
    taken[k] = static_cast<int>(k);
    used[k] = true;
  }
  for (size_t k = 0; k < data.size(); ++k) {
    if (used[k]) continue;
    std::vector<std::string> names;
    for (const std::string &s : slots) names.push_back(absl::StrCat("'", printable(s), "'"));
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "_", k, ".pb", data[k].first.empty() ? "" : absl::StrCat(" ('", printable(data[k].first), "')"),
        " matches no ", prefix, " of the model by name or position (its ", prefix, "s: ",
        absl::StrJoin(names, ", "), ")"));
  }
  return taken;
}

}  // namespace fusec::tools
