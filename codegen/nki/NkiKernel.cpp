//===- NkiKernel.cpp - A KernelSpec as an @nki.jit kernel --------------===//
//
// See NkiKernel.h for the tiling. Values: every expression of the body is
// one SBUF tile in fp32 (the engines compute in fp32, NKI.md section 4):
// element tiles [P_TILE, FREE] for values that vary along the free axis,
// row tiles [P_TILE, 1] for per-row values (statistics, reduction results),
// numbers for constants. Unary ops run on ScalarE (nisa.activation),
// binary ops on VectorE (nisa.tensor_tensor; nisa.tensor_scalar when one
// side is a row tile or a number), reductions with nisa.tensor_reduce over
// the free axis, selects with nisa.tensor_copy_predicated.
//
//===----------------------------------------------------------------------===//
#include "codegen/nki/NkiKernel.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "codegen/nki/NkiAccess.h"
#include "codegen/nki/NkiTiling.h"
#include "support/Status.h"

namespace fusec::codegen::nki {
namespace {

using program::BinaryOp;
using program::Expr;
using program::ExprKind;
using program::KernelSpec;
using program::ReduceKind;
using program::ScalarType;
using program::UnaryOp;

class Printer {
 public:
  /// \p measureOnly: print() keeps no text and reuses no tile (legality:
  /// checkNkiKernel); it only sums the SBUF its tile allocations would take
  /// with none reused (sbufUpperBound()).
  Printer(const KernelSpec &spec, const AccessPlan &plan, const Tiling &t, const Limits &lim,
          bool measureOnly = false)
      : spec_(spec), plan_(plan), t_(t), lim_(lim), measureOnly_(measureOnly) {}

  absl::StatusOr<std::string> print(const std::string &symbol, const std::vector<std::string> &comment);
  /// SBUF bytes per partition of the printed kernel's tiles, dead tiles
  /// reused (reuseDeadTiles); set by print() (not in measure-only mode).
  int64_t sbufBytes() const { return sbufBytes_; }
  /// SBUF bytes per partition of every tile allocated, none reused: >= sbufBytes().
  int64_t sbufUpperBound() const { return sbufUpperBound_; }

 private:
  enum Level { kNumber = 0, kRow = 1, kElem = 2 };
  struct Val {
    std::string name;  ///< tile variable, or the number's literal
    Level level = kNumber;
  };

  void line(const std::string &s) {
    sbufUpperBound_ += tileAllocationBytes(s, t_.freeTile);
    if (!measureOnly_) body_ += std::string(indent_, ' ') + s + "\n";
  }
  std::string tmp() { return absl::StrCat("t", next_++); }
  std::string slice(const std::string &name, Level l) const {
    return l == kElem ? absl::StrCat(name, "[0:ps, 0:fs]") : absl::StrCat(name, "[0:ps, 0:1]");
  }
  std::string ref(const Val &v) const { return v.level == kNumber ? v.name : slice(v.name, v.level); }
  /// A new fp32 (or \p dtype) SBUF tile of level \p l.
  std::string alloc(Level l, const std::string &dtype = "nl.float32") {
    std::string n = tmp();
    line(absl::StrCat(n, " = nl.ndarray((P_TILE, ", l == kElem ? "FREE_TILE" : "1", "), dtype=", dtype,
                      ", buffer=nl.sbuf)"));
    return n;
  }
  /// Numbers for constants; element tiles for what varies along the free
  /// axis; row tiles for the rest.
  Level levelOf(int id) {
    const Expr &e = spec_.expr(id);
    if (e.kind == ExprKind::kConst) return kNumber;
    return dependsOnFree(id) ? kElem : kRow;
  }
  bool dependsOnFree(int id) {
    if (auto it = free_.find(id); it != free_.end()) return it->second;
    const Expr &e = spec_.expr(id);
    bool dep = false;
    if (e.kind == ExprKind::kIndex) {
      dep = t_.free >= 0 && std::count(plan_.dims[t_.free].loopDims.begin(),
                                       plan_.dims[t_.free].loopDims.end(), static_cast<int>(e.ival)) != 0;
    } else if (e.kind != ExprKind::kReduceResult) {
      for (int o : e.operands) dep = dep || dependsOnFree(o);
      if (e.guard >= 0) dep = dep || dependsOnFree(e.guard);
    }
    free_[id] = dep;
    return dep;
  }
  /// The box of access \p ai on tile dim \p td as [lo, hi), or nothing when
  /// the access covers the whole dim.
  bool boxOf(int ai, int td, int64_t *lo, int64_t *hi) const {
    const Access &a = plan_.accesses[ai];
    if (a.lo.empty() || td < 0) return false;
    const TileDim &d = plan_.dims[td];
    if (d.loopDims.size() != 1) return false;  // merged dims are never cut
    int ld = d.loopDims[0];
    if (a.lo[ld] == 0 && a.hi[ld] == spec_.dims[ld].extent) return false;
    *lo = a.lo[ld];
    *hi = a.hi[ld];
    return true;
  }
  /// Emits the bounds of access \p ai's box within the current tile:
  /// pl/ph (partitions) and fl/fh (free), and opens an `if` when the box is
  /// cut on an outer dim or may miss the tile. \returns the number of
  /// indentation levels opened.
  int openBox(int ai, Level l, std::string *pl, std::string *ph, std::string *fl, std::string *fh);
  /// \p v as a tile of level \p l (numbers memset, rows broadcast).
  Val materialize(const Val &v, Level l) {
    if (v.level == l) return v;
    std::string n = alloc(l);
    if (v.level == kNumber) {
      line(absl::StrCat("nisa.memset(dst=", slice(n, l), ", value=", v.name, ")"));
    } else {  // row -> element: 0 + row, broadcast along the free axis
      line(absl::StrCat("nisa.memset(dst=", slice(n, l), ", value=0.0)"));
      line(absl::StrCat("nisa.tensor_scalar(dst=", slice(n, l), ", data=", slice(n, l),
                        ", op0=nl.add, operand0=", ref(v), ")"));
    }
    return {n, l};
  }
  /// \p a <op> \p b on tiles of the higher level (tensor_tensor, or
  /// tensor_scalar against a row tile or a number).
  Val binop(const char *op, Val a, Val b) {
    if (a.level == kNumber && b.level == kNumber) a = materialize(a, kRow);
    const Level l = std::max(a.level, b.level);
    std::string n = alloc(l);
    if (a.level == b.level) {
      line(absl::StrCat("nisa.tensor_tensor(dst=", slice(n, l), ", data1=", ref(a), ", data2=", ref(b), ", op=", op,
                        ")"));
    } else if (a.level > b.level) {
      line(absl::StrCat("nisa.tensor_scalar(dst=", slice(n, l), ", data=", ref(a), ", op0=", op, ", operand0=",
                        ref(b), ")"));
    } else {
      line(absl::StrCat("nisa.tensor_scalar(dst=", slice(n, l), ", data=", ref(b), ", op0=", op, ", operand0=",
                        ref(a), ", reverse0=True)"));
    }
    return {n, l};
  }
  std::string offsetExpr(int accessIndex, const std::string &pl = "0", const std::string &fl = "0") const;
  /// Reduction \p r over the free extent of the current tile (the whole row
  /// or one chunk) as a row tile.
  Val reduceTile(int r);
  /// Sum reductions whose body ScalarE computes with its fused free-axis
  /// add-reduction (NKI.md section 4, activation reduce_op/reduce_res):
  /// act(e - row) as activation(bias = -row), act(e), e * e as nl.square.
  /// \returns false when the body has none of these forms. With \p sum
  /// null, only act(e - row) / act(e + row) (one ScalarE op, bias = -row / row).
  bool fusedActivationSum(int body, Val *sum);
  /// Emits store \p s when its level (element or row) is \p want.
  void store(int s, Level want);
  /// Opens a loop over the row chunks (chunked tilings): f0/fs of chunk jf.
  void openChunkLoop(const char *range, const std::string &what);
  /// Closes it: values computed inside are out of scope afterwards.
  void closeChunkLoop();
  /// Pass of each reduction: 0 when its body reads no reduction result,
  /// else one more than the latest pass it reads.
  std::vector<int> reductionPasses() const;
  Val load(int id);
  /// Tiling::residentLoads: allocates an fp32 [P_TILE, COLS] SBUF row per
  /// element load and fills it chunk by chunk from HBM (pass 0); load()
  /// then copies chunks from it.
  void loadResidentRows();
  Val value(int id);
  /// value() of \p id once its operands are printed (valueOf prints them
  /// first, from an explicit stack: a long elementwise chain nests
  /// thousands of expressions deep).
  Val valueOf(int id);
  Val index(int dim);

  const KernelSpec &spec_;
  const AccessPlan &plan_;
  const Tiling &t_;
  const Limits &lim_;
  std::string body_;
  int indent_ = 4;
  int next_ = 0;
  std::map<int, Val> memo_;
  std::map<int, Val> reductions_;
  std::map<int, bool> free_;
  std::vector<int> scoped_;  ///< memo_ entries made inside the open chunk loop
  bool inChunk_ = false;
  int64_t sbufBytes_ = 0;
  const bool measureOnly_;
  int64_t sbufUpperBound_ = 0;
  std::map<int, std::string> resident_;  ///< access -> its SBUF-resident row
  bool residentReady_ = false;
  int64_t residentBytes_ = 0;
};

void Printer::loadResidentRows() {
  std::vector<int> rows;
  for (size_t ai = 0; ai < plan_.accesses.size(); ++ai) {
    const Access &a = plan_.accesses[ai];
    if (a.store >= 0 || a.dead || a.gatherDim >= 0 || !a.lo.empty() || levelOf(a.expr) != kElem) continue;
    const std::string r = absl::StrCat("row", ai);
    line(absl::StrCat(r, " = nl.ndarray((P_TILE, COLS), dtype=nl.float32, buffer=nl.sbuf)  # b", a.buffer,
                      " rows, resident in SBUF"));
    residentBytes_ += 4 * t_.cols;
    resident_[static_cast<int>(ai)] = r;
    rows.push_back(static_cast<int>(ai));
  }
  if (rows.empty()) return;
  openChunkLoop("nl.affine_range", "pass 0: the rows into SBUF (the one read of the inputs from HBM)");
  for (int ai : rows) {
    const Val v = value(plan_.accesses[ai].expr);
    line(absl::StrCat("nisa.tensor_copy(dst=", resident_[ai], "[0:ps, f0:f0 + fs], src=", ref(v), ")"));
  }
  closeChunkLoop();
  residentReady_ = true;
}

int Printer::openBox(int ai, Level l, std::string *pl, std::string *ph, std::string *fl, std::string *fh) {
  *pl = "0";
  *ph = "ps";
  *fl = "0";
  *fh = l == kElem ? "fs" : "1";
  std::vector<std::string> conds;
  int64_t lo, hi;
  for (size_t k = 0; k < t_.outer.size(); ++k)
    if (boxOf(ai, t_.outer[k], &lo, &hi)) conds.push_back(absl::StrCat(lo, " <= o", k, " < ", hi));
  if (boxOf(ai, t_.partition, &lo, &hi)) {
    *pl = absl::StrCat("pl", ai);
    *ph = absl::StrCat("ph", ai);
    line(absl::StrCat(*pl, " = max(p0, ", lo, ") - p0"));
    line(absl::StrCat(*ph, " = min(p0 + ps, ", hi, ") - p0"));
    conds.push_back(absl::StrCat(*pl, " < ", *ph));
  }
  if (l == kElem && boxOf(ai, t_.free, &lo, &hi)) {
    *fl = absl::StrCat("fl", ai);
    *fh = absl::StrCat("fh", ai);
    line(absl::StrCat(*fl, " = max(f0, ", lo, ") - f0"));
    line(absl::StrCat(*fh, " = min(f0 + fs, ", hi, ") - f0"));
    conds.push_back(absl::StrCat(*fl, " < ", *fh));
  }
  if (conds.empty()) return 0;
  line(absl::StrCat("if ", absl::StrJoin(conds, " and "), ":"));
  indent_ += 4;
  return 1;
}

std::string Printer::offsetExpr(int ai, const std::string &pl, const std::string &fl) const {
  const std::string p = pl == "0" ? "p0" : absl::StrCat("(p0 + ", pl, ")");
  const std::string f = fl == "0" ? "f0" : absl::StrCat("(f0 + ", fl, ")");
  std::vector<std::string> terms;
  const Access &a = plan_.accesses[ai];
  if (a.base) terms.push_back(std::to_string(a.base));
  for (size_t k = 0; k < t_.outer.size(); ++k) {
    int64_t s = plan_.dims[t_.outer[k]].stride[ai];
    if (s) terms.push_back(absl::StrCat(s, " * o", k));
  }
  if (t_.partition >= 0 && plan_.dims[t_.partition].stride[ai])
    terms.push_back(absl::StrCat(plan_.dims[t_.partition].stride[ai], " * ", p));
  if (t_.free >= 0 && plan_.dims[t_.free].stride[ai])
    terms.push_back(absl::StrCat(plan_.dims[t_.free].stride[ai], " * ", f));
  return terms.empty() ? "0" : absl::StrJoin(terms, " + ");
}

Printer::Val Printer::load(int id) {
  int ai = -1;
  for (size_t i = 0; i < plan_.accesses.size(); ++i)
    if (plan_.accesses[i].expr == id) ai = static_cast<int>(i);
  const Access &a = plan_.accesses[ai];
  if (a.dead) return {"0.0", kNumber};  // the guard never holds: Pad/Concat zeros
  if (auto it = resident_.find(ai); residentReady_ && it != resident_.end()) {
    const std::string f = alloc(kElem);
    line(absl::StrCat("nisa.tensor_copy(dst=", slice(f, kElem), ", src=", it->second,
                      "[0:ps, f0:f0 + fs])  # a chunk of the resident row"));
    return {f, kElem};
  }
  const Level l = levelOf(id) == kNumber ? kRow : levelOf(id);
  const std::string dt = nlDType(spec_.buffers[a.buffer].dtype);
  int64_t sp = t_.partition >= 0 ? plan_.dims[t_.partition].stride[ai] : 0;
  int64_t sf = t_.free >= 0 ? plan_.dims[t_.free].stride[ai] : 0;
  std::string raw;
  std::vector<int> freeDims = t_.free >= 0 ? plan_.dims[t_.free].loopDims : std::vector<int>{};
  const bool rowGather = a.gathers.size() == 1 && sp == 0 && !usesDims(spec_, a.gatherExpr, freeDims);
  if (a.gatherDim >= 0 && !rowGather) {
    // Element gather: the flat offset of every element as an int32 tile
    // (iota for the affine part + gathered index * stride), then one
    // indirect DMA per free column from the buffer viewed as [N, 1].
    std::string oi = alloc(l, "nl.int32");
    line(absl::StrCat("nisa.iota(dst=", slice(oi, l), ", pattern=[[", l == kElem ? sf : 0, ", ",
                      l == kElem ? "fs" : "1", "]], offset=", offsetExpr(ai), ", channel_multiplier=", sp, ")"));
    std::string of = alloc(l);
    line(absl::StrCat("nisa.tensor_copy(dst=", slice(of, l), ", src=", slice(oi, l), ")"));
    for (const auto &[gexpr, gstride] : a.gathers) {
      Val g = materialize(value(gexpr), l);
      line(absl::StrCat("nisa.scalar_tensor_tensor(dst=", slice(of, l), ", data=", ref(g),
                        ", op0=nl.multiply, operand0=", number(static_cast<double>(gstride)),
                        ", op1=nl.add, operand1=", slice(of, l), ")"));
    }
    line(absl::StrCat("nisa.tensor_copy(dst=", slice(oi, l), ", src=", slice(of, l), ")"));
    int64_t numel = 1;
    for (int64_t x : spec_.buffers[a.buffer].shape) numel *= x;
    raw = alloc(l, dt);
    line(absl::StrCat("flat", ai, " = b", a.buffer, ".reshape((", numel, ", 1))"));
    line(absl::StrCat("for j in nl.affine_range(", l == kElem ? "fs" : "1", "):"));
    line(absl::StrCat("    nisa.dma_copy(dst=", raw, "[0:ps, j:j + 1], src=flat", ai,
                      ".ap(pattern=[[1, ps], [1, 1]], offset=0, vector_offset=", oi,
                      "[0:ps, j:j + 1], indirect_dim=0))  # gather"));
  } else if (a.gatherDim >= 0) {
    // Row gather (NKI.md section 2, access patterns): the gathered index is a
    // per-row value; vector_offset starts partition p's row at it.
    Val idx = value(a.gatherExpr);
    if (idx.level == kNumber) idx = materialize(idx, kRow);
    std::string it = alloc(kRow, "nl.int32");
    line(absl::StrCat("nisa.tensor_copy(dst=", slice(it, kRow), ", src=", ref(idx), ")"));
    raw = alloc(l, dt);
    std::string pattern = l == kElem ? absl::StrCat("[[", a.gatherStride, ", ps], [", sf, ", fs]]")
                                     : absl::StrCat("[[", a.gatherStride, ", ps], [1, 1]]");
    line(absl::StrCat("nisa.dma_copy(dst=", slice(raw, l), ", src=b", a.buffer, ".ap(pattern=", pattern,
                      ", offset=", offsetExpr(ai), ", vector_offset=", slice(it, kRow), ", indirect_dim=",
                      a.gatherDim, "))  # gather"));
  } else {
    raw = alloc(l, dt);
    std::string pl, ph, fl, fh;
    const bool boxed = !a.lo.empty();
    if (boxed) line(absl::StrCat("nisa.memset(dst=", slice(raw, l), ", value=0)  # zero outside the guard"));
    int opened = boxed ? openBox(ai, l, &pl, &ph, &fl, &fh) : 0;
    if (!boxed) { pl = "0"; ph = "ps"; fl = "0"; fh = l == kElem ? "fs" : "1"; }
    auto span = [](const std::string &lo, const std::string &hi) {
      return lo == "0" ? hi : absl::StrCat(hi, " - ", lo);
    };
    std::string pattern = absl::StrCat("[[", sp, ", ", span(pl, ph), "], [", l == kElem ? sf : 1, ", ",
                                       span(fl, fh), "]]");
    line(absl::StrCat("nisa.dma_copy(dst=", raw, "[", pl, ":", ph, ", ", fl, ":", fh, "], src=b", a.buffer,
                      ".ap(pattern=", pattern, ", offset=", offsetExpr(ai, pl, l == kElem ? fl : "0"), "))"));
    indent_ -= 4 * opened;
  }
  if (dt == "nl.float32") return {raw, l};
  std::string f = alloc(l);
  line(absl::StrCat("nisa.tensor_copy(dst=", slice(f, l), ", src=", slice(raw, l), ")"));
  return {f, l};
}

Printer::Val Printer::index(int dim) {
  // Value-used dims are never merged, so exactly one TileDim covers `dim`.
  for (size_t k = 0; k < t_.outer.size(); ++k)
    for (int d : plan_.dims[t_.outer[k]].loopDims)
      if (d == dim) return {absl::StrCat("float(o", k, ")"), kNumber};
  const bool onPartition =
      t_.partition >= 0 && plan_.dims[t_.partition].loopDims == std::vector<int>{dim};
  const bool onFree = t_.free >= 0 && plan_.dims[t_.free].loopDims == std::vector<int>{dim};
  if (!onPartition && !onFree) return {"0.0", kNumber};  // an extent-1 dim
  const Level l = onFree ? kElem : kRow;
  std::string it = alloc(l, "nl.int32");
  line(absl::StrCat("nisa.iota(dst=", slice(it, l), ", pattern=[[", onFree ? 1 : 0, ", ",
                    l == kElem ? "fs" : "1", "]], offset=", onFree ? "f0" : "p0",
                    ", channel_multiplier=", onPartition ? 1 : 0, ")"));
  std::string f = alloc(l);
  line(absl::StrCat("nisa.tensor_copy(dst=", slice(f, l), ", src=", slice(it, l), ")"));
  return {f, l};
}

Printer::Val Printer::value(int id) {
  if (auto it = memo_.find(id); it != memo_.end()) return it->second;
  // Operands first, children before parents and in operand order, as the
  // recursion of valueOf would print them; then id itself.
  auto composite = [&](int x) {
    const ExprKind k = spec_.expr(x).kind;
    return k == ExprKind::kUnary || k == ExprKind::kBinary || k == ExprKind::kSelect ||
           k == ExprKind::kCast;
  };
  std::vector<std::pair<int, size_t>> stack = {{id, 0}};
  std::set<int> pushed = {id};
  while (!stack.empty()) {
    const int x = stack.back().first;
    const std::vector<int> &ops = spec_.expr(x).operands;
    if (composite(x) && stack.back().second < ops.size()) {
      const int o = ops[stack.back().second++];
      if (!memo_.count(o) && pushed.insert(o).second) stack.push_back({o, 0});
      continue;
    }
    stack.pop_back();
    if (memo_.count(x)) continue;
    memo_[x] = valueOf(x);
    if (inChunk_) scoped_.push_back(x);  // out of scope when the chunk loop closes
  }
  return memo_.at(id);
}

Printer::Val Printer::valueOf(int id) {
  const Expr &e = spec_.expr(id);
  Val out;
  switch (e.kind) {
    case ExprKind::kConst:
      out = {number(e.type == ScalarType::kF32 || e.type == ScalarType::kF64 ? e.fval
                                                                              : static_cast<double>(e.ival)),
             kNumber};
      break;
    case ExprKind::kIndex: out = index(static_cast<int>(e.ival)); break;
    case ExprKind::kLoad: out = load(id); break;
    case ExprKind::kReduceResult: out = reductions_.at(static_cast<int>(e.ival)); break;
    // Dynamic shapes are refused by NkiBackend::emit before any spec gets
    // here (only program::buildSymbolicProgram makes kSymbol expressions).
    case ExprKind::kSymbol: out = {number(0), kNumber}; break;
    case ExprKind::kUnary: {
      if (fusedActivationSum(id, nullptr)) return memo_.at(id);  // act(e - row): bias = -row
      Val a = value(e.operands[0]);
      if (a.level == kNumber) a = materialize(a, kRow);
      auto op = static_cast<UnaryOp>(e.op);
      std::string n = alloc(a.level);
      std::string dst = slice(n, a.level);
      if (const char *act = activationOf(op)) {
        line(absl::StrCat("nisa.activation(dst=", dst, ", op=", act, ", data=", ref(a), ")"));
      } else if (op == UnaryOp::kNeg) {
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.multiply, operand0=-1.0)"));
      } else if (op == UnaryOp::kNot) {
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.equal, operand0=0.0)"));
      } else if (op == UnaryOp::kIsNaN) {
        line(absl::StrCat("nisa.tensor_tensor(dst=", dst, ", data1=", ref(a), ", data2=", ref(a),
                          ", op=nl.not_equal)"));
      } else if (op == UnaryOp::kSin || op == UnaryOp::kCos) {
        // ScalarE's sin is defined on [-pi, pi]: reduce the argument first,
        // mod(x + pi (+ pi/2 for cos), 2 pi) - pi.
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.add, operand0=",
                          op == UnaryOp::kSin ? "3.14159265" : "4.71238898", ", op1=nl.mod, operand1=6.28318531)"));
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", dst, ", op0=nl.subtract, operand0=3.14159265)"));
        line(absl::StrCat("nisa.activation(dst=", dst, ", op=nl.sin, data=", dst, ")"));
      } else if (op == UnaryOp::kIsPosInf || op == UnaryOp::kIsNegInf) {
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.equal, operand0=",
                          op == UnaryOp::kIsPosInf ? "float(\"inf\")" : "-float(\"inf\")", ")"));
      } else if (op == UnaryOp::kFloor) {  // x - mod(x, 1): mod takes the divisor's sign
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.mod, operand0=1.0)"));
        line(absl::StrCat("nisa.tensor_tensor(dst=", dst, ", data1=", ref(a), ", data2=", dst, ", op=nl.subtract)"));
      } else if (op == UnaryOp::kCeil) {  // x + mod(-x, 1)
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.multiply, operand0=-1.0, "
                          "op1=nl.mod, operand1=1.0)"));
        line(absl::StrCat("nisa.tensor_tensor(dst=", dst, ", data1=", ref(a), ", data2=", dst, ", op=nl.add)"));
      } else if (op == UnaryOp::kLog1p) {
        line(absl::StrCat("nisa.tensor_scalar(dst=", dst, ", data=", ref(a), ", op0=nl.add, operand0=1.0)"));
        line(absl::StrCat("nisa.activation(dst=", dst, ", op=nl.log, data=", dst, ")"));
      } else {  // kRoundBF16 / kRoundF16: a store to the narrow dtype and back
        std::string narrow = alloc(a.level, op == UnaryOp::kRoundBF16 ? "nl.bfloat16" : "nl.float16");
        line(absl::StrCat("nisa.tensor_copy(dst=", slice(narrow, a.level), ", src=", ref(a), ")"));
        line(absl::StrCat("nisa.tensor_copy(dst=", dst, ", src=", slice(narrow, a.level), ")"));
      }
      out = {n, a.level};
      break;
    }
    case ExprKind::kBinary: {
      Val a = value(e.operands[0]), b = value(e.operands[1]);
      auto op = static_cast<BinaryOp>(e.op);
      if (op == BinaryOp::kDiv && isIntegerType(e.type)) {
        // Truncating integer division on exact fp32 integers: (a - fmod(a, b)) / b.
        out = binop("nl.divide", binop("nl.subtract", a, binop("nl.fmod", a, b)), b);
      } else {
        out = binop(aluOf(op), a, b);
      }
      break;
    }
    case ExprKind::kSelect: {
      Val c = value(e.operands[0]), a = value(e.operands[1]), b = value(e.operands[2]);
      Level l = std::max({c.level, a.level, b.level, kRow});
      Val cm = materialize(c, l), bm = materialize(b, l);
      std::string n = alloc(l);
      std::string pred = alloc(l, "nl.uint8");
      line(absl::StrCat("nisa.tensor_copy(dst=", slice(pred, l), ", src=", ref(cm), ")"));
      line(absl::StrCat("nisa.tensor_copy(dst=", slice(n, l), ", src=", ref(bm), ")"));
      std::string src = a.level == kNumber ? a.name : ref(materialize(a, l));
      line(absl::StrCat("nisa.tensor_copy_predicated(dst=", slice(n, l), ", src=", src,
                        ", predicate=", slice(pred, l), ")"));
      out = {n, l};
      break;
    }
    case ExprKind::kCast: {
      Val a = value(e.operands[0]);
      if (e.type == ScalarType::kBool && spec_.expr(e.operands[0]).type != ScalarType::kBool) {
        if (a.level == kNumber) a = materialize(a, kRow);
        std::string n = alloc(a.level);
        line(absl::StrCat("nisa.tensor_scalar(dst=", slice(n, a.level), ", data=", ref(a),
                          ", op0=nl.not_equal, operand0=0.0)"));
        out = {n, a.level};
      } else if (isIntegerType(e.type) && !isIntegerType(spec_.expr(e.operands[0]).type) &&
                 spec_.expr(e.operands[0]).type != ScalarType::kBool) {
        out = binop("nl.subtract", a, binop("nl.fmod", a, {"1.0", kNumber}));  // truncation toward 0
      } else {
        out = a;  // every value is an fp32 tile; integer and bool values are exact in it
      }
      break;
    }
  }
  return out;
}

bool Printer::fusedActivationSum(int body, Val *sum) {
  if (memo_.count(body)) return false;
  const bool reduce = sum != nullptr;
  const Expr &e = spec_.expr(body);
  const char *act = nullptr;
  int data = -1, bias = -1;
  bool negate = false;
  if (e.kind == ExprKind::kUnary && (act = activationOf(static_cast<UnaryOp>(e.op)))) {
    data = e.operands[0];
    const Expr &x = spec_.expr(data);
    if (!memo_.count(data) && x.kind == ExprKind::kBinary &&
        (x.op == static_cast<int>(BinaryOp::kSub) || x.op == static_cast<int>(BinaryOp::kAdd))) {
      int a = x.operands[0], b = x.operands[1];
      if (x.op == static_cast<int>(BinaryOp::kAdd) && levelOf(a) != kElem) std::swap(a, b);
      if (levelOf(a) == kElem && levelOf(b) != kElem) {
        data = a;
        bias = b;
        negate = x.op == static_cast<int>(BinaryOp::kSub);
      }
    }
  } else if (reduce && e.kind == ExprKind::kBinary && e.op == static_cast<int>(BinaryOp::kMul) &&
             e.operands[0] == e.operands[1]) {
    act = "nl.square";
    data = e.operands[0];
  } else {
    return false;
  }
  if (!reduce && bias < 0) return false;
  Val d = materialize(value(data), kElem);
  std::string biasArg;
  if (bias >= 0) {
    Val b = value(bias);
    if (b.level == kNumber) b = materialize(b, kRow);  // a [P, 1] bias works on every target
    if (negate) {
      std::string n = alloc(kRow);
      line(absl::StrCat("nisa.tensor_scalar(dst=", slice(n, kRow), ", data=", ref(b),
                        ", op0=nl.multiply, operand0=-1.0)"));
      b = {n, kRow};
    }
    biasArg = absl::StrCat(", bias=", ref(b));
  }
  std::string out = alloc(kElem);
  if (reduce) {
    std::string res = alloc(kRow);
    line(absl::StrCat("nisa.activation(dst=", slice(out, kElem), ", op=", act, ", data=", ref(d), biasArg,
                      ", reduce_op=nl.add, reduce_res=", slice(res, kRow),
                      ", reduce_cmd=nisa.reduce_cmd.reset_reduce)  # ScalarE with its fused row sum"));
    *sum = {res, kRow};
  } else {
    line(absl::StrCat("nisa.activation(dst=", slice(out, kElem), ", op=", act, ", data=", ref(d), biasArg, ")"));
  }
  memo_[body] = {out, kElem};
  if (inChunk_) scoped_.push_back(body);
  return true;
}

Printer::Val Printer::reduceTile(int r) {
  const program::Reduction &red = spec_.reductions[r];
  Val n;
  if (red.kind == ReduceKind::kSum && fusedActivationSum(red.body, &n)) return n;
  Val body = materialize(value(red.body), kElem);
  const bool arg = red.kind == ReduceKind::kArgMax || red.kind == ReduceKind::kArgMin;
  const char *op = red.kind == ReduceKind::kSum                                     ? "nl.add"
                   : red.kind == ReduceKind::kMax || red.kind == ReduceKind::kArgMax ? "nl.maximum"
                   : red.kind == ReduceKind::kMin || red.kind == ReduceKind::kArgMin ? "nl.minimum"
                                                                                     : "nl.multiply";
  n = {alloc(kRow), kRow};
  line(absl::StrCat("nisa.tensor_reduce(dst=", slice(n.name, kRow), ", op=", op, ", data=", ref(body),
                    ", axis=1)  # reduction ", r, " over the row"));
  if (!arg) return n;
  // The first (or last) free index where the row reaches its extreme:
  // candidates = iota where body == extreme, else past the row (or -1).
  // Whole rows only (chooseRowChunk).
  std::string eq = alloc(kElem), pred = alloc(kElem, "nl.uint8"), io = alloc(kElem, "nl.int32");
  std::string cand = alloc(kElem);
  line(absl::StrCat("nisa.tensor_scalar(dst=", slice(eq, kElem), ", data=", ref(body),
                    ", op0=nl.equal, operand0=", slice(n.name, kRow), ")"));
  line(absl::StrCat("nisa.tensor_copy(dst=", slice(pred, kElem), ", src=", slice(eq, kElem), ")"));
  line(absl::StrCat("nisa.iota(dst=", slice(io, kElem), ", pattern=[[1, fs]], offset=0, channel_multiplier=0)"));
  line(absl::StrCat("nisa.memset(dst=", slice(cand, kElem), ", value=", red.selectLastIndex ? "-1.0" : "float(COLS)",
                    ")"));
  std::string iof = alloc(kElem);
  line(absl::StrCat("nisa.tensor_copy(dst=", slice(iof, kElem), ", src=", slice(io, kElem), ")"));
  line(absl::StrCat("nisa.tensor_copy_predicated(dst=", slice(cand, kElem), ", src=", slice(iof, kElem),
                    ", predicate=", slice(pred, kElem), ")"));
  n = {alloc(kRow), kRow};
  line(absl::StrCat("nisa.tensor_reduce(dst=", slice(n.name, kRow), ", op=",
                    red.selectLastIndex ? "nl.maximum" : "nl.minimum", ", data=", slice(cand, kElem),
                    ", axis=1)  # arg index"));
  return n;
}

std::vector<int> Printer::reductionPasses() const {
  std::vector<int> pass(spec_.reductions.size(), 0);
  std::map<int, int> latest;  // expr id -> latest pass of the results it reads, -1: none
  std::function<int(int)> reads = [&](int id) {
    if (auto it = latest.find(id); it != latest.end()) return it->second;
    const Expr &e = spec_.expr(id);
    int p = e.kind == ExprKind::kReduceResult ? pass[e.ival] : -1;
    for (int o : e.operands) p = std::max(p, reads(o));
    if (e.guard >= 0) p = std::max(p, reads(e.guard));
    latest[id] = p;
    return p;
  };
  for (size_t r = 0; r < spec_.reductions.size(); ++r) pass[r] = reads(spec_.reductions[r].body) + 1;
  return pass;
}

void Printer::openChunkLoop(const char *range, const std::string &what) {
  line(absl::StrCat("for jf in ", range, "(NCHUNKS):  # ", what));
  indent_ += 4;
  line("f0 = jf * FREE_TILE");
  line("fs = min(FREE_TILE, COLS - f0)");
  inChunk_ = true;
}

void Printer::closeChunkLoop() {
  for (int id : scoped_) memo_.erase(id);
  scoped_.clear();
  inChunk_ = false;
  indent_ -= 4;
}

void Printer::store(int s, Level want) {
  const program::Store &st = spec_.stores[s];
  int ai = -1;
  for (size_t i = 0; i < plan_.accesses.size(); ++i)
    if (plan_.accesses[i].store == s) ai = static_cast<int>(i);
  if (plan_.accesses[ai].dead) return;
  int64_t sp = t_.partition >= 0 ? plan_.dims[t_.partition].stride[ai] : 0;
  int64_t sf = t_.free >= 0 ? plan_.dims[t_.free].stride[ai] : 0;
  const Level l = (sf == 0 && !dependsOnFree(st.value)) || t_.free < 0 ? kRow : kElem;
  if (l != want) return;
  Val v = materialize(value(st.value), l);
  const std::string dt = nlDType(spec_.buffers[st.buffer].dtype);
  std::string src = v.name;
  if (dt != "nl.float32") {
    std::string n = alloc(l, dt);
    line(absl::StrCat("nisa.tensor_copy(dst=", slice(n, l), ", src=", ref(v), ")"));
    src = n;
  }
  std::string pl = "0", ph = "ps", fl = "0", fh = l == kElem ? "fs" : "1";
  int opened = plan_.accesses[ai].lo.empty() ? 0 : openBox(ai, l, &pl, &ph, &fl, &fh);
  auto span = [](const std::string &lo, const std::string &hi) {
    return lo == "0" ? hi : absl::StrCat(hi, " - ", lo);
  };
  std::string pattern = absl::StrCat("[[", sp, ", ", span(pl, ph), "], [", l == kElem ? sf : 1, ", ",
                                     span(fl, fh), "]]");
  line(absl::StrCat("nisa.dma_copy(dst=b", st.buffer, ".ap(pattern=", pattern, ", offset=",
                    offsetExpr(ai, pl, l == kElem ? fl : "0"), "), src=", src, "[", pl, ":", ph, ", ", fl,
                    ":", fh, "])"));
  indent_ -= 4 * opened;
}

absl::StatusOr<std::string> Printer::print(const std::string &symbol,
                                           const std::vector<std::string> &comment) {
  std::string head;
  for (const std::string &c : comment) head += absl::StrCat("# ", c, "\n");
  std::vector<std::string> inputs, outputs;
  for (int b = 0; b < static_cast<int>(spec_.buffers.size()); ++b)
    (spec_.buffers[b].written ? outputs : inputs).push_back(absl::StrCat("b", b));
  head += absl::StrCat("@nki.jit\ndef ", symbol, "(", absl::StrJoin(inputs, ", "), "):\n");
  head += absl::StrCat("    P_TILE = ", lim_.partitions, "  # rows per tile (partitions)\n");
  head += absl::StrCat("    FREE_TILE = ", t_.freeTile,
                       !t_.reduce   ? "  # elements per partition\n"
                       : t_.residentLoads ? "  # a chunk of the row: the passes walk the SBUF-resident rows\n"
                       : t_.chunked ? "  # a chunk of the row: the row is streamed through SBUF\n"
                                    : "  # a whole row per partition\n");
  head += absl::StrCat("    ROWS = ", t_.rows, "\n    COLS = ", t_.cols, "\n");
  if (t_.chunked) head += "    NCHUNKS = (COLS + FREE_TILE - 1) // FREE_TILE\n";
  for (int b = 0; b < static_cast<int>(spec_.buffers.size()); ++b) {
    const program::BufferDesc &d = spec_.buffers[b];
    if (!d.written) continue;
    std::vector<std::string> dims;
    for (int64_t x : d.shape) dims.push_back(std::to_string(x));
    head += absl::StrCat("    b", b, " = nl.ndarray((", absl::StrJoin(dims, ", "), dims.size() == 1 ? "," : "",
                         "), dtype=", nlDType(d.dtype), ", buffer=nl.shared_hbm)\n");
  }
  for (size_t k = 0; k < t_.outer.size(); ++k) {
    line(absl::StrCat("for o", k, " in nl.affine_range(", plan_.dims[t_.outer[k]].extent, "):"));
    indent_ += 4;
  }
  line("for ip in nl.affine_range((ROWS + P_TILE - 1) // P_TILE):");
  indent_ += 4;
  line("p0 = ip * P_TILE");
  line("ps = min(P_TILE, ROWS - p0)");
  if (t_.chunked) {
    // Pass k reduces the chunks into accumulators ([P_TILE, 1] fp32, carried
    // from chunk to chunk: sequential_range) for the reductions whose
    // bodies read results of passes before k only; the last pass stores.
    if (t_.residentLoads) loadResidentRows();
    const std::vector<int> pass = reductionPasses();
    const int passes = pass.empty() ? 0 : *std::max_element(pass.begin(), pass.end()) + 1;
    for (int k = 0; k < passes; ++k) {
      std::vector<int> mine;
      std::map<int, std::string> acc;
      for (int r = 0; r < static_cast<int>(pass.size()); ++r) {
        if (pass[r] != k) continue;
        mine.push_back(r);
        const ReduceKind kind = spec_.reductions[r].kind;
        acc[r] = alloc(kRow);
        line(absl::StrCat("nisa.memset(dst=", slice(acc[r], kRow), ", value=",
                          kind == ReduceKind::kSum   ? "0.0"
                          : kind == ReduceKind::kMax ? "-float(\"inf\")"
                          : kind == ReduceKind::kMin ? "float(\"inf\")"
                                                     : "1.0",
                          ")  # reduction ", r, " accumulator"));
      }
      openChunkLoop("nl.sequential_range",
                    absl::StrCat("pass ", k + 1, ": reduction", mine.size() > 1 ? "s " : " ",
                                 absl::StrJoin(mine, ", "), " over the row chunks"));
      for (int r : mine) {
        const ReduceKind kind = spec_.reductions[r].kind;
        Val part = reduceTile(r);
        line(absl::StrCat("nisa.tensor_tensor(dst=", slice(acc[r], kRow), ", data1=", slice(acc[r], kRow),
                          ", data2=", ref(part), ", op=",
                          kind == ReduceKind::kSum   ? "nl.add"
                          : kind == ReduceKind::kMax ? "nl.maximum"
                          : kind == ReduceKind::kMin ? "nl.minimum"
                                                     : "nl.multiply",
                          ")"));
      }
      closeChunkLoop();
      for (int r : mine) reductions_[r] = {acc[r], kRow};
    }
    openChunkLoop("nl.affine_range", absl::StrCat("pass ", passes + 1, ": the stores"));
    for (int st = 0; st < static_cast<int>(spec_.stores.size()); ++st) store(st, kElem);
    closeChunkLoop();
    for (int st = 0; st < static_cast<int>(spec_.stores.size()); ++st) store(st, kRow);
  } else {
    if (t_.reduce) {
      line("f0 = 0");
      line("fs = COLS");
    } else {
      line("for jf in nl.affine_range((COLS + FREE_TILE - 1) // FREE_TILE):");
      indent_ += 4;
      line("f0 = jf * FREE_TILE");
      line("fs = min(FREE_TILE, COLS - f0)");
    }
    for (int r = 0; r < static_cast<int>(spec_.reductions.size()); ++r) reductions_[r] = reduceTile(r);
    for (int st = 0; st < static_cast<int>(spec_.stores.size()); ++st) {
      store(st, kElem);
      store(st, kRow);
    }
  }
  sbufUpperBound_ += residentBytes_;
  if (measureOnly_) return std::string();
  std::string ret = outputs.size() == 1 ? outputs[0] : absl::StrCat("(", absl::StrJoin(outputs, ", "), ")");
  std::string body = reuseDeadTiles(body_, t_.freeTile, &sbufBytes_);
  sbufBytes_ += residentBytes_;
  return head + body + "    return " + ret + "\n";
}

}  // namespace

std::string nlDType(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return "nl.float32";
    case ir::DType::kF16: return "nl.float16";
    case ir::DType::kBF16: return "nl.bfloat16";
    case ir::DType::kI32: return "nl.int32";
    case ir::DType::kI64: return "nl.int32";
    case ir::DType::kI8: return "nl.int8";
    case ir::DType::kU8: return "nl.uint8";
    case ir::DType::kBool: return "nl.uint8";
    default: return "";
  }
}

namespace {

/// What the printer can lower, short of the SBUF budget; \p planOut and
/// \p tilingOut receive the access plan and tiling it chose.
absl::Status checkLowered(const KernelSpec &spec, const Limits &lim, AccessPlan *planOut, Tiling *tilingOut) {
  FUSEC_RETURN_IF_ERROR(checkOps(spec));
  for (const program::BufferDesc &b : spec.buffers)
    if (b.written)
      for (int id = 0; id < static_cast<int>(spec.exprs.size()); ++id)
        if (spec.expr(id).kind == ExprKind::kLoad && spec.buffers[spec.expr(id).ival].written)
          return absl::UnimplementedError("a kernel that reads its own output is not lowered for nki");
  FUSEC_ASSIGN_OR_RETURN(AccessPlan plan, analyzeAccesses(spec));
  FUSEC_ASSIGN_OR_RETURN(Tiling t, chooseTiling(spec, plan, lim));
  for (size_t ai = 0; ai < plan.accesses.size(); ++ai) {
    const Access &a = plan.accesses[ai];
    if (a.gatherDim < 0) continue;
    int64_t numel = 1;
    for (int64_t x : spec.buffers[a.buffer].shape) numel *= x;
    if (numel >= (int64_t{1} << 24))
      return absl::UnimplementedError(
          "an element gather from a buffer of 2^24 or more elements (offsets computed in fp32)");
  }
  *planOut = std::move(plan);
  *tilingOut = std::move(t);
  return absl::OkStatus();
}

/// The kernel text, or Unimplemented when it is not lowered or its tiles
/// (dead ones reused, exactly as printed) exceed the SBUF budget.
absl::StatusOr<std::string> printDirect(const KernelSpec &spec, const Limits &lim, const std::string &symbol,
                                        const std::vector<std::string> &comment) {
  AccessPlan plan;
  Tiling t;
  FUSEC_RETURN_IF_ERROR(checkLowered(spec, lim, &plan, &t));
  Printer p(spec, plan, t, lim);
  FUSEC_ASSIGN_OR_RETURN(std::string text, p.print(symbol, comment));
  const int64_t budget = sbufBudgetBytes(lim);
  if (p.sbufBytes() > budget)
    return absl::UnimplementedError(absl::StrCat("the kernel needs ", p.sbufBytes(),
                                                 " bytes of SBUF per partition, budget ", budget,
                                                 " (half the usable SBUF)"));
  return text;
}

/// OK when printDirect() would print \p spec: checked without keeping any
/// text when the kernel fits SBUF even with no tile reused (most kernels);
/// otherwise by printing it and reusing dead tiles exactly as emit() does.
absl::Status checkDirect(const KernelSpec &spec, const Limits &lim) {
  AccessPlan plan;
  Tiling t;
  FUSEC_RETURN_IF_ERROR(checkLowered(spec, lim, &plan, &t));
  Printer measure(spec, plan, t, lim, /*measureOnly=*/true);
  FUSEC_RETURN_IF_ERROR(measure.print("check", {}).status());
  if (measure.sbufUpperBound() <= sbufBudgetBytes(lim)) return absl::OkStatus();
  Printer p(spec, plan, t, lim);
  FUSEC_RETURN_IF_ERROR(p.print("check", {}).status());
  if (p.sbufBytes() > sbufBudgetBytes(lim))
    return absl::UnimplementedError(absl::StrCat("the kernel needs ", p.sbufBytes(),
                                                 " bytes of SBUF per partition, budget ", sbufBudgetBytes(lim),
                                                 " (half the usable SBUF)"));
  return absl::OkStatus();
}

/// printDirect(), or for a row reduction it refuses whose reduced domain is
/// a small window (pooling: a padding guard that is not a box, window dims
/// that do not merge), the window unrolled into pointwise taps
/// (unrollWindow); the first refusal when neither lowers.
absl::StatusOr<std::string> printWithinBudget(const KernelSpec &spec, const Limits &lim, const std::string &symbol,
                                              const std::vector<std::string> &comment) {
  absl::StatusOr<std::string> direct = printDirect(spec, lim, symbol, comment);
  if (direct.ok() || direct.status().code() != absl::StatusCode::kUnimplemented) return direct;
  if (std::optional<KernelSpec> taps = unrollWindow(spec, kMaxWindowTaps)) {
    std::vector<std::string> lines = comment;
    lines.push_back(absl::StrCat("window reduction over ", spec.reducedSize(),
                                 " taps, unrolled: one guarded strided load per tap, combined in SBUF"));
    absl::StatusOr<std::string> unrolled = printDirect(*taps, lim, symbol, lines);
    if (unrolled.ok()) return unrolled;
  }
  return direct;
}

}  // namespace

absl::Status checkNkiKernel(const KernelSpec &spec, const Limits &lim) {
  if (spec.kind == program::SpecKind::kAttention) return checkNkiAttention(spec.attention, lim);
  absl::Status direct = checkDirect(spec, lim);
  if (direct.ok() || direct.code() != absl::StatusCode::kUnimplemented) return direct;
  if (std::optional<KernelSpec> taps = unrollWindow(spec, kMaxWindowTaps))
    if (checkDirect(*taps, lim).ok()) return absl::OkStatus();
  return direct;
}

absl::StatusOr<std::string> printNkiKernel(const KernelSpec &spec, const Limits &lim, const std::string &symbol,
                                           const std::vector<std::string> &comment) {
  if (spec.kind == program::SpecKind::kAttention) return printNkiAttention(spec.attention, lim, symbol, comment);
  return printWithinBudget(spec, lim, symbol, comment);
}

}  // namespace fusec::codegen::nki
