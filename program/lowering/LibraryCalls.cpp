//===- LibraryCalls.cpp - GEMM and convolution parameters -------------------===//
//
// MatMul / Gemm / Conv nodes to library-call parameters.
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"

namespace fusec::program::lowering {

//===----------------------------------------------------------------------===//
// Library calls.
//===----------------------------------------------------------------------===//

/// The epilogue acc + bias[n] for an M x N GEMM with a bias of \p dt.
GemmEpilogue withBias(int64_t m, int64_t n, DType dt) {
  GemmEpilogue e = GemmEpilogue::identity(m, n);
  const int bias = e.addBias(dt);
  e.value = e.spec.binary(BinaryOp::kAdd, e.accumulator(), bias);
  return e;
}

bool gemmDtype(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

/// GEMM parameters for a MatMul / Gemm node writing \p d; nullopt if the
/// library cannot run it (batch broadcast not one strided batch, dtype).
std::optional<GemmParams> gemmFor(const Node &n, bool allowTf32) {
  const Value *a = n.input(0), *b = n.input(1);
  if (!a->type().isStatic() || !b->type().isStatic() || !n.output(0)->type().isStatic())
    return std::nullopt;
  const DType dt = a->type().dtype;
  if (!gemmDtype(dt) || b->type().dtype != dt || n.output(0)->type().dtype != dt) return std::nullopt;
  Shape as = a->type().staticShape(), bs = b->type().staticShape(), os = n.output(0)->type().staticShape();
  GemmParams g;
  g.a = a;
  g.b = b;
  g.d = n.output(0);
  g.dtype = dt;
  g.dDtype = dt;
  g.compute = allowTf32 && dt == DType::kF32 ? "tf32" : "f32";
  if (n.kind() == OpKind::kGemm) {
    if (as.size() != 2 || bs.size() != 2) return std::nullopt;
    g.transA = n.getInt("transA", 0) != 0;
    g.transB = n.getInt("transB", 0) != 0;
    g.m = g.transA ? as[1] : as[0];
    g.k = g.transA ? as[0] : as[1];
    g.n = g.transB ? bs[0] : bs[1];
    g.alpha = n.getFloat("alpha", 1.0f);
    g.strideA = g.m * g.k;
    g.strideB = g.k * g.n;
    g.strideD = g.m * g.n;
    g.epilogue = GemmEpilogue::identity(g.m, g.n);
    if (const Value *cv = n.input(2)) {
      if (!cv->type().isStatic() || cv->type().dtype != dt) return std::nullopt;
      Shape cs = cv->type().staticShape();
      const double beta = n.getFloat("beta", 1.0f);
      if (cs == Shape{g.m, g.n}) {
        g.c = cv;
        g.beta = beta;
        g.strideC = g.m * g.n;
      } else if (prod(cs) == g.n && !cs.empty() && cs.back() == g.n && beta == 1.0) {
        g.bias = cv;
        g.epilogue = withBias(g.m, g.n, dt);
      } else {
        return std::nullopt;  // broadcast C: run as a generated kernel
      }
    }
    return g;
  }
  // MatMul with numpy semantics.
  if (as.empty() || bs.empty()) return std::nullopt;
  Shape am = as.size() == 1 ? Shape{1, as[0]} : Shape(as.end() - 2, as.end());
  Shape bm = bs.size() == 1 ? Shape{bs[0], 1} : Shape(bs.end() - 2, bs.end());
  g.m = am[0];
  g.k = am[1];
  g.n = bm[1];
  Shape ab(as.begin(), as.end() - std::min<size_t>(as.size(), 2));
  Shape bb(bs.begin(), bs.end() - std::min<size_t>(bs.size(), 2));
  if (as.size() == 1) ab.clear();
  if (bs.size() == 1) bb.clear();
  const size_t nb = std::max(ab.size(), bb.size());
  Shape ob(nb, 1);
  ab.insert(ab.begin(), nb - ab.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  for (size_t i = 0; i < nb; ++i) ob[i] = std::max(ab[i], bb[i]);
  g.batch = prod(ob);
  auto strideFor = [&](const Shape &s, int64_t mat) -> std::optional<int64_t> {
    if (s == ob) return mat;
    if (prod(s) == 1) return 0;
    return std::nullopt;
  };
  auto sa = strideFor(ab, g.m * g.k), sb = strideFor(bb, g.k * g.n);
  if (!sa || !sb) return std::nullopt;
  g.strideA = g.batch > 1 ? *sa : g.m * g.k;
  g.strideB = g.batch > 1 ? *sb : g.k * g.n;
  g.strideD = g.m * g.n;
  if (g.batch > 1 && g.strideB == 0 && g.strideA == g.m * g.k) {
    // Shared B ([b.., m, k] x [k, n]): the batch's A matrices are one dense
    // [b*m, k] matrix and its D matrices one dense [b*m, n], so the batch
    // is one GEMM of b*m rows (fewer, larger library calls).
    g.m *= g.batch;
    g.batch = 1;
    g.strideA = g.m * g.k;
    g.strideB = g.k * g.n;
    g.strideD = g.m * g.n;
  }
  g.epilogue = GemmEpilogue::identity(g.m, g.n);
  return g;
}

absl::StatusOr<ConvParams> convFor(const Node &n) {
  ConvParams p;
  p.x = n.input(0);
  p.w = n.input(1);
  p.bias = n.input(2);
  p.y = n.output(0);
  FUSEC_ASSIGN_OR_RETURN(p.xShape, staticShape(p.x));
  FUSEC_ASSIGN_OR_RETURN(p.wShape, staticShape(p.w));
  FUSEC_ASSIGN_OR_RETURN(p.yShape, staticShape(p.y));
  p.dtype = p.x->type().dtype;
  if (!gemmDtype(p.dtype)) return unimplemented(n, "convolution of a non-float dtype");
  int64_t pixels = 1;
  for (size_t i = 2; i < p.yShape.size(); ++i) pixels *= p.yShape[i];
  const int64_t rows = p.yShape.empty() ? 0 : p.yShape[0] * pixels;
  const int64_t channels = p.yShape.size() > 1 ? p.yShape[1] : 0;
  p.epilogue = p.bias ? withBias(rows, channels, p.bias->type().dtype)
                      : GemmEpilogue::identity(rows, channels);
  const size_t k = p.xShape.size() - 2;
  std::vector<int64_t> ks = n.getInts("kernel_shape");
  if (ks.empty()) ks.assign(p.wShape.begin() + 2, p.wShape.end());
  p.strides = n.getInts("strides", std::vector<int64_t>(k, 1));
  p.dilations = n.getInts("dilations", std::vector<int64_t>(k, 1));
  p.pads = n.getInts("pads", std::vector<int64_t>(2 * k, 0));
  p.group = n.getInt("group", 1);
  const std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t total = std::max<int64_t>(
          0, (p.yShape[i + 2] - 1) * p.strides[i] + (ks[i] - 1) * p.dilations[i] + 1 - p.xShape[i + 2]);
      int64_t small = total / 2;
      p.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      p.pads[i + k] = total - p.pads[i];
    }
  } else if (autoPad == "VALID") {
    std::fill(p.pads.begin(), p.pads.end(), 0);
  }
  return p;
}

namespace {

/// The value \p v or, through views (metadata only, no data moved), the
/// value they alias; \returns whether that is \p target.
bool viewOf(const Value *v, const Value *target) {
  while (v && v != target && v->producer() && isViewNode(*v->producer())) v = v->producer()->input(0);
  return v == target;
}

}  // namespace

/// Folds the epilogue chain of a GEMM group (bias Add, a residual Add as C,
/// then Relu or tanh Gelu: what cuBLASLt fuses; then, when \p opts allow
/// it, a Cast to f32, possibly through views) into g.epilogue, g.c and
/// g.dDtype. \returns the final
/// Value on success.
const Value *matchGemmEpilogue(const Node &anchor, const std::vector<const Node *> &rest,
                               GemmParams &g, const LoweringOptions &opts) {
  const Value *cur = anchor.output(0);
  size_t i = 0;
  auto next = [&]() -> const Node * { return i < rest.size() ? rest[i] : nullptr; };
  const Node *n = next();
  // The operand of Add \p add that is not the chain's running result (read
  // directly, or with \p throughViews also through views of it), when it
  // is computed outside the chain (a bias, a residual); null otherwise.
  auto outsideAddend = [&](const Node &add, bool throughViews) -> const Value * {
    auto isCur = [&](const Value *v) { return throughViews ? viewOf(v, cur) : v == cur; };
    const Value *other = isCur(add.input(0)) ? add.input(1) : isCur(add.input(1)) ? add.input(0) : nullptr;
    if (!other || isCur(other)) return nullptr;
    if (other->producer() && std::find(rest.begin(), rest.end(), other->producer()) != rest.end()) return nullptr;
    return other;
  };
  if (n && n->kind() == OpKind::kAdd && g.epilogue.empty() && !g.c) {
    const Value *other = outsideAddend(*n, /*throughViews=*/false);
    if (other && other->type().isStatic() && other->type().dtype == g.dtype &&
        !other->type().shape.empty() && other->type().numElements() == g.n &&
        other->type().shape.back().value == g.n &&
        n->output(0)->type() == cur->type()) {
      g.bias = other;
      g.epilogue = withBias(g.m, g.n, g.dtype);
      cur = n->output(0);
      n = (++i, next());
    }
  }
  // A residual Add of a tensor shaped like the result: C with beta = 1.
  // The library computes act(alpha AB + beta C + bias), so C may follow
  // the bias and precede the activation (BERT's and GPT-2's output
  // projections: MatMul, bias Add, residual Add: one call, no epilogue
  // kernel).
  // Through views: GPT-2's Gemm is 2-D, its residual Add 3-D.
  if (n && n->kind() == OpKind::kAdd && !g.c) {
    const Value *other = outsideAddend(*n, /*throughViews=*/true);
    if (other && other->type().isStatic() &&
        other->type() == n->output(0)->type() && n->output(0)->type().numElements() == cur->type().numElements() &&
        other->type().dtype == g.dtype && g.batch == 1) {
      g.c = other;
      g.beta = 1.0;
      g.strideC = g.m * g.n;
      cur = n->output(0);
      n = (++i, next());
    }
  }
  if (n && (n->kind() == OpKind::kRelu ||
            (n->kind() == OpKind::kGelu && n->getString("approximate", "none") == "tanh")) &&
      viewOf(n->input(0), cur)) {
    GemmEpilogue &e = g.epilogue;
    const int x = e.current();
    e.value = n->kind() == OpKind::kRelu ? buildRelu(e.spec, x) : buildGeluTanh(e.spec, x);
    cur = n->output(0);
    n = (++i, next());
  }
  // The Cast is elementwise, so it commutes with the views between it and
  // the GEMM: D is the Cast's result, written densely like the GEMM's own.
  if (n && n->kind() == OpKind::kCast && viewOf(n->input(0), cur) &&
      foldableOutputCast(g, *n, opts).ok()) {
    g.dDtype = DType::kF32;
    cur = n->output(0);
    ++i;
  }
  return i == rest.size() ? cur : nullptr;
}

namespace {

/// Whether \p idx (one expr per dim of a buffer shaped like the domain of
/// \p s) is the domain point itself: index(d), or 0 for a dim of extent 1.
bool isDomainPoint(const KernelSpec &s, const std::vector<int> &idx) {
  if (idx.size() != s.dims.size()) return false;
  for (size_t d = 0; d < idx.size(); ++d) {
    const Expr &e = s.exprs[idx[d]];
    const bool isIndex = e.kind == ExprKind::kIndex && e.ival == static_cast<int64_t>(d);
    int64_t v = -1;
    if (!isIndex && !(s.dims[d].extent == 1 && s.isConst(idx[d], &v) && v == 0)) return false;
  }
  return true;
}

}  // namespace

namespace {

/// The loop extents of \p k's domain, or nullopt when the kernel is not a
/// pointwise kernel of one store bound to \p kernel's buffers (what an
/// epilogue can become).
std::optional<std::vector<int64_t>> pointwiseDomain(const WorkItem &kernel) {
  const KernelSpec &k = kernel.spec;
  if (kernel.kind != WorkItem::Kind::kKernel || k.kind != SpecKind::kPointwise || !k.reductions.empty() ||
      k.stores.size() != 1 || kernel.buffers.size() != k.buffers.size())
    return std::nullopt;
  std::vector<int64_t> ext;
  for (const LoopDim &d : k.dims) {
    if (d.reduced) return std::nullopt;
    ext.push_back(d.extent);
  }
  return ext;
}

/// How an epilogue reads one side buffer of the kernel it takes in: at
/// \p shape (the buffer's elements in the same order, dims merged) and
/// \p index (exprs of the epilogue's spec), for every load of it.
struct SideView {
  std::vector<int64_t> shape;
  std::vector<int> index;
};

/// Appends the stored expression of \p kernel (pointwiseDomain() holds; its
/// store at the domain point, checked by the caller) to \p e, the epilogue
/// of a library call whose accumulator is \p acc: index(d) of the kernel
/// becomes \p dimOf[d] (exprs of e.spec); a load of acc, or of a view of it,
/// at the domain point becomes the current epilogue value; a load of any
/// other buffer (read-only) a load of an epilogue buffer appended to
/// \p inputs, at the shape and index of \p views when it names the buffer,
/// else at the buffer's own with the load's index translated. \returns the
/// f32 result in e.spec, or -1 (\p e then unusable) when the kernel reads
/// acc at another point or through a guard, reads a buffer it writes, or
/// holds a reduction result or a symbol.
int translatePointwise(const WorkItem &kernel, const Value *acc, const std::vector<int> &dimOf,
                       const std::map<int, SideView> &views, GemmEpilogue &e, std::vector<const Value *> &inputs) {
  const KernelSpec &k = kernel.spec;
  KernelSpec &E = e.spec;
  const int accValue = e.current();
  std::vector<int64_t> ext;
  for (const LoopDim &d : k.dims) ext.push_back(d.extent);
  std::vector<int> map(k.exprs.size(), -1), bufOf(k.buffers.size(), -1);
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr &x = k.exprs[i];
    std::vector<int> ops;
    for (int o : x.operands) ops.push_back(map[o]);
    switch (x.kind) {
      case ExprKind::kConst:
        map[i] = x.type == ScalarType::kF32 || x.type == ScalarType::kF64 ? E.constF(x.fval, x.type)
                                                                          : E.constI(x.ival, x.type);
        break;
      case ExprKind::kIndex: map[i] = dimOf[x.ival]; break;
      case ExprKind::kLoad: {
        const int b = static_cast<int>(x.ival);
        // acc itself, or a view of it (same elements in the same order).
        const Value *root = kernel.buffers[b];
        while (root != acc && root->producer() && isViewNode(*root->producer()) && root->producer()->input(0))
          root = root->producer()->input(0);
        if (root == acc) {
          if (x.guard >= 0 || k.buffers[b].shape != ext || !isDomainPoint(k, x.operands)) return -1;
          map[i] = accValue;
          break;
        }
        if (k.buffers[b].written) return -1;
        auto view = views.find(b);
        if (bufOf[b] < 0) {
          bufOf[b] = E.addBuffer(k.buffers[b].dtype, view != views.end() ? view->second.shape : k.buffers[b].shape,
                                 false);
          inputs.push_back(kernel.buffers[b]);
        }
        map[i] = view != views.end() ? E.load(bufOf[b], view->second.index, -1)
                                     : E.load(bufOf[b], ops, x.guard >= 0 ? map[x.guard] : -1);
        break;
      }
      case ExprKind::kUnary: map[i] = E.unary(static_cast<UnaryOp>(x.op), ops[0]); break;
      case ExprKind::kBinary: map[i] = E.binary(static_cast<BinaryOp>(x.op), ops[0], ops[1]); break;
      case ExprKind::kSelect: map[i] = E.select(ops[0], ops[1], ops[2]); break;
      case ExprKind::kCast: map[i] = x.ival == 1 ? E.castU64(ops[0], x.type) : E.cast(ops[0], x.type); break;
      case ExprKind::kReduceResult: return -1;
      case ExprKind::kSymbol: return -1;  // only after lowering (program/Symbolic.h)
    }
  }
  return E.cast(map[k.stores[0].value], ScalarType::kF32);
}

}  // namespace

bool foldIntoGemmEpilogue(const WorkItem &kernel, const Value *acc, GemmParams &gemm) {
  const std::optional<std::vector<int64_t>> domain = pointwiseDomain(kernel);
  if (!domain || gemm.m <= 0 || gemm.n <= 0) return false;
  const KernelSpec &k = kernel.spec;
  const std::vector<int64_t> &ext = *domain;
  GemmParams g = gemm;
  // A batch of row-major A blocks times one shared B (a MatMul of
  // [..., m, k] by [k, n]) is one GEMM of batch * m rows.
  if (g.batch > 1 && g.strideB == 0 && !g.transA && g.strideA == g.m * g.k && g.strideD == g.m * g.n &&
      !g.c && g.epilogue.empty()) {
    g.m *= g.batch;
    g.batch = 1;
    g.strideA = g.m * g.k;
    g.strideD = g.m * g.n;
    g.epilogue = GemmEpilogue::identity(g.m, g.n);
  }
  if (g.batch != 1) return false;
  const Store &st = k.stores[0];
  // The domain is [M, N] row-major: its trailing dims from `split` on make up N.
  size_t split = ext.size();
  int64_t inner = 1;
  while (split > 0 && inner < g.n) inner *= ext[--split];
  if (inner != g.n || prod(Shape(ext.begin(), ext.begin() + split)) != g.m) return false;
  if (st.guard >= 0 || k.buffers[st.buffer].shape != ext || !isDomainPoint(k, st.index) ||
      k.buffers[st.buffer].dtype != g.dDtype)
    return false;

  GemmEpilogue e = g.epilogue;
  KernelSpec &E = e.spec;
  std::vector<int> dimOf(ext.size());
  {
    const std::vector<int> mi = E.delinearize(E.index(0), std::vector<int64_t>(ext.begin(), ext.begin() + split));
    const std::vector<int> ni = E.delinearize(E.index(1), std::vector<int64_t>(ext.begin() + split, ext.end()));
    std::copy(mi.begin(), mi.end(), dimOf.begin());
    std::copy(ni.begin(), ni.end(), dimOf.begin() + split);
  }
  std::vector<const Value *> inputs = g.epilogueInputs;
  const int value = translatePointwise(kernel, acc, dimOf, {}, e, inputs);
  if (value < 0) return false;
  e.value = value;
  g.epilogue = std::move(e);
  g.epilogueInputs = std::move(inputs);
  g.d = kernel.buffers[st.buffer];
  gemm = std::move(g);
  return true;
}

bool foldIntoConvEpilogue(const WorkItem &kernel, const Value *acc, ConvParams &conv) {
  const std::optional<std::vector<int64_t>> domain = pointwiseDomain(kernel);
  if (!domain || conv.yShape.size() < 3) return false;
  const KernelSpec &k = kernel.spec;
  const std::vector<int64_t> &ext = *domain;
  const int64_t N = conv.yShape[0], Mo = conv.yShape[1];
  const int64_t P = prod(Shape(conv.yShape.begin() + 2, conv.yShape.end()));
  if (N <= 0 || Mo <= 0 || P <= 0) return false;
  // The domain is y's [N, Mo, pixels] with dims merged or split within
  // each part: [0, a) make up the image, [a, b) the channel, [b, end) the
  // pixel.
  size_t a = 0, b = 0;
  int64_t part = 1;
  while (a < ext.size() && part < N) part *= ext[a++];
  if (part != N) return false;
  for (b = a, part = 1; b < ext.size() && part < Mo; part *= ext[b++]) {
  }
  if (part != Mo || prod(Shape(ext.begin() + b, ext.end())) != P) return false;
  const Store &st = k.stores[0];
  if (st.guard >= 0 || k.buffers[st.buffer].shape != ext || !isDomainPoint(k, st.index) ||
      k.buffers[st.buffer].dtype != conv.dtype)
    return false;

  GemmEpilogue e = conv.epilogue;
  KernelSpec &E = e.spec;
  // (m, oc) of the implicit GEMM: image m / P, pixel m % P.
  const int image = E.binary(BinaryOp::kDiv, E.index(0), E.constI(P));
  const int pixel = E.binary(BinaryOp::kMod, E.index(0), E.constI(P));
  struct Part {
    int flat;  ///< the part's linear index in e.spec
    size_t lo, hi;  ///< its domain dims
    int64_t extent;
  };
  const Part parts[3] = {{image, 0, a, N}, {E.index(1), a, b, Mo}, {pixel, b, ext.size(), P}};
  std::vector<int> dimOf;
  for (const Part &p : parts) {
    const std::vector<int> idx = E.delinearize(p.flat, std::vector<int64_t>(ext.begin() + p.lo, ext.begin() + p.hi));
    dimOf.insert(dimOf.end(), idx.begin(), idx.end());
  }
  // A side buffer read only at the domain point, broadcast (numpy, from
  // the right) over whole parts (a residual y-shaped, a per-channel
  // [Mo, 1, 1] scale), is read as [image, channel, pixel] with its parts
  // merged: index m % P is contiguous along a tile's pixels (a vector
  // load; the spatial dims delinearized from it would be a gather).
  std::map<int, SideView> views;
  int zero = -1;  // E.constI(0), once needed
  for (size_t buf = 0; buf < k.buffers.size(); ++buf) {
    const std::vector<int64_t> &shape = k.buffers[buf].shape;
    if (static_cast<int>(buf) == st.buffer || k.buffers[buf].written || shape.size() > ext.size()) continue;
    const size_t lead = ext.size() - shape.size();
    bool aligned = true;
    std::vector<char> full(ext.size(), 0);  // the buffer spans domain dim d
    for (size_t d = lead; d < ext.size(); ++d) {
      full[d] = shape[d - lead] == ext[d] && ext[d] != 1;
      if (!full[d] && shape[d - lead] != 1) aligned = false;
    }
    for (const Expr &x : k.exprs) {
      if (!aligned) break;
      if (x.kind != ExprKind::kLoad || x.ival != static_cast<int64_t>(buf)) continue;
      if (x.guard >= 0 || x.operands.size() != shape.size()) aligned = false;
      for (size_t d = lead; aligned && d < ext.size(); ++d) {
        const Expr &ix = k.exprs[x.operands[d - lead]];
        int64_t v = -1;
        const bool atIndex = ix.kind == ExprKind::kIndex && ix.ival == static_cast<int64_t>(d);
        if (full[d] ? !atIndex : !(atIndex || (k.isConst(x.operands[d - lead], &v) && v == 0))) aligned = false;
      }
    }
    if (!aligned) continue;
    SideView view;
    for (const Part &p : parts) {
      const auto spanned = std::count(full.begin() + p.lo, full.begin() + p.hi, 1);
      if (spanned == 0) {
        if (zero < 0) zero = E.constI(0);
        view.shape.push_back(1);
        view.index.push_back(zero);
      } else if (spanned == std::count_if(ext.begin() + p.lo, ext.begin() + p.hi, [](int64_t x) { return x != 1; })) {
        view.shape.push_back(p.extent);
        view.index.push_back(p.flat);
      } else {
        aligned = false;  // broadcast within a part: read through the dims
      }
    }
    if (aligned) views.emplace(static_cast<int>(buf), std::move(view));
  }
  std::vector<const Value *> inputs = conv.epilogueInputs;
  const int value = translatePointwise(kernel, acc, dimOf, views, e, inputs);
  if (value < 0) return false;
  e.value = value;
  conv.epilogue = std::move(e);
  conv.epilogueInputs = std::move(inputs);
  conv.y = kernel.buffers[st.buffer];
  return true;
}

}  // namespace fusec::program::lowering

namespace fusec::program {

absl::Status foldableOutputCast(const GemmParams &g, const ir::Node &cast, const LoweringOptions &opts) {
  auto no = [&](const std::string &why) {
    return absl::FailedPreconditionError(
        absl::StrCat("Cast ", lowering::nodeDesc(cast), " stays a kernel of its own: ", why));
  };
  if (!opts.foldGemmOutputCast) return no("the target's GEMMs write D in the GEMM's dtype only");
  if (cast.kind() != ir::OpKind::kCast || !cast.output(0)) return no("not a Cast");
  if (g.dtype != ir::DType::kF16 && g.dtype != ir::DType::kBF16)
    return no(absl::StrCat("the GEMM's dtype is ", ir::dtypeName(g.dtype), " (only f16 and bf16 GEMMs write f32)"));
  if (g.dDtype != g.dtype) return no("the GEMM's output is already cast");
  if (cast.output(0)->type().dtype != ir::DType::kF32)
    return no(absl::StrCat("it casts to ", ir::dtypeName(cast.output(0)->type().dtype), ", not f32"));
  if (g.c) return no("the GEMM adds beta * C, which the library would read as f32");
  if (g.bias) return no("the GEMM's bias epilogue would read the bias as f32");
  return absl::OkStatus();
}

}  // namespace fusec::program
