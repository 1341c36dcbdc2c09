"""Math operators (the `op=` values of nisa calls) and activation functions, computed in fp32.

Sources: NKI.md section 4 ("Other VectorE building blocks", "nl.* element-wise and reduction functions") and the
SDK's operator tables (nki.api.shared: supported math operators, legal reduction operators, activation functions).
An operator is identified by the `_nki_op` name carried by the nl function used as `op` (nl.add -> "add").
"""

import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64)).astype(np.float64)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _gelu_dx(x):
    return 0.5 * (1.0 + erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _softplus(x):
    return np.logaddexp(0.0, x)


def _safe(fn):
    def run(x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(x)
    return run


# Activation functions accepted by nisa.activation (op(data * scale + bias)), evaluated exactly in float64 and
# rounded to fp32; the hardware's piecewise-polynomial approximations are not modelled.
ACTIVATIONS = {
    "copy": lambda x: x,
    "square": lambda x: x * x,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": _gelu,
    "gelu_dx": _gelu_dx,
    "gelu_apprx_tanh": _gelu_tanh,
    "gelu_apprx_sigmoid": lambda x: x * _sigmoid(1.702 * x),
    "gelu_apprx_sigmoid_dx": lambda x: _sigmoid(1.702 * x) * (1.0 + 1.702 * x * (1.0 - _sigmoid(1.702 * x))),
    "silu": lambda x: x * _sigmoid(x),
    "silu_dx": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "tanh": np.tanh,
    "softplus": _softplus,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "erf": erf,
    "erf_dx": lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-x * x),
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "arctan": np.arctan,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "reciprocal": lambda x: 1.0 / x,
    "sign": np.sign,
    "abs": np.abs,
}
ACTIVATIONS = {k: _safe(v) for k, v in ACTIVATIONS.items()}

# Unary arithmetic ALU operators usable as tensor_scalar op0/op1 with a None/0 operand.
UNARY_ALU = {k: ACTIVATIONS[k] for k in ("abs", "square", "relu", "rsqrt", "reciprocal")}
UNARY_ALU["negative"] = _safe(lambda x: -x)


def _cmp(fn):
    return lambda a, b: fn(a, b).astype(a.dtype if hasattr(a, "dtype") else np.float32)


ARITH = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "mod": np.mod,
    "fmod": np.fmod,
    # the input of larger (smaller) magnitude, with its sign; on a tie y (nl.abs_max / nl.abs_min docs, 0.4.0)
    "abs_max": lambda a, b: np.where(np.abs(a) > np.abs(b), a, b),
    "abs_min": lambda a, b: np.where(np.abs(a) < np.abs(b), a, b),
    "equal": _cmp(np.equal),
    "not_equal": _cmp(np.not_equal),
    "greater": _cmp(np.greater),
    "greater_equal": _cmp(np.greater_equal),
    "less": _cmp(np.less),
    "less_equal": _cmp(np.less_equal),
    "logical_and": _cmp(lambda a, b: np.logical_and(a != 0, b != 0)),
    "logical_or": _cmp(lambda a, b: np.logical_or(a != 0, b != 0)),
    "logical_xor": _cmp(lambda a, b: np.logical_xor(a != 0, b != 0)),
}
# Bitvec operators work on bit patterns (nki.api.shared "Supported Math Operators": left_shift is the logical =
# arithmetic shift left, right_shift the *logical* shift right; an arithmetic shift right is not supported).
# The operands are the unsigned bit patterns of their dtype's width (see bits()); results are wrapped back.
BITVEC = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": lambda a, b: np.left_shift(a, np.clip(b, 0, 63)) * (b < 64),
    "right_shift": lambda a, b: np.right_shift(a, np.clip(b, 0, 63)) * (b < 64),
}
UNARY_BITVEC = {"invert": np.invert}  # Bitwise Not: XOR with all ones of the operand's width

# ALU operators only NeuronCore-v4 (trn3) and newer have (nl.abs_max / nl.abs_min docs, NKI 0.4.0 release notes).
V4_ONLY = ("abs_max", "abs_min")


def check_available(call, name):
    """Refuses an ALU operator the running kernel's target does not have."""
    from . import _runtime
    from ._errors import check
    if name in V4_ONLY:
        tgt = _runtime.current(call).target
        check(tgt.gen >= 4, call, f"nl.{name} is available only on NeuronCore-v4 (trn3) and newer, not {tgt.name}")


def bits(values, dtype):
    """The unsigned bit patterns (as int64) of integer `values` stored in NKI dtype `dtype`."""
    width = 8 * dtype.itemsize
    return np.asarray(values).astype(np.int64) & ((1 << width) - 1)


def from_bits(patterns, dtype):
    """Integer values of `dtype` whose bit patterns are the low bits of `patterns` (two's complement wrap)."""
    width = 8 * dtype.itemsize
    u = np.asarray(patterns).astype(np.int64) & ((1 << width) - 1)
    if dtype.kind == "int" and np.iinfo(dtype.storage).min < 0:
        u = np.where(u >= (1 << (width - 1)), u - (1 << width), u)
    return u

# Operators legal as a reduction (tensor_reduce op), with their NumPy reduction.
REDUCE = {
    "add": np.add.reduce,
    "subtract": None,  # handled specially: x0 - x1 - x2 ...
    "multiply": np.multiply.reduce,
    "maximum": np.maximum.reduce,
    "minimum": np.minimum.reduce,
    "bitwise_and": np.bitwise_and.reduce,
    "bitwise_or": np.bitwise_or.reduce,
    "bitwise_xor": np.bitwise_xor.reduce,
    "logical_and": lambda a, axis: np.logical_and.reduce(a != 0, axis=axis).astype(a.dtype),
    "logical_or": lambda a, axis: np.logical_or.reduce(a != 0, axis=axis).astype(a.dtype),
    "logical_xor": lambda a, axis: np.logical_xor.reduce(a != 0, axis=axis).astype(a.dtype),
}


def op_name(op):
    """The operator name of an `op=` argument (an nl function), or None if it is not an NKI operator."""
    return getattr(op, "_nki_op", None)


def binary(name, a, b):
    """Applies the arithmetic or bitvec operator `name` element-wise."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if name in ARITH:
            return ARITH[name](a, b)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        return BITVEC[name](a, b)


def reduce(name, a, axis):
    if name == "subtract":
        first = np.take(a.reshape(a.shape[:axis[0]] + (-1,)), 0, axis=-1)
        return first - np.add.reduce(a.reshape(a.shape[:axis[0]] + (-1,))[..., 1:], axis=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        return REDUCE[name](a, axis=axis)
