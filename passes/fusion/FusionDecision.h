//===- FusionDecision.h - Yes, or no with a reason --------------*- C++ -*-===//
//
// Every fusibility predicate returns a FusionDecision: either "fuse", or
// "don't" with a human-readable reason that --dump-fusion prints and lit
// tests check. Combinators keep the first refusal.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_FUSION_FUSIONDECISION_H
#define FUSEC_PASSES_FUSION_FUSIONDECISION_H

#include <string>
#include <utility>

namespace fusec::passes {

class FusionDecision {
 public:
  static FusionDecision yes() { return FusionDecision(); }
  static FusionDecision no(std::string reason) { return FusionDecision(std::move(reason)); }

  bool canFuse() const { return reason_.empty(); }
  explicit operator bool() const { return canFuse(); }
  /// Why not; empty when canFuse().
  const std::string &reason() const { return reason_; }

  /// This decision if it refuses, otherwise \p other.
  FusionDecision operator&&(const FusionDecision &other) const {
    return canFuse() ? other : *this;
  }

 private:
  FusionDecision() = default;
  explicit FusionDecision(std::string r) : reason_(std::move(r)) {
    if (reason_.empty()) reason_ = "refused";
  }
  std::string reason_;
};

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_FUSION_FUSIONDECISION_H
