//===- SymExtent.cpp - Symbolic extents ----------------------------------===//
#include "program/SymExtent.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fusec::program {

SymExtent SymExtent::constant(int64_t value) {
  SymExtent e;
  e.coeff_ = value;
  return e;
}

SymExtent SymExtent::symbol(const std::string &name) {
  SymExtent e;
  e.symbols_.push_back(name);
  return e;
}

SymExtent SymExtent::plus(int64_t d) const {
  SymExtent e = *this;
  if (e.symbols_.empty()) e.coeff_ += d;
  else e.offset_ += d;
  return e;
}

SymExtent SymExtent::operator*(const SymExtent &other) const {
  SymExtent e;
  e.coeff_ = coeff_ * other.coeff_;
  if (e.coeff_ == 0) return e;  // 0 * anything is the static 0
  e.symbols_ = symbols_;
  e.symbols_.insert(e.symbols_.end(), other.symbols_.begin(), other.symbols_.end());
  std::sort(e.symbols_.begin(), e.symbols_.end());
  return e;
}

std::optional<int64_t> SymExtent::evaluate(const std::map<std::string, int64_t> &bindings) const {
  int64_t v = coeff_;
  for (const std::string &s : symbols_) {
    auto it = bindings.find(s);
    if (it == bindings.end()) return std::nullopt;
    v *= it->second;
  }
  return v + offset_;
}

std::string SymExtent::str() const {
  if (symbols_.empty()) return absl::StrCat(coeff_);
  std::string s = absl::StrJoin(symbols_, "*");
  s = coeff_ == 1 ? s : absl::StrCat(coeff_, "*", s);
  if (offset_ > 0) absl::StrAppend(&s, "+", offset_);
  if (offset_ < 0) absl::StrAppend(&s, offset_);
  return s;
}

SymExtent product(const std::vector<SymExtent> &dims, size_t b, size_t e) {
  SymExtent p = SymExtent::constant(1);
  for (size_t i = b; i < std::min(e, dims.size()); ++i) p = p * dims[i];
  return p;
}

}  // namespace fusec::program
