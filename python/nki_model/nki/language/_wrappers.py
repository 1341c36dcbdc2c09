"""The nl math functions: operator constants for nisa `op=` and experimental tile-returning wrappers (0.3+).

As wrappers they take on-chip tiles (SBUF/PSUM) or numbers, compute in fp32 with NumPy broadcasting, and return
a new SBUF tile (dtype: `dtype=` or the first tile's dtype). nl.load/nl.store move HBM <-> SBUF through
nisa.dma_copy; nl.matmul and nl.transpose return PSUM tiles computed by nisa.nc_matmul / nisa.nc_transpose.
NKI.md section 4 ("nl.* element-wise and reduction functions", "nl.matmul").
"""

import builtins

import numpy as np

from .. import _ops
from .._errors import check
from .._tensor import NkiTensor, psum, sbuf

__all__ = []


def _export(name, fn):
    fn.__name__ = name
    fn._nki_op = name
    globals()[name] = fn
    __all__.append(name)
    return fn


def _values(call, x):
    if isinstance(x, NkiTensor):
        check(x.on_chip, call, f"operand is in {x.buffer.name.upper()}; compute needs SBUF or PSUM (use nl.load)")
        if x.buffer is psum:
            x._psum_state()[1][...] = 0
        return x._read(np.float32)
    check(isinstance(x, (int, float, np.integer, np.floating)), call, f"operand {x!r} is not a tile or number")
    return np.float32(x)


def _result(call, values, like, dtype):
    from . import ndarray
    tiles = [t for t in like if isinstance(t, NkiTensor)]
    check(len(tiles) > 0, call, "at least one operand must be a tile")
    shape = tuple(np.shape(values))
    if len(shape) == 1:  # every free axis reduced away: an on-chip tile keeps a free axis of size 1
        shape = (shape[0], 1)
        values = np.reshape(values, shape)
    out = ndarray(shape, dtype or tiles[0].dtype, buffer=sbuf)
    out._write(values)
    return out


def _make_binary(name):
    def fn(x, y, dtype=None):
        call = f"nl.{name}"
        _ops.check_available(call, name)
        with np.errstate(all="ignore"):
            v = _ops.binary(name, _values(call, x), _values(call, y))
        return _result(call, v, (x, y), dtype)
    return _export(name, fn)


def _bit_operand(call, x):
    """The unsigned bit pattern (int64) of an integer tile or integer number (bitvec wrappers)."""
    if isinstance(x, NkiTensor):
        _values(call, x)  # buffer checks
        check(x.dtype.kind in ("int", "bool"), call, f"input must be integer typed, got {x.dtype.name}")
        return _ops.bits(x._view, x.dtype)
    check(isinstance(x, (int, np.integer)) and not isinstance(x, bool), call,
          f"operand {x!r} must be an integer tile or an integer")
    return np.int64(x)


def _result_bits(call, patterns, like, dtype):
    from . import ndarray
    from .. import _dtypes
    tiles = [t for t in like if isinstance(t, NkiTensor)]
    check(len(tiles) > 0, call, "at least one operand must be a tile")
    dt = _dtypes.as_dtype(dtype) if dtype is not None else tiles[0].dtype
    out = ndarray(tuple(np.shape(patterns)), dt, buffer=sbuf)
    out._write(_ops.from_bits(patterns, dt) if dt.kind != "float" else np.asarray(patterns))
    return out


def _make_bitvec(name):
    """nl.bitwise_and/or/xor, left_shift, right_shift: integer inputs, bit patterns, logical right shift."""
    def fn(x, y, dtype=None):
        call = f"nl.{name}"
        v = _ops.binary(name, _bit_operand(call, x), _bit_operand(call, y))
        return _result_bits(call, v, (x, y), dtype)
    return _export(name, fn)


def invert(x, dtype=None):
    """Bitwise NOT of an integer tile (XOR with all ones of its width)."""
    call = "nl.invert"
    check(isinstance(x, NkiTensor), call, "x must be a tile")
    return _result_bits(call, np.invert(_bit_operand(call, x)), (x,), dtype)



def _make_unary(name, impl):
    def fn(x, dtype=None):
        call = f"nl.{name}"
        v = np.asarray(impl(_values(call, x).astype(np.float64)), dtype=np.float32)
        return _result(call, v, (x,), dtype)
    return _export(name, fn)


for _n in _ops.ARITH:
    _make_binary(_n)
for _n in _ops.BITVEC:
    _make_bitvec(_n)
_export("invert", invert)
for _n, _f in _ops.ACTIVATIONS.items():
    _make_unary(_n, _f)
_make_unary("negative", lambda x: -x)
_make_unary("logical_not", lambda x: (x == 0).astype(np.float64))
_make_unary("ceil", np.ceil)
_make_unary("floor", np.floor)
_make_unary("trunc", np.trunc)
_make_unary("cos", np.cos)
_make_unary("tan", np.tan)
for _n in ("prelu", "bypass", "average"):  # operator constants only
    _export(_n, lambda *a, **k: (_ for _ in ()).throw(NotImplementedError("operator constant only")))


def _axes(call, x, axis):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = sorted(int(a) + x.ndim if int(a) < 0 else int(a) for a in axes)
    check(len(axes) > 0 and 0 not in axes, call, "axis 0 (the partition axis) cannot be reduced")
    check(axes == list(range(axes[0], x.ndim)), call, f"axis {tuple(axes)} must be the last contiguous free axes")
    return tuple(axes)


def _make_reduce(name, impl):
    def fn(x, axis, dtype=None, keepdims=False):
        call = f"nl.{name}"
        axes = _axes(call, x, axis)
        v = impl(_values(call, x).astype(np.float64), axis=axes, keepdims=keepdims)
        return _result(call, np.asarray(v, dtype=np.float32), (x,), dtype)
    fn.__name__ = name
    globals()[name] = fn
    __all__.append(name)


_make_reduce("sum", np.sum)
_make_reduce("max", np.max)
_make_reduce("min", np.min)
_make_reduce("mean", np.mean)
_make_reduce("prod", np.prod)
_make_reduce("var", lambda a, axis, keepdims: np.var(a, axis=axis, keepdims=True))
_make_reduce("all", lambda a, axis, keepdims: np.all(a != 0, axis=axis, keepdims=keepdims))
# the reduction wrappers double as operator constants for the ops of the same meaning
globals()["sum"]._nki_op = "add"
globals()["max"]._nki_op = "maximum"
globals()["min"]._nki_op = "minimum"


def load(src, dtype=None):
    """A new SBUF tile holding HBM `src` (axis 0 becomes the partition axis)."""
    from . import ndarray
    from .. import isa as nisa
    t = ndarray(src.shape if len(src.shape) >= 2 else (1,) + tuple(src.shape), dtype or src.dtype, buffer=sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def store(dst, value):
    from .. import isa as nisa
    nisa.dma_copy(dst=dst, src=value)


def copy(x, dtype=None):
    """A new SBUF tile with x's values (nl.copy is also the identity activation constant)."""
    return _result("nl.copy", _values("nl.copy", x), (x,), dtype)


copy._nki_op = "copy"


def where(condition, x, y, dtype=None):
    call = "nl.where"
    c = _values(call, condition) != 0
    return _result(call, np.where(c, _values(call, x), _values(call, y)), (x, y, condition), dtype)


def broadcast_to(x, shape, dtype=None):
    call = "nl.broadcast_to"
    check(len(shape) == x.ndim, call, f"shape {tuple(shape)} must have rank {x.ndim}")
    return _result(call, np.broadcast_to(_values(call, x), tuple(shape)).copy(), (x,), dtype)


def expand_dims(x, axis):
    return x.expand_dim(axis)


def softmax(x, axis=-1, dtype=None):
    call = "nl.softmax"
    axes = _axes(call, x, axis)
    v = _values(call, x).astype(np.float64)
    e = np.exp(v - v.max(axis=axes, keepdims=True))
    return _result(call, (e / e.sum(axis=axes, keepdims=True)).astype(np.float32), (x,), dtype)


def rms_norm(x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None):
    call = "nl.rms_norm"
    axes = _axes(call, x, axis)
    v = _values(call, x).astype(np.float64)
    r = v / np.sqrt((v * v).sum(axis=axes, keepdims=True) / n + epsilon) * _values(call, w)
    return _result(call, r.astype(np.float32), (x,), dtype)


def matmul(x, y, transpose_x=False):
    """x @ y (or x.T @ y with transpose_x=True) into a new fp32 PSUM tile, through nisa.nc_matmul (x, y in SBUF;
    x at most 128 x 128, y at most 128 partitions x 512)."""
    from . import float32, ndarray
    from .. import isa as nisa
    stationary = x
    if not transpose_x:  # the compiler's inserted transpose, modelled as an SBUF copy of x.T
        check(x.ndim == 2, "nl.matmul", "x must be 2-D")
        stationary = ndarray((x.shape[1], x.shape[0]), x.dtype, buffer=sbuf)
        stationary._write(x._view.T)
    out = ndarray((stationary.free_size(), y.free_size()), float32, buffer=psum)
    nisa.nc_matmul(dst=out, stationary=stationary, moving=y, accumulate=False)
    return out


def transpose(x, dtype=None):
    """x with partition and free axes swapped, as a new PSUM tile (Tensor Engine) when x is in SBUF."""
    from . import ndarray
    from .. import isa as nisa
    out = ndarray((x.free_size(), x.shape[0]), x.dtype, buffer=psum if x.buffer is sbuf else sbuf)
    nisa.nc_transpose(dst=out, data=x)
    return out


def shared_constant(constant):
    """A shared_hbm tensor holding `constant` (a NumPy array or the path of a .npy file)."""
    from . import ndarray, shared_hbm
    arr = np.load(constant) if isinstance(constant, str) else np.asarray(constant)
    t = ndarray(arr.shape, arr.dtype, buffer=shared_hbm)
    t._write(arr)
    return t


def shared_identity_matrix(n, dtype=None, dst=None):
    from . import ndarray, uint8
    t = dst if dst is not None else ndarray((n, n), dtype or uint8, buffer=sbuf)
    t._write(np.eye(n))
    return t


__all__ += ["load", "store", "copy", "where", "broadcast_to", "expand_dims", "softmax", "rms_norm", "matmul",
            "transpose", "shared_identity_matrix", "shared_constant"]
del builtins
