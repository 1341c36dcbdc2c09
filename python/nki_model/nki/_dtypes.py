"""NKI data types and the conversions a store into a tensor of that type performs (NKI.md section 4, "dtypes").

Every NKI dtype is a `DType` object. Values are kept in a NumPy storage array: float32/tfloat32/bfloat16/fp8
live in float32 storage holding only values representable in the NKI type (every store rounds them), float16
lives in NumPy float16, integers in the matching NumPy integer type, bool_ in uint8.

Conversions (model choices, see README "Choices"):
- float -> bfloat16 / tfloat32 / float16 / fp8: IEEE round-to-nearest-even; overflow gives +-inf (NaN for the
  *fn formats, which have no inf); NaN stays NaN.
- float -> integer: round-to-nearest-even, saturate to the type's range, NaN -> 0.
- anything -> bool_: nonzero -> 1.
"""

import numpy as np

try:  # optional: lets callers pass ml_dtypes bfloat16 arrays when that package exists
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - not installed here
    _ml_dtypes = None


def _round_f32_bits(values, drop_bits):
    """Rounds float32 values to nearest-even, keeping 23-drop_bits mantissa bits (bf16: 16, tf32: 13)."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    half = (1 << (drop_bits - 1)) - 1
    lsb = (u >> drop_bits) & 1
    mask = np.uint64((0xFFFFFFFF >> drop_bits) << drop_bits)
    r = ((u + half + lsb) & mask).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), np.float32(np.nan), r)


def _round_small_float(values, man_bits, min_exp, max_finite, has_inf):
    """Rounds to a small float format (fp8): man_bits mantissa bits, smallest normal exponent min_exp."""
    x = np.asarray(values, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(ax > 0, ax, 1.0)))
    e = np.maximum(e, min_exp)
    quantum = np.exp2(e - man_bits)
    with np.errstate(invalid="ignore"):  # inf / quantum; inf and NaN are set below
        r = np.round(x / quantum) * quantum
    over = np.abs(r) > max_finite
    r = np.where(over, np.sign(x) * (np.inf if has_inf else np.nan), r)
    r = np.where(np.isnan(x), np.nan, r)
    r = np.where(np.isinf(x), (np.sign(x) * np.inf) if has_inf else np.nan, r)
    return r.astype(np.float32)


class DType:
    """One NKI data type: `name`, `itemsize` in bytes, `kind` ('float', 'int' or 'bool')."""

    def __init__(self, name, itemsize, kind, storage, quantize=None):
        self.name = name
        self.itemsize = itemsize
        self.kind = kind
        self.storage = np.dtype(storage)
        self._quantize = quantize

    def convert(self, values):
        """Converts any numeric array to this dtype's storage representation (the rounding a store does)."""
        v = np.asarray(values)
        if self.kind == "bool":
            return (v != 0).astype(self.storage)
        if self.kind == "int":
            if v.dtype.kind in "iub":
                info = np.iinfo(self.storage)
                return np.clip(v.astype(np.int64), info.min, info.max).astype(self.storage)
            f = np.nan_to_num(np.asarray(v, dtype=np.float64), nan=0.0)
            info = np.iinfo(self.storage)
            return np.clip(np.round(f), info.min, info.max).astype(self.storage)
        if self._quantize is not None:
            return self._quantize(v)
        with np.errstate(over="ignore"):
            return v.astype(self.storage)

    def fill_value(self):
        """The sentinel a fresh nl.ndarray holds (NKI.md section 6: NaN for floats, 4 for integers)."""
        return 4 if self.kind in ("int", "bool") else np.nan

    def __eq__(self, other):
        if isinstance(other, DType):
            return self.name == other.name
        try:
            return as_dtype(other).name == self.name
        except (TypeError, ValueError):
            return False

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"nl.{self.name}"


def _bf16(v):
    return _round_f32_bits(np.asarray(v, dtype=np.float32), 16)


def _tf32(v):
    return _round_f32_bits(np.asarray(v, dtype=np.float32), 13)


bool_ = DType("bool_", 1, "bool", np.uint8)
int8 = DType("int8", 1, "int", np.int8)
int16 = DType("int16", 2, "int", np.int16)
int32 = DType("int32", 4, "int", np.int32)
uint8 = DType("uint8", 1, "int", np.uint8)
uint16 = DType("uint16", 2, "int", np.uint16)
uint32 = DType("uint32", 4, "int", np.uint32)
float16 = DType("float16", 2, "float", np.float16)
float32 = DType("float32", 4, "float", np.float32)
bfloat16 = DType("bfloat16", 2, "float", np.float32, _bf16)
tfloat32 = DType("tfloat32", 4, "float", np.float32, _tf32)
float8_e4m3 = DType("float8_e4m3", 1, "float", np.float32,
                    lambda v: _round_small_float(v, 3, -6, 240.0, True))
float8_e4m3fn = DType("float8_e4m3fn", 1, "float", np.float32,
                      lambda v: _round_small_float(v, 3, -6, 448.0, False))
float8_e5m2 = DType("float8_e5m2", 1, "float", np.float32,
                    lambda v: _round_small_float(v, 2, -14, 57344.0, True))



def _not_modelled(name):
    def q(v):
        from ._errors import NkiModelError
        raise NkiModelError(f"nl.{name}", "values of this dtype are not modelled (MX / packed formats)")
    return q


# Names that exist so kernels can refer to them; storing values of these types is refused.
float8_e8m0fnu = DType("float8_e8m0fnu", 1, "float", np.float32, _not_modelled("float8_e8m0fnu"))
float8_e5m2_x4 = DType("float8_e5m2_x4", 4, "float", np.float32, _not_modelled("float8_e5m2_x4"))
float8_e4m3fn_x4 = DType("float8_e4m3fn_x4", 4, "float", np.float32, _not_modelled("float8_e4m3fn_x4"))
float4_e2m1fn_x4 = DType("float4_e2m1fn_x4", 2, "float", np.float32, _not_modelled("float4_e2m1fn_x4"))

ALL = [bool_, int8, int16, int32, uint8, uint16, uint32, float16, float32, bfloat16, tfloat32,
       float8_e4m3, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4]
_BY_NAME = {d.name: d for d in ALL}
_BY_NUMPY = {np.dtype(np.bool_): bool_, np.dtype(np.int8): int8, np.dtype(np.int16): int16,
             np.dtype(np.int32): int32, np.dtype(np.uint8): uint8, np.dtype(np.uint16): uint16,
             np.dtype(np.uint32): uint32, np.dtype(np.float16): float16, np.dtype(np.float32): float32}


def as_dtype(d):
    """Normalises an nl dtype, a NumPy dtype/type, or a dtype name to a DType; raises TypeError otherwise."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if _ml_dtypes is not None and np.dtype(d) == np.dtype(_ml_dtypes.bfloat16):
        return bfloat16
    try:
        nd = np.dtype(d)
    except TypeError as e:
        raise TypeError(f"not an NKI dtype: {d!r}") from e
    if nd in _BY_NUMPY:
        return _BY_NUMPY[nd]
    raise TypeError(f"not an NKI dtype: {d!r}")
