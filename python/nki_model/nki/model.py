"""Model-only helpers (not part of the NKI API): target selection, typed inputs, running API calls directly."""

import contextlib

import numpy as np

from . import _dtypes, _runtime
from ._errors import NkiModelError  # noqa: F401  (re-exported)
from ._tensor import NkiTensor, _Storage, shared_hbm


class TypedArray:
    """A NumPy array passed to a kernel as an HBM tensor of an NKI dtype NumPy lacks (e.g. bfloat16): the values
    are rounded to that dtype on entry. Outputs of such dtypes come back as float32 arrays holding exact values."""

    def __init__(self, array, dtype):
        self.array = np.asarray(array)
        self.dtype = _dtypes.as_dtype(dtype)


def typed(array, dtype):
    return TypedArray(array, dtype)


def set_target(name):
    """Selects 'trn1', 'trn2' (default) or 'trn3' for later kernel calls; None returns to the environment
    variable NEURON_PLATFORM_TARGET_OVERRIDE (then trn2)."""
    _runtime.set_default_target(name)


def target():
    return _runtime.resolve_target()


@contextlib.contextmanager
def invocation(target=None, program_id=(), grid=()):
    """Runs the body as one kernel instance, so nl/nisa calls can be made directly (used by the unit tests)."""
    inv = _runtime.Invocation(_runtime.resolve_target(target), program_id, grid)
    prev = _runtime.push(inv)
    try:
        yield inv
    finally:
        _runtime.pop(inv, prev)


def hbm(array, dtype=None):
    """An HBM (shared_hbm) tensor holding a copy of `array`, rounded to `dtype` (default: the array's dtype)."""
    dt = _dtypes.as_dtype(dtype if dtype is not None else np.asarray(array).dtype)
    arr = dt.convert(np.array(array, copy=True))
    return NkiTensor(arr, _Storage(arr, shared_hbm, dt, "hbm"))


def values(t):
    """A copy of a tensor's values as a NumPy array (float32 storage for bfloat16/tfloat32/fp8)."""
    return np.array(t._view, copy=True)
