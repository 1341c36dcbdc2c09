"""nki.isa: the NeuronCore instructions, new dialect (every call writes into `dst`). NKI.md section 4.

Each instruction checks its operands against the documented engine/buffer/shape/dtype rules, raising
NkiModelError(call, rule) on a violation, then computes with NumPy (engines compute in fp32, PSUM accumulates in
fp32) and stores into `dst` with the rounding of dst's dtype.
"""

from enum import Enum

import numpy as np

from .. import _ops, _runtime
from .._errors import NkiModelError, check
from .._tensor import NkiTensor, private_hbm, psum, sbuf, shared_hbm
from . import _checks as C
from ._checks import ON_CHIP


class engine(Enum):
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


class reduce_cmd(Enum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(Enum):
    error = 0
    skip = 1


class matmul_perf_mode(Enum):
    none = "none"
    double_row = "double_row"


class nc_version(Enum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


tensor_engine, vector_engine, scalar_engine, gpsimd_engine = engine.tensor, engine.vector, engine.scalar, engine.gpsimd
_ENGINE, _OOB, _RC = engine, oob_mode, reduce_cmd  # the enums, for functions whose parameters shadow them


def get_nc_version():
    """The nc_version of the running kernel's target (trn1 -> gen2, trn2 -> gen3, trn3 -> gen4)."""
    return nc_version(_runtime.current("nisa.get_nc_version").target.gen)


def _target(call):
    return _runtime.current(call).target


# ------------------------------------------------------------------------------------------------ data movement
def dma_copy(dst, src, priority=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, engine=engine.unknown,
             name=None):
    """dst = src between HBM and SBUF (not PSUM since 0.3). Element counts must match; dtypes convert via fp32.
    Indirect (vector_offset) views gather/scatter rows; out-of-bounds rows raise, or are skipped with
    oob_mode=skip."""
    call = "nisa.dma_copy"
    _target(call)
    dma_ok = (sbuf, private_hbm, shared_hbm)
    for role, t in (("dst", dst), ("src", src)):
        check(isinstance(t, NkiTensor), call, f"{role} must be an NkiTensor")
        check(t.buffer is not psum, call, f"{role} is in PSUM: DMA cannot access PSUM (copy it to SBUF with "
                                          "nisa.tensor_copy first)")
        C.tensor(call, role, t, dma_ok)
    check(dst.size == src.size, call, f"src has {src.size} elements but dst has {dst.size}")
    for role, t in (("src", src), ("dst", dst)):
        if t.is_indirect() and t.oob_rows.any():
            check(oob_mode is _OOB.skip, call, f"{role} indirect index out of bounds (oob_mode=error)")
    vals = src._view if src.dtype == dst.dtype else src._read(np.float32)
    vals = np.reshape(vals, dst.shape)
    if src.is_indirect() and src.oob_rows.any():  # skipped rows leave dst as it was
        keep = np.repeat(src.oob_rows, src.size // src.shape[0]).reshape(dst.shape)
        vals = np.where(keep, dst._view, vals)
    dst._write(vals)


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown, oob_mode=oob_mode.error,
                  name=None):
    """Transpose by DMA (v3+): src in HBM or SBUF, dst in SBUF, same dtype. The permutation is fixed by the rank:
    2-D (1, 0), 3-D (2, 1, 0), 4-D (3, 1, 2, 0); dst.shape is src.shape permuted so."""
    call = "nisa.dma_transpose"
    check(_target(call).gen >= 3, call, "DMA transpose needs NeuronCore-v3 or newer")
    C.tensor(call, "src", src, (sbuf, private_hbm, shared_hbm))
    C.tensor(call, "dst", dst, (sbuf,))
    perms = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
    check(src.ndim in perms, call, f"src must be 2-D to 4-D, got {src.ndim}-D")
    perm = perms[src.ndim]
    check(axes is None or tuple(axes) == perm, call, f"axes must be {perm} for a {src.ndim}-D src")
    check(src.dtype == dst.dtype, call, f"src dtype {src.dtype.name} must equal dst dtype {dst.dtype.name}")
    want = tuple(src.shape[i] for i in perm)
    check(dst.shape == want, call, f"dst must have shape {want}, got {dst.shape}")
    dst._write(np.transpose(src._view, perm))


def tensor_copy(dst, src, engine=engine.unknown, name=None):
    """Copy on-chip (Vector/Scalar/GpSimd): same partitions and elements per partition; via fp32 if dtypes differ."""
    call = "nisa.tensor_copy"
    tgt = _target(call)
    eng = engine.name
    C.tensor(call, "src", src, ON_CHIP, eng)
    C.tensor(call, "dst", dst, ON_CHIP, eng)
    C.same_layout(call, "src", src, "dst", dst)
    if engine is gpsimd_engine:
        C.no_gpsimd_psum(call, "GpSimd", src, dst)
    check(not (engine is scalar_engine and tgt.gen == 2), call,
          "tensor_copy is not supported on the Scalar engine of NeuronCore-v2 (use activation with nl.copy)")
    vals = C.convert_via_fp32(src, dst)
    C.psum_read(src)
    dst._write(C.per_partition(vals, src.shape[0]).reshape(dst.shape))
    C.psum_write(dst, False, False)


def memset(dst, value, engine=engine.unknown, name=None):
    """Fills an on-chip dst with a constant (Vector or GpSimd engine)."""
    call = "nisa.memset"
    C.tensor(call, "dst", dst, ON_CHIP, engine.name)
    check(engine in (_ENGINE.unknown, vector_engine, gpsimd_engine), call, "memset runs on Vector or GpSimd only")
    if engine is gpsimd_engine:
        C.no_gpsimd_psum(call, "GpSimd", dst)
    check(isinstance(value, (int, float, np.integer, np.floating)), call, "value must be a compile-time number")
    dst._write(np.float64(value) if dst.dtype.kind == "float" else value)
    C.psum_write(dst, False, False)


# ------------------------------------------------------------------------------------------------ Tensor Engine
_MM_DTYPES = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn", "bfloat16", "float16", "tfloat32", "float32")


def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              accumulate=None, tile_position=(), tile_size=(), perf_mode=matmul_perf_mode.none, name=None):
    """dst[M, N] (PSUM, fp32) = stationary[K, M].T @ moving[K, N] (both SBUF), accumulating in fp32.

    accumulate=False overwrites, True adds (the location must hold a matmul result), None adds where a matmul
    accumulation group is open: a matmul opens it, a non-matmul read or write of the location closes it.
    is_transpose=True (moving an identity) is the Tensor Engine transpose: any input dtype, dst has stationary's
    dtype, and by default it overwrites.
    """
    call = "nisa.nc_matmul"
    tgt = _target(call)
    C.tensor(call, "stationary", stationary, (sbuf,), "Tensor")
    C.tensor(call, "moving", moving, (sbuf,), "Tensor")
    C.tensor(call, "dst", dst, (psum,), "Tensor")
    check(perf_mode in (matmul_perf_mode.none, None), call, "perf_mode=double_row is not modelled")
    if is_transpose:  # transpose mode (stationary against an identity): any dtype, dst keeps stationary's
        check(dst.dtype == stationary.dtype, call, f"is_transpose=True: dst dtype {dst.dtype.name} must equal "
                                                   f"stationary dtype {stationary.dtype.name}")
    else:
        for role, t in (("stationary", stationary), ("moving", moving)):
            check(t.dtype.name in _MM_DTYPES, call, f"{role} dtype {t.dtype.name} is not a Tensor Engine input type")
        fp32ish = ("float32", "tfloat32")
        check((stationary.dtype.name in fp32ish) == (moving.dtype.name in fp32ish), call,
              "if one matmul input is float32/tfloat32 the other must be float32/tfloat32 too")
        ok_dst = ("float32",) if tgt.gen < 4 else ("float32", "bfloat16")
        check(dst.dtype.name in ok_dst, call, f"dst must be {'/'.join(ok_dst)} on {tgt.name}, got {dst.dtype.name}")
    rows, cols = 128, 128
    if tile_position or tile_size:
        check(len(tile_position) == 2 and len(tile_size) == 2, call, "tile_position and tile_size must both be set")
        rows, cols = int(tile_size[0]), int(tile_size[1])
        allowed = (32, 64, 128) if tgt.gen >= 3 else (64, 128)
        check(rows in allowed and cols in allowed, call, f"tile_size entries must be one of {allowed}")
        check(tile_position[0] % rows == 0 and tile_position[1] % cols == 0 and tile_position[0] < 128
              and tile_position[1] < 128, call, "tile_position must be multiples of tile_size inside 128x128")
    k, m = stationary.shape[0], stationary.free_size()
    n = moving.free_size()
    check(moving.shape[0] == k, call, f"contraction (partition) sizes differ: stationary {k}, moving "
                                      f"{moving.shape[0]}")
    check(k <= rows, call, f"contraction size {k} > {rows} partitions")
    check(m <= cols, call, f"stationary free size {m} > {cols} (gemm_stationary_fmax)")
    nmax = tgt.moving_fmax_fp32 if dst.dtype.name == "float32" else 2 * tgt.moving_fmax_fp32
    check(n <= nmax, call, f"moving free size {n} > {nmax} (gemm_moving_fmax on {tgt.name})")
    check(dst.shape[0] == m and dst.free_size() == n, call,
          f"dst must have {m} partitions x {n} elements (stationary free x moving free), got {list(dst.shape)}")
    if tgt.gen < 4:
        lo, hi = dst.free_bytes_range()
        bank = tgt.psum_bank_bytes
        check(lo // bank == (hi - 1) // bank, call,
              f"dst covers bytes {lo}..{hi} of each partition, crossing a {bank}-byte PSUM bank boundary")
    s = stationary._read(np.float32).reshape(k, m)
    mv = moving._read(np.float32).reshape(k, n)
    if is_transpose and k == n and np.array_equal(mv, np.eye(k, dtype=np.float32)):
        res = s.T  # bit-exact transpose (NaN/Inf preserved), as on v3+
    else:
        res = np.matmul(s.T, mv, dtype=np.float32)
    if is_transpose and accumulate is None:
        accumulate = False  # a transpose overwrites (nc_transpose exposes no accumulation)
    valid, opened = dst._psum_state()
    valid, opened = valid.reshape(m, n) != 0, opened.reshape(m, n) != 0
    if accumulate is True:
        check(bool(valid.all()), call, "accumulate=True onto PSUM locations that no matmul initialised "
                                       "(undefined behaviour on hardware)")
        add = np.ones_like(valid)
    elif accumulate is None:
        add = opened
    else:
        add = np.zeros_like(valid)
    old = np.nan_to_num(dst._read(np.float32).reshape(m, n), nan=0.0) if add.any() else 0.0
    out = np.where(add, old + res, res)
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, True, True)


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """dst = data.T (free axes flattened). Tensor Engine: SBUF -> PSUM, up to [128, 128]; Vector Engine: SBUF or
    PSUM either way, up to [32, 32]. dst has data's dtype."""
    call = "nisa.nc_transpose"
    _target(call)
    if engine is _ENGINE.unknown:
        use_te = isinstance(data, NkiTensor) and isinstance(dst, NkiTensor) and data.buffer is sbuf \
            and dst.buffer is psum
        engine = tensor_engine if use_te else vector_engine
    check(engine in (tensor_engine, vector_engine), call, "engine must be tensor or vector")
    if engine is tensor_engine:
        C.tensor(call, "data", data, (sbuf,), "Tensor")
        C.tensor(call, "dst", dst, (psum,), "Tensor")
        lim = 128
    else:
        C.tensor(call, "data", data, ON_CHIP, "Vector")
        C.tensor(call, "dst", dst, ON_CHIP, "Vector")
        lim = 32
    p, f = data.shape[0], data.free_size()
    check(p <= lim and f <= lim, call, f"data [{p}, {f}] exceeds [{lim}, {lim}] on the {engine.name} engine")
    check(dst.dtype == data.dtype, call, f"dst dtype {dst.dtype.name} must equal data dtype {data.dtype.name}")
    check(dst.shape[0] == f and dst.free_size() == p, call, f"dst must be [{f}, {p}], got {list(dst.shape)}")
    C.psum_read(data)
    dst._write(data._view.reshape(p, f).T.reshape(dst.shape))
    C.psum_write(dst, engine is tensor_engine, False)


# ------------------------------------------------------------------------------------------------ Scalar Engine
def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle,
               name=None):
    """dst = op(data * scale + bias) in fp32 on the Scalar Engine, with the optional free-axis add-reduction into
    the 128 per-lane reduce registers (documented pseudo code: reset/reset_reduce zero them, reduce/reset_reduce
    add the row sums of op's output, reduce_res reads them out)."""
    call = "nisa.activation"
    tgt = _target(call)
    name_ = _ops.op_name(op)
    check(name_ in _ops.ACTIVATIONS, call, f"op {getattr(op, '__name__', op)!r} is not a Scalar Engine "
                                           "activation function")
    C.tensor(call, "data", data, ON_CHIP, "Scalar")
    C.tensor(call, "dst", dst, ON_CHIP, "Scalar")
    C.same_layout(call, "data", data, "dst", dst)
    p = data.shape[0]
    sc = C.vector_operand(call, "scale", scale, p, fp32_only=True)
    b = np.float32(0.0)
    check(not (name_ == "reciprocal" and bias is not None and tgt.gen == 2), call,
          "activation with nl.reciprocal takes no bias on NeuronCore-v2 (nki.api.shared, engine selection)")
    if bias is not None:
        if isinstance(bias, NkiTensor):
            check(bias.dtype.name != "tfloat32", call, "bias may not be tfloat32")
        b = C.vector_operand(call, "bias", bias, p, allow_scalar=tgt.bias_scalar_ok)
    x = C.per_partition(data._read(np.float32), p)
    pre = (x * sc + b).astype(np.float32)
    out = _ops.ACTIVATIONS[name_](pre.astype(np.float64)).astype(np.float32)
    for t in (data, bias, scale):
        if isinstance(t, NkiTensor):
            C.psum_read(t)
    if reduce_op is not None:
        check(_ops.op_name(reduce_op) == "add", call, "reduce_op must be nl.add")
    inv = _runtime.current(call)
    if inv.act_reduce_regs is None:
        inv.act_reduce_regs = np.full(128, np.nan, dtype=np.float32)
    lanes = slice(data.partition_start(), data.partition_start() + p)
    if reduce_cmd in (_RC.reset, _RC.reset_reduce):
        inv.act_reduce_regs[lanes] = 0.0
    if reduce_cmd in (_RC.reduce, _RC.reset_reduce):
        check(reduce_op is not None, call, f"reduce_cmd={reduce_cmd.name} needs reduce_op=nl.add")
        inv.act_reduce_regs[lanes] += out.sum(axis=1, dtype=np.float32)
    check(reduce_cmd is not _RC.load_reduce, call, "reduce_cmd.load_reduce is not an activation command")
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, False, False)
    if reduce_res is not None:
        C.tensor(call, "reduce_res", reduce_res, ON_CHIP, "Scalar")
        check(reduce_res.shape[0] == p and reduce_res.free_size() == 1, call,
              f"reduce_res must be a [{p}, 1] tile, got {list(reduce_res.shape)}")
        reduce_res._write(inv.act_reduce_regs[lanes].reshape(reduce_res.shape))
        C.psum_write(reduce_res, False, False)


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """activation(..., reduce_cmd=reset_reduce, reduce_res=reduce_res): reduce_res = row sums of op's output."""
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
               reduce_cmd=_RC.reset_reduce)


from ._vector import (affine_select, bn_aggr, bn_stats, iota, reciprocal, tensor_partition_reduce,  # noqa
                      tensor_reduce, tensor_scalar, tensor_tensor, tensor_tensor_scan)
from ._fused import scalar_tensor_tensor, tensor_scalar_reduce  # noqa: E402,F401
from ._select import max8, nc_find_index8, nc_stream_shuffle, tensor_copy_predicated  # noqa: E402,F401
