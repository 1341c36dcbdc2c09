"""nki.language (nl): dtypes, buffers, tile sizes, allocation, loop iterators, SPMD ids, operator constants and
the experimental convenience wrappers (NKI.md sections 2-4).

The math functions (nl.add, nl.exp, nl.maximum ...) are both callable wrappers that return a new SBUF tile and
the operator constants passed as `op=` to nisa instructions (they carry an `_nki_op` name).
"""

import builtins
import contextlib
import dataclasses

import numpy as np

from .. import _dtypes, _runtime
from .._dtypes import (bfloat16, bool_, float4_e2m1fn_x4, float8_e4m3, float8_e4m3fn,  # noqa: F401
                       float8_e4m3fn_x4, float8_e5m2, float8_e5m2_x4, float8_e8m0fnu, float16, float32, int8,
                       int16, int32, tfloat32, uint8, uint16, uint32)
from .._errors import NkiModelError, check
from .._tensor import (DynSlice, MemoryRegion, NkiTensor, _Storage, hbm, private_hbm, psum,  # noqa: F401
                       sbuf, shared_hbm)

fp32 = float32  # old spelling used as nl.fp32.min in some kernels
DType = _dtypes.DType


class NKIObject:
    """Base class for kernel-side configuration objects (nki.language.NKIObject). A subclass, @dataclass or not,
    is built from positional arguments (its dataclass fields in order) and keyword arguments; fields not given
    take their defaults; unannotated class attributes work as keyword-settable defaults."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:  # @dataclass does not replace an __init__ the class already has
            cls.__init__ = NKIObject.__init__

    def __init__(self, *args, **kwargs):
        fields = [f for f in dataclasses.fields(self) if f.init] if dataclasses.is_dataclass(self) else []
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} positional arguments, got {len(args)}")
        for f, v in zip(fields, args):
            setattr(self, f.name, v)
        for key, value in kwargs.items():
            setattr(self, key, value)
        for f in fields:
            if f.name in self.__dict__:
                continue
            if f.default_factory is not dataclasses.MISSING:
                setattr(self, f.name, f.default_factory())
            elif f.default is not dataclasses.MISSING:
                setattr(self, f.name, f.default)
            else:
                raise TypeError(f"{type(self).__name__} missing argument {f.name!r}")
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()


# ------------------------------------------------------------------------------------------------ tile sizes
class _TileSize:
    """nl.tile_size: hardware tile constants of the running kernel's target (NKI.md section 3; values from KLR)."""

    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1

    @staticmethod
    def _target():
        inv = _runtime.current_or_none()
        return inv.target if inv is not None and inv.active else _runtime.resolve_target()

    psum_num_banks = property(lambda self: self._target().psum_num_banks)
    total_available_sbuf_size = property(lambda self: self._target().sbuf_usable_bytes)
    sbuf_fmax_bytes = property(lambda self: self._target().sbuf_usable_bytes)
    sbuf_fmax = property(lambda self: self._target().sbuf_usable_bytes // 4)
    sbuf_size_bytes = property(lambda self: self._target().sbuf_physical_bytes * 128)


tile_size = _TileSize()


def is_hbm(buffer):
    return isinstance(buffer, MemoryRegion) and buffer.is_hbm


def is_on_chip(buffer):
    return buffer is sbuf or buffer is psum


def is_psum(buffer):
    return buffer is psum


def is_sbuf(buffer):
    return buffer is sbuf


# ------------------------------------------------------------------------------------------------ allocation
def ndarray(shape, dtype, buffer=sbuf, name="", address=None):
    """Allocates an uninitialised tensor (floats hold NaN, integers 4, as nki.simulate does).

    On-chip tensors: axis 0 is the partition axis (<= 128) and at least one free axis is required; SBUF costs
    prod(shape[1:]) * itemsize bytes per partition against the target's budget, PSUM whole 2 KiB banks.
    `address=(partition_offset, free_offset_bytes)` places an on-chip tensor by hand: it must fit the partitions
    and the per-partition capacity (PSUM offsets 4-byte aligned); it is outside the automatic budget and gets
    its own storage (tensors placed at overlapping addresses do not share data in the model).
    """
    call = "nl.ndarray"
    inv = _runtime.current(call)
    check(isinstance(buffer, MemoryRegion), call,
          f"buffer must be nl.sbuf/nl.psum/nl.hbm/nl.shared_hbm/nl.private_hbm, got {buffer!r}")
    check(isinstance(shape, (tuple, list)) and len(shape) > 0, call, f"shape must be a tuple, got {shape!r}")
    shape = tuple(int(s) for s in shape)
    check(builtins.all(s > 0 for s in shape), call, f"shape {shape} has a non-positive size")
    try:
        dt = _dtypes.as_dtype(dtype)
    except TypeError as e:
        raise NkiModelError(call, str(e))
    if buffer is shared_hbm:
        i = inv.shared_hbm_index
        inv.shared_hbm_index += 1
        if i < len(inv.shared_hbm):  # the same shared tensor in every SPMD instance
            st = inv.shared_hbm[i]
            check(st.array.shape == shape and st.dtype == dt, call, "SPMD instances allocate shared_hbm differently")
            return NkiTensor(st.array, st)
    record = None
    if not buffer.is_hbm:
        check(len(shape) >= 2, call, f"an on-chip tensor needs a partition axis and a free axis, got {shape}")
        check(shape[0] <= inv.target.pmax, call, f"partition axis {shape[0]} > {inv.target.pmax} partitions")
        nbytes = int(np.prod(shape[1:])) * dt.itemsize
        if address is not None:
            _check_address(call, inv.target, buffer, shape, nbytes, address)
        else:
            record = inv.alloc_sbuf(call, nbytes) if buffer is sbuf else inv.alloc_psum(call, nbytes)
    arr = np.full(shape, dt.fill_value(), dtype=dt.storage)
    st = _Storage(arr, buffer, dt, name)
    if address is not None and not buffer.is_hbm:
        st.partition_base, st.free_base = int(address[0]), int(address[1])
    if record is not None:
        _runtime.track(st, inv, record)
    if buffer is shared_hbm:
        inv.shared_hbm.append(st)
    return NkiTensor(arr, st)


def _check_address(call, target, buffer, shape, nbytes, address):
    check(isinstance(address, (tuple, list)) and len(address) == 2, call,
          f"address must be (partition_offset, free_offset), got {address!r}")
    p0, f0 = int(address[0]), int(address[1])
    check(p0 >= 0 and p0 + shape[0] <= target.pmax, call,
          f"address partition range {p0}..{p0 + shape[0]} exceeds {target.pmax} partitions")
    cap = target.sbuf_usable_bytes if buffer is sbuf else target.psum_bank_bytes * target.psum_num_banks
    check(f0 >= 0 and f0 + nbytes <= cap, call,
          f"address bytes {f0}..{f0 + nbytes} per partition exceed the {cap} bytes of {buffer.name.upper()}")
    if buffer is psum:
        check(f0 % 4 == 0, call, f"PSUM address {f0} is not 4-byte aligned (psum_min_align)")


def zeros(shape, dtype, buffer=sbuf, name=""):
    return full(shape, 0, dtype, buffer=buffer, name=name)


def ones(shape, dtype, buffer=sbuf, name=""):
    return full(shape, 1, dtype, buffer=buffer, name=name)


def full(shape, fill_value, dtype, buffer=sbuf, name=""):
    t = ndarray(shape, dtype, buffer=buffer, name=name)
    t._write(fill_value)
    return t


def zeros_like(x, dtype=None, buffer=None, name=""):
    """Zeros of x's shape; dtype defaults to x's, buffer to nl.sbuf (the docs; empty_like defaults to x's)."""
    return zeros(x.shape, dtype or x.dtype, buffer=buffer or sbuf, name=name)


def empty_like(x, dtype=None, buffer=None, name=""):
    return ndarray(x.shape, dtype or x.dtype, buffer=buffer or x.buffer, name=name)


def ds(start, size):
    """Dynamic slice start:start+size (static integers only in the model)."""
    return DynSlice(start, size)


# ------------------------------------------------------------------------------------------------ loops and SPMD
def affine_range(start, stop=None, step=1):
    """Iterations without loop-carried dependencies (not checked by the model); runs like range()."""
    return range(start, stop, step) if stop is not None else range(start)


def sequential_range(start, stop=None, step=1):
    return range(start, stop, step) if stop is not None else range(start)


def static_range(start, stop=None, step=1):
    return range(start, stop, step) if stop is not None else range(start)


def program_id(axis=0):
    inv = _runtime.current("nl.program_id")
    check(0 <= axis < len(inv.grid), "nl.program_id", f"axis {axis} outside the launch grid {inv.grid}")
    return inv.program_id[axis]


def num_programs(axes=0):
    inv = _runtime.current("nl.num_programs")
    if not inv.grid:
        return 1
    return inv.grid[axes]


def program_ndim():
    return len(_runtime.current("nl.program_ndim").grid)


@contextlib.contextmanager
def no_reorder():
    yield  # the model executes in program order anyway


def device_print(print_prefix, tensor):
    """Prints the prefix and the tensor's values to stdout at once (the documented CPU-simulation behaviour);
    the prefix must be a constant string and the tensor in SBUF or HBM."""
    call = "nl.device_print"
    _runtime.current(call)
    check(isinstance(print_prefix, str), call, f"print_prefix must be a constant string, got {print_prefix!r}")
    check(isinstance(tensor, NkiTensor), call, f"tensor must be an NkiTensor, got {type(tensor).__name__}")
    check(tensor.buffer is not psum, call, "tensor is in PSUM; device_print prints SBUF or HBM tensors")
    print(print_prefix, tensor._view)


from ._wrappers import *  # noqa: E402,F401,F403
from ._wrappers import __all__ as _wrapper_names  # noqa: E402,F401

