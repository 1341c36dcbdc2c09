"""Vector / GpSimd engine instructions: tensor_tensor, tensor_scalar, tensor_reduce, reciprocal, bn_stats,
bn_aggr, iota, affine_select. NKI.md section 4 ("nisa.tensor_reduce", "Other VectorE building blocks")."""

import numpy as np

from .. import _ops
from .._errors import check
from .._tensor import NkiTensor, psum, sbuf
from . import _checks as C
from ._checks import ON_CHIP

_INT32 = ("int32", "uint32")


def _engine_name(engine):
    return getattr(engine, "name", "unknown")


def tensor_tensor(dst, data1, data2, op, engine=None, name=None):
    """dst = data1 <op> data2 element-wise (Vector, or GpSimd for nl.power and all-int32 operands).

    Arithmetic ops compute in fp32 (exact int64 when data1, data2 and dst are all int32/uint32 and none is in
    PSUM); bitvec ops need integer dtypes. At most one input may be in PSUM.
    """
    call = "nisa.tensor_tensor"
    opn = _ops.op_name(op)
    check(opn in _ops.ARITH or opn in _ops.BITVEC, call,
          f"op {getattr(op, '__name__', op)!r} is not a binary ALU operator")
    _ops.check_available(call, opn)
    eng = _engine_name(engine)
    for role, t in (("data1", data1), ("data2", data2), ("dst", dst)):
        C.tensor(call, role, t, ON_CHIP, eng)
    C.same_layout(call, "data1", data1, "data2", data2)
    C.same_layout(call, "data1", data1, "dst", dst)
    check(not (data1.buffer is psum and data2.buffer is psum), call, "data1 and data2 cannot both be in PSUM")
    if opn == "power" or eng == "gpsimd":
        C.no_gpsimd_psum(call, "GpSimd", data1, data2, dst)
    p = data1.shape[0]
    any_psum = psum in (data1.buffer, data2.buffer, dst.buffer)
    if opn in _ops.BITVEC:
        for role, t in (("data1", data1), ("data2", data2), ("dst", dst)):
            check(t.dtype.kind in ("int", "bool"), call, f"bitvec op needs integer dtypes; {role} is {t.dtype.name}")
        check(eng in ("unknown", "vector"), call, "bitvec operators run on the Vector Engine only")
        a, b = _ops.bits(data1._view, data1.dtype), _ops.bits(data2._view, data2.dtype)
    elif all(t.dtype.name in _INT32 for t in (data1, data2, dst)) and not any_psum and eng != "vector":
        a, b = data1._view.astype(np.int64), data2._view.astype(np.int64)
    else:
        a, b = data1._read(np.float32), data2._read(np.float32)
    out = _ops.binary(opn, C.per_partition(a, p), C.per_partition(b, p))
    if opn in _ops.BITVEC:  # a bit pattern: wrapped into dst's width, not converted
        out = _ops.from_bits(out, dst.dtype)
    C.psum_read(data1)
    C.psum_read(data2)
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, False, False)


def _apply_scalar_op(call, opn, t, operand, reverse):
    if opn in _ops.UNARY_ALU:
        check(operand is None or (not isinstance(operand, NkiTensor) and operand == 0), call,
              f"unary op {opn} takes operand None or 0")
        return _ops.UNARY_ALU[opn](t).astype(np.float32)
    check(operand is not None, call, f"op {opn} needs an operand")
    return _ops.binary(opn, operand, t) if reverse else _ops.binary(opn, t, operand)


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  engine=None, name=None):
    """dst = (data <op0> operand0) <op1> operand1, operands scalars or [P, 1] float32 tiles broadcast along the
    free axis; reverseN swaps the operands of opN. Arithmetic in fp32 (bitvec ops: integer bit patterns)."""
    call = "nisa.tensor_scalar"
    eng = _engine_name(engine)
    C.tensor(call, "data", data, ON_CHIP, eng)
    C.tensor(call, "dst", dst, ON_CHIP, eng)
    C.same_layout(call, "data", data, "dst", dst)
    if eng == "gpsimd":
        C.no_gpsimd_psum(call, "GpSimd", data, dst, operand0, operand1)
    names = [_ops.op_name(op0), _ops.op_name(op1) if op1 is not None else None]
    for i, n in enumerate(names):
        if i == 1 and op1 is None:
            check(operand1 is None, call, "operand1 must be None when op1 is None")
            continue
        check(n in _ops.ARITH or n in _ops.BITVEC or n in _ops.UNARY_ALU or n in _ops.UNARY_BITVEC, call,
              f"op{i} {n!r} is not an ALU operator")
        _ops.check_available(call, n)
    bitvec = [n in _ops.BITVEC or n in _ops.UNARY_BITVEC for n in names if n is not None]
    check(all(bitvec) or not any(bitvec), call, "op0 and op1 must both be bitvec or both arithmetic")
    if eng == "scalar" and _tgt_gen(call) == 3:
        check(tuple(names) in (("multiply", "add"), ("multiply", None), ("add", None)), call,
              "the Scalar engine on trn2 supports only multiply+add, multiply, add")
    p = data.shape[0]
    if any(bitvec):
        check(data.dtype.kind == "int" and dst.dtype.kind == "int", call, "bitvec ops need integer dtypes")
        check(eng in ("unknown", "vector"), call, "bitvec operators run on the Vector Engine only")
        t = C.per_partition(_ops.bits(data._view, data.dtype), p)
        ops = [(names[0], operand0, reverse0), (names[1], operand1, reverse1)]
        for i, (n, operand, rev) in enumerate(ops):
            if n is None:
                continue
            if n in _ops.UNARY_BITVEC:
                check(operand is None or (not isinstance(operand, NkiTensor) and operand == 0), call,
                      f"unary op {n} takes operand{i} None or 0")
                t = _ops.UNARY_BITVEC[n](t)
                continue
            C.vector_operand(call, f"operand{i}", operand, p)  # shape/buffer checks
            if isinstance(operand, NkiTensor):
                check(operand.dtype.kind == "int", call, f"bitvec operand{i} must have an integer dtype")
                v = _ops.bits(operand._view, operand.dtype).reshape(p, 1)
            else:
                check(float(operand) == int(operand), call, f"bitvec operand{i} must be an integer")
                v = int(operand)
            t = _ops.binary(n, v, t) if rev else _ops.binary(n, t, v)
        t = _ops.from_bits(t, dst.dtype)
    else:
        t = C.per_partition(data._read(np.float32), p)
        o0 = None if operand0 is None else C.vector_operand(call, "operand0", operand0, p, fp32_only=True)
        if names[0] in _ops.UNARY_ALU:
            o0 = operand0 if not isinstance(operand0, NkiTensor) else o0
        t = _apply_scalar_op(call, names[0], t, o0, reverse0)
        if names[1] is not None:
            o1 = None if operand1 is None else C.vector_operand(call, "operand1", operand1, p, fp32_only=True)
            t = _apply_scalar_op(call, names[1], np.asarray(t, dtype=np.float32), o1, reverse1)
    for x in (data, operand0, operand1):
        if isinstance(x, NkiTensor):
            C.psum_read(x)
    dst._write(np.asarray(t).reshape(dst.shape))
    C.psum_write(dst, False, False)


def _tgt_gen(call):
    from .. import _runtime
    return _runtime.current(call).target.gen


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """Reduces the trailing free axes `axis` of data with `op` (fp32 math; negate multiplies by -1). The
    partition axis can never be reduced; dst keeps data's partitions."""
    call = "nisa.tensor_reduce"
    opn = _ops.op_name(op)
    check(opn in _ops.REDUCE, call, f"op {getattr(op, '__name__', op)!r} is not a legal reduction operator")
    C.tensor(call, "data", data, ON_CHIP, "Vector")
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    nd = data.ndim
    axes = sorted(int(a) + nd if int(a) < 0 else int(a) for a in axes)
    check(len(axes) > 0 and 0 not in axes, call, "axis 0 (the partition axis) cannot be reduced")
    check(axes == list(range(axes[0], nd)), call,
          f"axis {tuple(axes)} must be the last contiguous free axes ending at axis {nd - 1}")
    kept = int(np.prod(data.shape[1:axes[0]], dtype=np.int64))
    check(dst.shape[0] == data.shape[0] and dst.free_size() == kept, call,
          f"dst must have {data.shape[0]} partitions x {kept} elements, got {list(dst.shape)}")
    if opn in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        check(data.dtype.kind == "int", call, "bitvec reduction needs an integer dtype")
        vals = _ops.bits(data._view, data.dtype)
    else:
        vals = data._read(np.float32)
    out = _ops.reduce(opn, vals, tuple(axes))
    if negate:
        check(opn not in ("bitwise_and", "bitwise_or", "bitwise_xor"), call, "negate needs an arithmetic op")
        out = -out
    if opn in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        out = _ops.from_bits(out, dst.dtype)
    C.psum_read(data)
    dst._write(np.asarray(out).reshape(dst.shape))
    C.psum_write(dst, False, False)


def reciprocal(dst, data, name=None):
    """dst = 1 / data on the Vector Engine (fp32)."""
    call = "nisa.reciprocal"
    C.tensor(call, "data", data, ON_CHIP, "Vector")
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    C.same_layout(call, "data", data, "dst", dst)
    with np.errstate(divide="ignore"):
        out = np.float32(1.0) / data._read(np.float32)
    C.psum_read(data)
    dst._write(C.per_partition(out, data.shape[0]).reshape(dst.shape))
    C.psum_write(dst, False, False)


def bn_stats(dst, data, name=None):
    """Per partition, over at most 512 elements: (count, mean, variance*count) of the even-indexed elements
    then of the odd-indexed ones -> dst[P, 6] (fp32 math)."""
    call = "nisa.bn_stats"
    C.tensor(call, "data", data, ON_CHIP, "Vector")
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    p, f = data.shape[0], data.free_size()
    check(f <= 512, call, f"data has {f} elements per partition > 512 (bn_stats_fmax)")
    check(dst.shape[0] == p and dst.free_size() == 6, call, f"dst must be [{p}, 6], got {list(dst.shape)}")
    x = C.per_partition(data._read(np.float32), p).astype(np.float64)
    cols = []
    for part in (x[:, 0::2], x[:, 1::2]):
        n = part.shape[1]
        mean = part.mean(axis=1) if n else np.zeros(p)
        m2 = ((part - mean[:, None]) ** 2).sum(axis=1) if n else np.zeros(p)
        cols += [np.full(p, n, dtype=np.float64), mean, m2]
    C.psum_read(data)
    dst._write(np.stack(cols, axis=1).astype(np.float32).reshape(dst.shape))
    C.psum_write(dst, False, False)


def bn_aggr(dst, data, name=None):
    """Combines (count, mean, variance*count) triples per partition into dst[P, 2] = (mean, variance)."""
    call = "nisa.bn_aggr"
    C.tensor(call, "data", data, ON_CHIP, "Vector")
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    p, f = data.shape[0], data.free_size()
    check(f % 3 == 0, call, f"data has {f} elements per partition, not a multiple of 3")
    check(dst.shape[0] == p and dst.free_size() == 2, call, f"dst must be [{p}, 2], got {list(dst.shape)}")
    t = C.per_partition(data._read(np.float32), p).astype(np.float64).reshape(p, -1, 3)
    cnt, mean, m2 = t[..., 0], t[..., 1], t[..., 2]
    total = cnt.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        gmean = (cnt * mean).sum(axis=1) / total
        gm2 = m2.sum(axis=1) + (cnt * (mean - gmean[:, None]) ** 2).sum(axis=1)
        var = gm2 / total
    C.psum_read(data)
    dst._write(np.stack([gmean, var], axis=1).astype(np.float32).reshape(dst.shape))
    C.psum_write(dst, False, False)


def _affine(call, pattern, p, f, offset, channel_multiplier):
    check(isinstance(pattern, (list, tuple)) and 1 <= len(pattern) <= 4, call,
          "pattern must be a list of 1 to 4 [step, num] pairs")
    nums = [int(n) for _, n in pattern]
    check(int(np.prod(nums)) == f, call, f"pattern covers {int(np.prod(nums))} elements but the tile has {f} "
                                         "per partition")
    val = np.zeros(nums, dtype=np.int64)
    for i, (step, num) in enumerate(pattern):
        shape = [1] * len(nums)
        shape[i] = int(num)
        val = val + int(step) * np.arange(int(num), dtype=np.int64).reshape(shape)
    ch = np.arange(p, dtype=np.int64).reshape(p, 1) * int(channel_multiplier)
    v = int(offset) + ch + val.reshape(1, f)
    return ((v + 2 ** 31) % 2 ** 32) - 2 ** 31  # 32-bit integer arithmetic


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """dst[c, i...] = offset + c * channel_multiplier + sum(i_k * step_k) in int32, cast to dst's dtype (SBUF)."""
    call = "nisa.iota"
    C.tensor(call, "dst", dst, (sbuf,), "GpSimd")
    v = _affine(call, pattern, dst.shape[0], dst.free_size(), offset, channel_multiplier)
    dst._write(v.reshape(dst.shape))


_CMP = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")


def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=None, offset=0,
                  name=None):
    """dst = on_true_tile where cmp_op(affine value, 0) else on_false_value (fp32), GpSimd, SBUF only. The affine
    value is iota's: offset + partition * channel_multiplier + sum(i_k * step_k). cmp_op defaults to nl.equal."""
    call = "nisa.affine_select"
    C.tensor(call, "on_true_tile", on_true_tile, (sbuf,), "GpSimd")
    C.tensor(call, "dst", dst, (sbuf,), "GpSimd")
    C.same_layout(call, "on_true_tile", on_true_tile, "dst", dst)
    cmp_name = "equal" if cmp_op is None else _ops.op_name(cmp_op)
    check(cmp_name in _CMP, call, f"cmp_op {getattr(cmp_op, '__name__', cmp_op)!r} is not a comparison")
    check(isinstance(on_false_value, (int, float, np.integer, np.floating)), call,
          "on_false_value must be a number")
    p, f = dst.shape[0], dst.free_size()
    v = _affine(call, pattern, p, f, offset, channel_multiplier)
    pred = _ops.binary(cmp_name, v, np.int64(0)) != 0
    src = C.per_partition(on_true_tile._view if on_true_tile.dtype == dst.dtype else on_true_tile._read(), p)
    out = np.where(pred, src.astype(np.float64), np.float64(np.float32(on_false_value)))
    dst._write(out.reshape(dst.shape))


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None):
    """Per partition, along the flattened free axis: r[i] = op1(op0(data0[i], r[i-1]), data1[i]) with
    r[-1] = initial (a number or a [P, 1] tile); reverse0 puts data0 on the right of op0, reverse1 data1 on the
    left of op1. fp32 math; data0 and data1 cannot both be in PSUM (Vector Engine)."""
    call = "nisa.tensor_tensor_scan"
    for role, t in (("data0", data0), ("data1", data1), ("dst", dst)):
        C.tensor(call, role, t, ON_CHIP, "Vector")
    C.same_layout(call, "data0", data0, "data1", data1)
    C.same_layout(call, "data0", data0, "dst", dst)
    check(not (data0.buffer is psum and data1.buffer is psum), call, "data0 and data1 cannot both be in PSUM")
    n0, n1 = _ops.op_name(op0), _ops.op_name(op1)
    check(n0 in _ops.ARITH and n1 in _ops.ARITH, call, "op0 and op1 must be binary arithmetic operators")
    _ops.check_available(call, n0)
    _ops.check_available(call, n1)
    p = data0.shape[0]
    a = C.per_partition(data0._read(np.float32), p)
    b = C.per_partition(data1._read(np.float32), p)
    r = C.vector_operand(call, "initial", initial, p).reshape(-1) * np.ones(p, np.float32)
    out = np.empty_like(a)
    for i in range(a.shape[1]):
        t = _ops.binary(n0, r, a[:, i]) if reverse0 else _ops.binary(n0, a[:, i], r)
        r = (_ops.binary(n1, b[:, i], t) if reverse1 else _ops.binary(n1, t, b[:, i])).astype(np.float32)
        out[:, i] = r
    C.psum_read(data0)
    C.psum_read(data1)
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, False, False)


def tensor_partition_reduce(dst, op, data, name=None):
    """Reduces across partitions with op (add, maximum, minimum, ...) on GpSimd: dst[1, F] (SBUF only)."""
    call = "nisa.tensor_partition_reduce"
    C.tensor(call, "data", data, (sbuf,), "GpSimd")
    C.tensor(call, "dst", dst, (sbuf,), "GpSimd")
    opn = _ops.op_name(op)
    check(opn in _ops.REDUCE and opn != "subtract", call, f"op {opn!r} is not a partition reduction operator")
    check(dst.shape[0] == 1 and dst.free_size() == data.free_size(), call,
          f"dst must be [1, {data.free_size()}], got {list(dst.shape)}")
    vals = C.per_partition(data._read(np.float32), data.shape[0])
    dst._write(_ops.reduce(opn, vals, (0,)).reshape(dst.shape))
