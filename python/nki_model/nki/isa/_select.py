"""Vector Engine data-selection instructions: nc_stream_shuffle, tensor_copy_predicated, max8, nc_find_index8.
Semantics from the SDK's nki.isa docstrings (NKI.md section 4 names the Vector Engine family)."""

import numpy as np

from .._errors import check
from .._tensor import NkiTensor, psum
from . import _checks as C
from ._checks import ON_CHIP


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """Within each 32-partition quadrant, output partition i copies input partition shuffle_mask[i] (255: leave
    it unmodified); the same mask applies to every quadrant. Same dtype and elements per partition."""
    call = "nisa.nc_stream_shuffle"
    C.tensor(call, "src", src, ON_CHIP)
    C.tensor(call, "dst", dst, ON_CHIP)
    check(src.dtype == dst.dtype, call, f"dst dtype {dst.dtype.name} must equal src dtype {src.dtype.name}")
    check(src.free_size() == dst.free_size(), call, "src and dst need the same elements per partition")
    mask = [int(m) for m in shuffle_mask]
    check(len(mask) == 32 and all(0 <= m < 32 or m == 255 for m in mask), call,
          "shuffle_mask must list 32 partitions (0..31, or 255 to keep)")
    active = -(-max(src.shape[0], dst.shape[0]) // 32) * 32
    allowed = {128: (0,), 96: (0,), 64: (0, 64), 32: (0, 32, 64, 96)}[active]
    for role, t in (("src", src), ("dst", dst)):
        check(t.partition_start() in allowed, call,
              f"{role} starts at partition {t.partition_start()}; with {active} active partitions it must start "
              f"at one of {allowed}")
    vals = C.per_partition(src._view, src.shape[0]).copy()
    out = C.per_partition(dst._view, dst.shape[0]).copy()
    for i in range(dst.shape[0]):
        q, lane = divmod(i, 32)
        m = mask[lane]
        if m != 255:
            j = q * 32 + m
            check(j < src.shape[0], call, f"partition {i} copies src partition {j}, outside src")
            out[i] = vals[j]
    C.psum_read(src)
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, False, False)


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """dst = src where predicate (uint8/16/32) is nonzero (zero with reverse_pred); elsewhere dst keeps its value.
    src may be a number; src and predicate cannot both be in PSUM; src and dst share a dtype."""
    call = "nisa.tensor_copy_predicated"
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    C.tensor(call, "predicate", predicate, ON_CHIP, "Vector")
    C.same_layout(call, "predicate", predicate, "dst", dst)
    check(predicate.dtype.name in ("uint8", "uint16", "uint32"), call, "predicate must be uint8, uint16 or uint32")
    p = dst.shape[0]
    if isinstance(src, NkiTensor):
        C.tensor(call, "src", src, ON_CHIP, "Vector")
        C.same_layout(call, "src", src, "dst", dst)
        check(src.dtype == dst.dtype, call, "src and dst must have the same dtype")
        check(not (src.buffer is psum and predicate.buffer is psum), call, "src and predicate cannot both be in PSUM")
        vals = C.per_partition(src._view, p)
    else:
        vals = np.full((p, dst.free_size()), src, dtype=np.float64)
    pred = C.per_partition(predicate._view, p) != 0
    if reverse_pred:
        pred = ~pred
    out = np.where(pred, vals, C.per_partition(dst._view, p))
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, False, False)


def _rows(call, t, lo=8, hi=16384):
    f = t.free_size()
    check(lo <= f <= hi, call, f"the source has {f} elements per partition; {lo}..{hi} allowed")
    return C.per_partition(t._read(np.float32), t.shape[0])


def max8(dst, src, name=None):
    """dst[P, 8] = the 8 largest values of each partition of src, descending (fp32 compare)."""
    call = "nisa.max8"
    C.tensor(call, "src", src, ON_CHIP, "Vector")
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    check(dst.shape[0] == src.shape[0] and dst.free_size() == 8, call, f"dst must be [{src.shape[0]}, 8]")
    x = _rows(call, src)
    dst._write(-np.sort(-x, axis=1)[:, :8].reshape(dst.shape))


def nc_find_index8(dst, data, vals, name=None):
    """dst[P, 8] (uint16/uint32) = index of the first occurrence of each of the 8 vals of a partition in that
    partition of data; all ones where absent."""
    call = "nisa.nc_find_index8"
    for role, t in (("data", data), ("vals", vals), ("dst", dst)):
        C.tensor(call, role, t, ON_CHIP, "Vector")
    p = data.shape[0]
    check(vals.shape[0] == p and vals.free_size() == 8, call, f"vals must have 8 elements in each of {p} partitions")
    check(dst.shape[0] == p and dst.free_size() == 8, call, f"dst must be [{p}, 8]")
    check(dst.dtype.name in ("uint16", "uint32"), call, "dst must be uint16 or uint32")
    x = _rows(call, data)
    v = C.per_partition(vals._read(np.float32), p)
    hit = x[:, None, :] == v[:, :, None]
    idx = np.where(hit.any(axis=2), hit.argmax(axis=2), np.iinfo(dst.dtype.storage).max)
    dst._write(idx.reshape(dst.shape))
