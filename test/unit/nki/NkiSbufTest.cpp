//===- NkiSbufTest.cpp - SBUF tiles of NKI kernels: reuse and the budget ===//
//
// The printer reuses dead tiles, so a long elementwise chain keeps a few
// tiles live and runs on the NumPy model of NKI; a kernel whose live tiles
// exceed the SBUF budget is refused by checkNkiKernel with the bytes it
// needs (fusion then splits it). The 1000-node ONNX chain end to end is
// run_long_chain.py (ctest nki_long_chain_1000_*).
//
//===----------------------------------------------------------------------===//
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/nki/NkiKernel.h"
#include "gtest/gtest.h"
#include "test/unit/nki/NkiTestUtil.h"

namespace fusec::codegen::nki {
namespace {

using program::BinaryOp;
using program::KernelSpec;
using program::UnaryOp;

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// y = f_n(...f_1(x)): f_i alternating +0.25, *0.75, tanh, on [rows, cols].
KernelSpec chainSpec(int64_t rows, int64_t cols, int n, ir::DType dt) {
  KernelSpec s;
  s.kind = program::SpecKind::kPointwise;
  int r = s.addDim(rows, false), c = s.addDim(cols, false);
  int x = s.addBuffer(dt, {rows, cols}, false);
  int o = s.addBuffer(dt, {rows, cols}, true);
  int v = s.load(x, {s.index(r), s.index(c)});
  for (int i = 0; i < n; ++i)
    v = i % 3 == 0   ? s.binary(BinaryOp::kAdd, v, s.constF(0.25))
        : i % 3 == 1 ? s.binary(BinaryOp::kMul, v, s.constF(0.75))
                     : s.unary(UnaryOp::kTanh, v);
  s.addStore(o, {s.index(r), s.index(c)}, v);
  return s;
}

const char *kChainCheck = R"(
x = np.random.RandomState(0).randn(256, 512).astype(np.float32)
ref = x.copy()
for i in range(1000):
    ref = (ref + np.float32(0.25)) if i % 3 == 0 else (ref * np.float32(0.75)) if i % 3 == 1 else np.tanh(ref)
)";

TEST(NkiSbuf, ThousandOpChainReusesTilesAndRuns) {
  KernelSpec s = chainSpec(256, 512, 1000, ir::DType::kF32);
  ASSERT_TRUE(checkNkiKernel(s, trn2()).ok()) << checkNkiKernel(s, trn2());
  ASSERT_TRUE(checkNkiKernel(s, trn1()).ok()) << checkNkiKernel(s, trn1());
  auto text = printNkiKernel(s, trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_LE(count(*text, "buffer=nl.sbuf"), 4) << *text;
  EXPECT_RUNS(*text, absl::StrCat(kChainCheck, R"(
np.testing.assert_allclose(k(x), ref, rtol=1e-5, atol=1e-5)
)"));
}

TEST(NkiSbuf, ThousandOpChainBf16) {
  auto text = printNkiKernel(chainSpec(256, 512, 1000, ir::DType::kBF16), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_LE(count(*text, "buffer=nl.sbuf"), 6) << *text;
  EXPECT_RUNS(*text, absl::StrCat(kChainCheck, R"(
got = k(nki.model.typed(x, nl.bfloat16))
np.testing.assert_allclose(np.asarray(got, np.float32), ref, rtol=2e-2, atol=2e-2)
)"));
}

/// y = sum_i x * c_i, summed innermost last: every product is live until
/// the end, so the kernel holds n element tiles at once.
KernelSpec fanSpec(int n) {
  KernelSpec s;
  s.kind = program::SpecKind::kPointwise;
  int r = s.addDim(256, false), c = s.addDim(512, false);
  int x = s.addBuffer(ir::DType::kF32, {256, 512}, false);
  int o = s.addBuffer(ir::DType::kF32, {256, 512}, true);
  std::vector<int> terms;
  for (int i = 0; i < n; ++i)
    terms.push_back(s.binary(BinaryOp::kMul, s.load(x, {s.index(r), s.index(c)}), s.constF(1.0 + i)));
  int v = terms.back();
  for (int i = n - 2; i >= 0; --i) v = s.binary(BinaryOp::kAdd, terms[i], v);
  s.addStore(o, {s.index(r), s.index(c)}, v);
  return s;
}

TEST(NkiSbuf, LiveTilesOverTheBudgetAreRefusedWithTheBytes) {
  // 2 KiB per fp32 element tile: trn2's budget holds a few dozen.
  absl::Status st = checkNkiKernel(fanSpec(200), trn2());
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "bytes of SBUF per partition, budget ")) << st;
  EXPECT_FALSE(printNkiKernel(fanSpec(200), trn2(), "k", {}).ok());
  // Within the budget it prints and runs.
  auto text = printNkiKernel(fanSpec(8), trn2(), "k", {});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_RUNS(*text, R"(
x = np.random.RandomState(0).randn(256, 512).astype(np.float32)
np.testing.assert_allclose(k(x), x * np.float32(36.0), rtol=1e-5, atol=1e-4)
)");
}

}  // namespace
}  // namespace fusec::codegen::nki
