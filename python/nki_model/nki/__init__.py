"""A NumPy model of AWS NKI (Neuron Kernel Interface), new dialect (`import nki`, NKI 0.3+).

`@nki.jit` kernels called on NumPy arrays run eagerly on the CPU, one instruction at a time, with the hardware's
rules enforced (see README.md). This is the project's own model written from the public documentation
(/work/shared/docs/NKI.md); it is not the Neuron SDK.
"""

import inspect

import numpy as np

from . import _dtypes, _runtime
from ._errors import NkiModelError, check
from ._tensor import NkiTensor, _Storage, shared_hbm

__all__ = ["jit", "simulate", "Kernel", "NkiModelError", "dtype"]
dtype = _dtypes.DType  # the type of nl dtypes (annotations use nki.dtype)


def _wrap_input(call, i, a):
    from .model import TypedArray
    if isinstance(a, list):
        raise NkiModelError(call, f"argument {i} is a list; kernel arguments may not be lists (use tuples)")
    if isinstance(a, tuple):
        return tuple(_wrap_input(call, i, x) for x in a)
    dtype = None
    if isinstance(a, TypedArray):
        a, dtype = a.array, a.dtype
    if not isinstance(a, np.ndarray):
        return a
    try:
        dt = dtype or _dtypes.as_dtype(a.dtype)
    except TypeError:
        raise NkiModelError(call, f"argument {i} has dtype {a.dtype}, which is not an NKI dtype")
    arr = dt.convert(np.array(a, copy=True))
    st = _Storage(arr, shared_hbm, dt, f"arg{i}")
    return NkiTensor(arr, st)


def _unwrap_output(call, r):
    if r is None:
        return None
    if isinstance(r, tuple):
        return tuple(_unwrap_output(call, x) for x in r)
    if isinstance(r, NkiTensor):
        check(r.buffer is shared_hbm, call,
              f"returned tensor {r.name!r} is in {r.buffer.name}; kernel outputs must be allocated in nl.shared_hbm")
        return np.array(r._view, copy=True)
    raise NkiModelError(call, f"a kernel may return HBM tensors (or tuples of them), not {type(r).__name__}")


class Kernel:
    """A jitted kernel. kernel(*args) runs it once; kernel[g0, g1, ...](*args) runs one instance per SPMD grid
    point (nl.program_id(axis) tells them apart; shared_hbm allocations are shared between instances).
    After a call, `last_stats` holds the peak SBUF bytes per partition and peak PSUM banks of the run."""

    def __init__(self, fn, grid=(), target=None):
        self.fn = fn
        self.grid = grid
        self.target = target
        self.last_stats = None
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            params = []
        for p in params:
            check(p.kind is not inspect.Parameter.KEYWORD_ONLY, "nki.jit",
                  f"{self.__name__}: keyword-only parameter {p.name!r} (the NKI compiler rejects '*' in signatures)")

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)
        check(all(isinstance(g, int) and g > 0 for g in grid), "nki.jit", f"bad launch grid {grid}")
        return Kernel(self.fn, grid, self.target)

    def __call__(self, *args, **kwargs):
        call = f"nki.jit({self.__name__})"
        running = _runtime.current_or_none()
        if running is not None and running.active:  # a kernel called from a kernel runs inline, on its tensors
            return self.fn(*args, **kwargs)
        target = _runtime.resolve_target(self.target)
        targs = [_wrap_input(call, i, a) for i, a in enumerate(args)]
        tkw = {k: _wrap_input(call, k, v) for k, v in kwargs.items()}
        points = list(np.ndindex(*self.grid)) if self.grid else [()]
        shared = []
        result = None
        stats = {"sbuf_peak_bytes": 0, "psum_peak_banks": 0, "target": target.name}
        for pid in points:
            inv = _runtime.Invocation(target, pid, self.grid, shared)
            prev = _runtime.push(inv)
            try:
                result = self.fn(*targs, **tkw)
            finally:
                _runtime.pop(inv, prev)
            stats["sbuf_peak_bytes"] = max(stats["sbuf_peak_bytes"], inv.sbuf_peak)
            stats["psum_peak_banks"] = max(stats["psum_peak_banks"], inv.psum_peak_banks)
        self.last_stats = stats
        return _unwrap_output(call, result)


def jit(fn=None, **kwargs):
    """@nki.jit / @nki.jit(...): wraps a kernel function in a Kernel. Keyword options are accepted and ignored,
    except `target=` (a model extension: 'trn1', 'trn2', 'trn3')."""
    target = kwargs.pop("target", None)
    if fn is None:
        return lambda f: Kernel(f, target=target)
    return Kernel(fn, target=target)


def simulate(kernel):
    """nki.simulate(kernel)(*numpy_args): the model runs every kernel on the CPU, so this returns it as is."""
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


from . import isa, language, model, typing  # noqa: E402,F401
