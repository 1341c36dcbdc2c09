"""Operand checks shared by the nisa instructions: buffers per engine, partition rules, shapes, PSUM state.

Rules (NKI.md sections 2 and 3): engines see only SBUF/PSUM (never HBM), GpSimd never PSUM, DMA never PSUM;
an instruction's on-chip tile occupies a contiguous run of at most 128 partitions starting at 0 (>64
partitions), 0 or 64 (33-64) or a multiple of 32 (<=32); Vector/Scalar free size is at most 64K elements from
SBUF and 4K from PSUM.
"""

import numpy as np

from .._errors import NkiModelError, check
from .._tensor import NkiTensor, psum, sbuf

ON_CHIP = (sbuf, psum)


def tensor(call, role, t, buffers, engine=None):
    """Checks that operand `role` of `call` is an NkiTensor in one of `buffers` with a legal partition range."""
    check(isinstance(t, NkiTensor), call, f"{role} must be an NkiTensor, got {type(t).__name__}")
    names = "/".join(b.name.upper() for b in buffers)
    if t.buffer not in buffers:
        who = f" ({engine} engine)" if engine else ""
        raise NkiModelError(call, f"{role} is in {t.buffer.name.upper()}, but this instruction{who} accepts "
                                  f"{names} only")
    if t.on_chip and engine is not None:
        partitions(call, role, t)
        limit = 4096 if t.buffer is psum else 65536
        check(t.free_size() <= limit, call,
              f"{role} has {t.free_size()} elements per partition > {limit} allowed from {t.buffer.name.upper()}")
    return t


def partitions(call, role, t):
    """The hardware addressing rule for the partition range of an instruction tile."""
    n = t.shape[0]
    check(n <= 128, call, f"{role} spans {n} partitions > 128")
    if n > 1:
        base = t._storage.array
        check(t._view.strides[0] == base.strides[0], call, f"{role} must occupy contiguous partitions (step 1)")
    start = t.partition_start()
    if n > 64:
        ok = start == 0
    elif n > 32:
        ok = start in (0, 64)
    else:
        ok = start % 32 == 0
    check(ok, call, f"{role} covers {n} partitions starting at partition {start}: a tile of >64 partitions must "
                    f"start at 0, of 33-64 at 0 or 64, of <=32 at a multiple of 32")


def same_layout(call, a_role, a, b_role, b):
    """Same partition count and same number of elements per partition."""
    check(a.shape[0] == b.shape[0], call,
          f"{a_role} has {a.shape[0]} partitions but {b_role} has {b.shape[0]}")
    check(a.free_size() == b.free_size(), call,
          f"{a_role} has {a.free_size()} elements per partition but {b_role} has {b.free_size()}")


def per_partition(values, p):
    """Reshapes an array to (partitions, elements per partition)."""
    return np.asarray(values).reshape(p, -1)


def vector_operand(call, role, v, p, allow_scalar=True, fp32_only=False):
    """A scalar or an on-chip [p, 1] tile broadcast along the free axis; returns an array broadcastable to (p, F)."""
    if isinstance(v, NkiTensor):
        tensor(call, role, v, ON_CHIP)
        check(v.shape[0] == p and v.free_size() == 1, call,
              f"{role} must be a [{p}, 1] tile (one value per partition), got {list(v.shape)}")
        if fp32_only:
            check(v.dtype.name == "float32", call, f"{role} must be float32, got {v.dtype.name}")
        return v._read().reshape(p, 1)
    check(allow_scalar, call, f"{role} must be a [{p}, 1] tile on this target, not a scalar")
    check(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool), call,
          f"{role} must be a number or a [{p}, 1] tile, got {type(v).__name__}")
    return np.float32(v)


def psum_read(t):
    """A non-matmul read closes the open matmul accumulation group of the PSUM locations read."""
    if t.buffer is psum:
        t._psum_state()[1][...] = 0


def psum_write(t, by_matmul, open_group):
    """Records who last wrote these PSUM locations (see nc_matmul's accumulate=None rule)."""
    if t.buffer is psum:
        valid, opened = t._psum_state()
        valid[...] = 1 if by_matmul else 0
        opened[...] = 1 if open_group else 0


def no_gpsimd_psum(call, engine_name, *tiles):
    for t in tiles:
        if isinstance(t, NkiTensor) and t.buffer is psum:
            raise NkiModelError(call, f"the {engine_name} engine cannot access PSUM")


def convert_via_fp32(src, dst):
    """Engine copies: bit-exact when the dtypes match, otherwise through float32 (NKI.md section 4)."""
    if src.dtype == dst.dtype:
        return src._view
    return src._read(np.float32)
