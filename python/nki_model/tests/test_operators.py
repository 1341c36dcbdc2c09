"""Unit tests for the ALU operators and activation functions (the `op=` constants of nki.isa), against
hand-computed NumPy results.

Sections cited: NKI.md 4 ("Other VectorE building blocks": tensor_tensor / tensor_scalar; "nisa.activation";
"nl.* element-wise and reduction functions": the nl functions double as operator constants). NKI.md gives no
operator table; where a test needs one it cites the SDK page NKI.md draws on, `aws-neuron/aws-neuron-sdk`
nki/api/nki.api.shared.rst (RTD en/latest/nki/api/nki.api.shared.html): "Supported Math Operators for NKI ISA"
(called ALU table below) and "Supported Activation Functions for NKI ISA" (activation table), and the nl stubs in
nki/api/nki/language/__init__.py (RTD .../generated/nki.language.<name>.html).
"""

import math
import unittest

import numpy as np

from tests._util import rand, tile, values

import nki.isa as nisa
import nki.language as nl
from nki.model import NkiModelError, invocation

_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(x))


def _act(op, x, **kw):
    """nisa.activation(op) of fp32 data x (a fresh invocation must be running)."""
    d = nl.ndarray(x.shape, nl.float32)
    nisa.activation(dst=d, op=op, data=tile(x), **kw)
    return values(d)


def _tt(op, a, b, dtype=nl.float32, in_dtype=nl.float32, **kw):
    d = nl.ndarray(a.shape, dtype)
    nisa.tensor_tensor(dst=d, data1=tile(a, in_dtype), data2=tile(b, in_dtype), op=op, **kw)
    return values(d)


def _ts(x, op0, operand0, dtype=nl.float32, in_dtype=nl.float32, **kw):
    d = nl.ndarray(x.shape, dtype)
    nisa.tensor_scalar(dst=d, data=tile(x, in_dtype), op0=op0, operand0=operand0, **kw)
    return values(d)


class ComparisonAndLogicTest(unittest.TestCase):
    """Operators the generator emits: comparisons and logical ops give 1.0 / 0.0 (ALU table "Arithmetic")."""

    A = np.array([[1.0, 2.0, -3.0, 0.0], [5.5, -0.0, 7.0, -8.0]], np.float32)
    B = np.array([[1.0, 3.0, -4.0, 0.0], [5.0, 0.0, 7.0, 8.0]], np.float32)

    def test_comparisons_tensor_tensor(self):
        """NKI.md 4 "Other VectorE building blocks" (tensor_tensor) with nl.equal/not_equal/less/less_equal."""
        a, b = self.A, self.B
        want = {nl.equal: [[1, 0, 0, 1], [0, 1, 1, 0]], nl.not_equal: [[0, 1, 1, 0], [1, 0, 0, 1]],
                nl.less: [[0, 1, 0, 0], [0, 0, 0, 1]], nl.less_equal: [[1, 1, 0, 1], [0, 1, 1, 1]]}
        with invocation():
            for op, w in want.items():
                np.testing.assert_array_equal(_tt(op, a, b), np.array(w, np.float32), err_msg=op.__name__)
            # into an integer dst the 1.0/0.0 results become 1/0
            np.testing.assert_array_equal(_tt(nl.less, a, b, dtype=nl.int32), [[0, 1, 0, 0], [0, 0, 0, 1]])

    def test_comparisons_tensor_scalar(self):
        """NKI.md 4 (tensor_scalar (data op0 s0) op1 s1), the generator's `op0=nl.equal, operand0=0.0` form (a
        logical not) and reverse0 (operand on the left: 1 < x is x > 1)."""
        x = self.A
        with invocation():
            np.testing.assert_array_equal(_ts(x, nl.equal, 0.0), (x == 0).astype(np.float32))
            np.testing.assert_array_equal(_ts(x, nl.not_equal, 0.0), (x != 0).astype(np.float32))
            np.testing.assert_array_equal(_ts(x, nl.less, 1.0, reverse0=True), (1.0 < x).astype(np.float32))
            np.testing.assert_array_equal(_ts(x, nl.less_equal, 1.0), (x <= 1.0).astype(np.float32))
            v = tile(np.array([[2.0], [5.5]], np.float32))
            np.testing.assert_array_equal(_ts(x, nl.less, v), (x < np.array([[2.0], [5.5]])).astype(np.float32))

    def test_logical_ops(self):
        """ALU table "Logical And/Or/Xor" (nl.logical_and/or/xor stubs: boolean-like 0/1 inputs), through
        tensor_tensor (NKI.md 4), and as legal reductions (ALU table column "Legal Reduction op": Y)."""
        p = np.array([[0, 0, 1, 1]], np.float32)
        q = np.array([[0, 1, 0, 1]], np.float32)
        with invocation():
            np.testing.assert_array_equal(_tt(nl.logical_and, p, q), [[0, 0, 0, 1]])
            np.testing.assert_array_equal(_tt(nl.logical_or, p, q), [[0, 1, 1, 1]])
            np.testing.assert_array_equal(_tt(nl.logical_xor, p, q), [[0, 1, 1, 0]])
            d = nl.ndarray((1, 1), nl.float32)
            nisa.tensor_reduce(dst=d, op=nl.logical_or, data=tile(p), axis=1)
            np.testing.assert_array_equal(values(d), [[1.0]])
            nisa.tensor_reduce(dst=d, op=nl.logical_and, data=tile(p), axis=1)
            np.testing.assert_array_equal(values(d), [[0.0]])
            nisa.tensor_reduce(dst=d, op=nl.logical_xor, data=tile(np.array([[1, 1, 1, 0]], np.float32)), axis=1)
            np.testing.assert_array_equal(values(d), [[1.0]])

    def test_comparison_rules(self):
        """NKI.md 2 "Hardware addressing rules" / 3 (partitions <= 128) and NKI.md 2 "Who can touch which
        memory" (engines never touch HBM), for a comparison: the error names the call."""
        from nki.model import hbm
        with invocation():
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_tensor: data1 is in SHARED_HBM"):
                nisa.tensor_tensor(dst=nl.ndarray((2, 4), nl.float32), data1=hbm(self.A), data2=tile(self.B),
                                   op=nl.equal)
            with self.assertRaisesRegex(NkiModelError, r"^nl.ndarray: partition axis 129 > 128"):
                nl.ndarray((129, 4), nl.float32)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_scalar: operand0 must be float32"):
                nisa.tensor_scalar(dst=nl.ndarray((2, 4), nl.float32), data=tile(self.A), op0=nl.less,
                                   operand0=tile(np.zeros((2, 1)), nl.int32))


class ModFmodTest(unittest.TestCase):
    def test_mod_and_fmod(self):
        """nl.mod stub: Python x % y, sign of the divisor; nl.fmod stub: C fmod, sign of the dividend (NKI.md 4
        tensor_tensor; not listed in the ALU table, see the module docstring)."""
        a = np.array([[7.0, -7.0, 7.0, -7.0, 5.5, -0.5]], np.float32)
        b = np.array([[3.0, 3.0, -3.0, -3.0, 2.0, 2.0]], np.float32)
        with invocation():
            np.testing.assert_array_equal(_tt(nl.mod, a, b), [[1.0, 2.0, -2.0, -1.0, 1.5, 1.5]])
            np.testing.assert_array_equal(_tt(nl.fmod, a, b), [[1.0, -1.0, 1.0, -1.0, 1.5, -0.5]])

    def test_generator_forms(self):
        """The generator's tensor_scalar forms (NKI.md 4): frac(x) = x mod 1.0, and the sin range reduction
        ((x + pi) mod 2pi), then activation(nl.sin) - i.e. sin(x) for any x (activation table: sin on [-pi, pi])."""
        x = np.array([[-7.25, -1.0, 0.0, 0.75, 3.5, 10.0]], np.float32)
        with invocation():
            np.testing.assert_allclose(_ts(x, nl.mod, 1.0), np.array([[0.75, 0.0, 0.0, 0.75, 0.5, 0.0]]))
            np.testing.assert_allclose(_ts(x, nl.fmod, 1.0), np.array([[-0.25, 0.0, 0.0, 0.75, 0.5, 0.0]]))
            d = nl.ndarray(x.shape, nl.float32)
            nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.add, operand0=3.14159265, op1=nl.mod,
                               operand1=6.28318531)
            reduced = np.mod(x.astype(np.float64) + 3.14159265, 6.28318531)
            np.testing.assert_allclose(values(d), reduced, rtol=1e-6, atol=1e-6)
            nisa.tensor_scalar(dst=d, data=d, op0=nl.subtract, operand0=3.14159265)
            nisa.activation(dst=d, op=nl.sin, data=d)
            np.testing.assert_allclose(values(d), np.sin(x.astype(np.float64)), atol=1e-5)


class ActivationFunctionTest(unittest.TestCase):
    """NKI.md 4 "nisa.activation": dst = op(data * scale + bias) in fp32; every function of the activation table,
    computed here by hand in float64 (the model is exact; the Scalar Engine's polynomial fits are not modelled)."""

    def test_generator_functions(self):
        """log, sin, sign, gelu_apprx_tanh and reciprocal as activation functions (the generator emits them)."""
        pos = np.abs(rand(8, 16, seed=1)) + 0.05
        ang = np.clip(rand(8, 16, seed=2), -3.1, 3.1)      # sin's valid input range is [-pi, pi]
        x = rand(8, 16, seed=3)
        x[0, :3] = [0.0, -0.0, -2.0]
        with invocation():
            np.testing.assert_allclose(_act(nl.log, pos), np.log(pos.astype(np.float64)), rtol=1e-6)
            np.testing.assert_allclose(_act(nl.sin, ang), np.sin(ang.astype(np.float64)), rtol=1e-6, atol=1e-7)
            sign = np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))
            np.testing.assert_array_equal(_act(nl.sign, x), sign)
            x64 = x.astype(np.float64)
            tanh_gelu = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
            np.testing.assert_allclose(_act(nl.gelu_apprx_tanh, x), tanh_gelu, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(_act(nl.reciprocal, pos), 1.0 / pos.astype(np.float64), rtol=1e-6)
            # scale and bias apply before the function: 1 / (2 x + 1)
            np.testing.assert_allclose(_act(nl.reciprocal, pos, scale=2.0, bias=1.0),
                                       1.0 / (2 * pos.astype(np.float64) + 1), rtol=1e-6)
            np.testing.assert_allclose(_act(nl.log, pos, scale=tile(np.full((8, 1), 3.0, np.float32))),
                                       np.log((np.float32(3) * pos).astype(np.float64)), rtol=1e-6)  # fp32 x*scale

    def test_reciprocal_bias_on_v2(self):
        """nki.api.shared "NKI Engine Selection" note: activation(op=nl.reciprocal) does not support a bias on
        NeuronCore-v2; the error names the call. (On trn2 a bias works, as above.)"""
        x = np.abs(rand(4, 8)) + 1
        with invocation(target="trn1"):
            np.testing.assert_allclose(_act(nl.reciprocal, x), 1 / x.astype(np.float64), rtol=1e-6)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.activation: .*reciprocal takes no bias"):
                _act(nl.reciprocal, x, bias=tile(np.ones((4, 1), np.float32)))

    def test_other_functions(self):
        """arctan, softplus, mish, gelu_apprx_sigmoid (x * sigmoid(1.702 x): the docs name the approximation but
        give no constant; 1.702 is the usual one, a model choice)."""
        x = rand(8, 16, seed=4)
        small = np.clip(x, -1.5, 1.5)                   # arctan's valid input range is [-pi/2, pi/2]
        x64 = x.astype(np.float64)
        with invocation():
            np.testing.assert_allclose(_act(nl.arctan, small), np.arctan(small.astype(np.float64)), rtol=1e-6)
            sp = np.log(1.0 + np.exp(x64))
            np.testing.assert_allclose(_act(nl.softplus, x), sp, rtol=1e-6)
            np.testing.assert_allclose(_act(nl.mish, x), x64 * np.tanh(sp), rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(_act(nl.gelu_apprx_sigmoid, x), x64 / (1.0 + np.exp(-1.702 * x64)),
                                       rtol=1e-6, atol=1e-7)

    def test_derivatives(self):
        """gelu_dx, silu_dx, erf_dx, gelu_apprx_sigmoid_dx are the derivatives of gelu, silu, erf and
        gelu_apprx_sigmoid (activation table): checked against central differences of the hand-written
        functions, and gelu_dx / erf_dx also against their closed forms."""
        x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(4, 16)
        x64 = x.astype(np.float64)
        h = 1e-5

        def diff(f):
            return (f(x64 + h) - f(x64 - h)) / (2 * h)

        gelu = lambda v: 0.5 * v * (1 + _erf(v / math.sqrt(2)))  # noqa: E731
        silu = lambda v: v * _sigmoid(v)  # noqa: E731
        gelu_sig = lambda v: v * _sigmoid(1.702 * v)  # noqa: E731
        with invocation():
            np.testing.assert_allclose(_act(nl.gelu_dx, x), diff(gelu), rtol=1e-5, atol=1e-6)
            phi = np.exp(-0.5 * x64 ** 2) / math.sqrt(2 * math.pi)
            np.testing.assert_allclose(_act(nl.gelu_dx, x), 0.5 * (1 + _erf(x64 / math.sqrt(2))) + x64 * phi,
                                       rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(_act(nl.silu_dx, x), diff(silu), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(_act(nl.erf_dx, x), diff(_erf), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(_act(nl.erf_dx, x), 2 / math.sqrt(math.pi) * np.exp(-x64 ** 2),
                                       rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(_act(nl.gelu_apprx_sigmoid_dx, x), diff(gelu_sig), rtol=1e-5, atol=1e-6)

    def test_function_rules(self):
        """NKI.md 4 "nisa.activation": op must be an activation function (cos/tan are not in the activation
        table; nl.prelu is, but its slope is activate2's relu_param, which the model does not have); dst and
        data share a layout; data must be on chip. Each error names the call."""
        x = rand(4, 8)
        with invocation():
            for op in (nl.cos, nl.tan, nl.prelu, nl.add):
                with self.assertRaisesRegex(NkiModelError, r"^nisa.activation: op .* is not a Scalar Engine"):
                    _act(op, x)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.activation: data has 4 partitions but dst has 2"):
                nisa.activation(dst=nl.ndarray((2, 16), nl.float32), op=nl.mish, data=tile(x))
            with self.assertRaisesRegex(NkiModelError, r"^nisa.activation: dst is in SHARED_HBM"):
                nisa.activation(dst=nl.ndarray((4, 8), nl.float32, buffer=nl.shared_hbm), op=nl.softplus,
                                data=tile(x))


class AluOpTest(unittest.TestCase):
    """ALU table operators not covered elsewhere: abs_min (and abs_max), bitwise_xor, left_shift, right_shift,
    invert, negative. NKI.md 4 "Other VectorE building blocks" (tensor_tensor / tensor_scalar)."""

    def test_abs_max_abs_min_signed_v4_only(self):
        """nl.abs_max / nl.abs_min stubs (NKI 0.4.0): the input of larger / smaller magnitude *with its sign*,
        y on a tie; available only on NeuronCore-v4 (trn3) - elsewhere the error names the call."""
        a = np.array([[-5.0, 5.0, 1.0, -2.0, 0.5]], np.float32)
        b = np.array([[3.0, -3.0, -1.0, 2.5, -0.25]], np.float32)
        with invocation(target="trn3"):
            np.testing.assert_array_equal(_tt(nl.abs_max, a, b), [[-5.0, 5.0, -1.0, 2.5, 0.5]])
            np.testing.assert_array_equal(_tt(nl.abs_min, a, b), [[3.0, -3.0, -1.0, -2.0, -0.25]])
            np.testing.assert_array_equal(_ts(a, nl.abs_min, -3.0), [[-3.0, -3.0, 1.0, -2.0, 0.5]])
            np.testing.assert_array_equal(_ts(a, nl.abs_max, 0.0), [[-5.0, 5.0, 1.0, -2.0, 0.5]])
            np.testing.assert_array_equal(values(nl.abs_min(tile(a), tile(b))), [[3.0, -3.0, -1.0, -2.0, -0.25]])
        with invocation(target="trn2"):
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_tensor: nl.abs_min is available only on "
                                                       r"NeuronCore-v4"):
                _tt(nl.abs_min, a, b)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_scalar: nl.abs_max is available only"):
                _ts(a, nl.abs_max, 0.0)
            with self.assertRaisesRegex(NkiModelError, r"^nl.abs_min: nl.abs_min is available only"):
                nl.abs_min(tile(a), tile(b))

    def test_bitwise_xor(self):
        """ALU table "Bitwise Xor" (bitvec: integer dtypes, elements are bit patterns); also a legal reduction."""
        a = np.array([[0b1100, -1, 0x7FFF0000, 5]], np.int32)
        b = np.array([[0b1010, 0x0F, 0x0000FFFF, 5]], np.int32)
        with invocation():
            np.testing.assert_array_equal(_tt(nl.bitwise_xor, a, b, nl.int32, nl.int32),
                                          [[0b0110, -16, 0x7FFFFFFF, 0]])
            np.testing.assert_array_equal(_ts(a, nl.bitwise_xor, 0xFF, nl.int32, nl.int32),
                                          [[0b11110011, -256, 0x7FFF00FF, 250]])
            d = nl.ndarray((1, 1), nl.int32)
            nisa.tensor_reduce(dst=d, op=nl.bitwise_xor, data=tile(np.array([[1, 2, 4, 1]]), nl.int32), axis=1)
            np.testing.assert_array_equal(values(d), [[6]])

    def test_shifts(self):
        """ALU table: nl.left_shift is the (logical = arithmetic) shift left, nl.right_shift the *logical* shift
        right (an arithmetic shift right is "Not supported"); bits are patterns of the dtype's width, so bits
        shifted out are lost and a negative int32 shifted right fills with zeros."""
        with invocation():
            u8 = np.array([[1, 0xFF, 0x81, 3]], np.uint8)
            np.testing.assert_array_equal(_ts(u8, nl.left_shift, 1, nl.uint8, nl.uint8), [[2, 0xFE, 0x02, 6]])
            np.testing.assert_array_equal(_ts(u8, nl.right_shift, 1, nl.uint8, nl.uint8), [[0, 0x7F, 0x40, 1]])
            i32 = np.array([[1, -8, -1, 0x40000000]], np.int32)
            sh = np.array([[31, 1, 28, 1]], np.int32)
            np.testing.assert_array_equal(_tt(nl.left_shift, i32, sh, nl.int32, nl.int32),
                                          [[-2 ** 31, -16, -2 ** 28, -2 ** 31]])
            np.testing.assert_array_equal(_tt(nl.right_shift, i32, sh, nl.int32, nl.int32),
                                          [[0, 0x7FFFFFFC, 0xF, 0x20000000]])
            u16 = np.array([[0x8000, 0x1234]], np.uint16)
            np.testing.assert_array_equal(_ts(u16, nl.right_shift, 4, nl.uint16, nl.uint16), [[0x0800, 0x0123]])
            # two bitvec ops in one tensor_scalar: (x << 4) ^ 0xF
            d = nl.ndarray((1, 2), nl.uint16)
            nisa.tensor_scalar(dst=d, data=tile(u16, nl.uint16), op0=nl.left_shift, operand0=4,
                               op1=nl.bitwise_xor, operand1=0xF)
            np.testing.assert_array_equal(values(d), [[0x000F, 0x234F]])

    def test_invert(self):
        """ALU table "Bitwise Not" (nl.invert, unary bitvec: operand None or 0; the nl.invert stub: XOR with all
        ones), in tensor_scalar and as the nl.invert wrapper."""
        with invocation():
            np.testing.assert_array_equal(_ts(np.array([[0, 5, 255]]), nl.invert, None, nl.uint8, nl.uint8),
                                          [[255, 250, 0]])
            np.testing.assert_array_equal(_ts(np.array([[0, 5, -1]]), nl.invert, 0, nl.int32, nl.int32),
                                          [[-1, -6, 0]])
            np.testing.assert_array_equal(values(nl.invert(tile(np.array([[0, 0x00FF]]), nl.uint16))),
                                          [[0xFFFF, 0xFF00]])
            np.testing.assert_array_equal(values(nl.invert(tile(np.array([[7, -2 ** 31]]), nl.int32))),
                                          [[-8, 2 ** 31 - 1]])

    def test_negative(self):
        """nl.negative as a unary tensor_scalar op (operand None). UNCERTAIN: nl.negative is an nl function (its
        stub: numerical negative) but is not in the ALU table; the model accepts it as a unary ALU op."""
        x = rand(4, 8)
        with invocation():
            np.testing.assert_array_equal(_ts(x, nl.negative, None), -x)
            np.testing.assert_array_equal(values(nl.negative(tile(x))), -x)

    def test_bitvec_rules(self):
        """tensor_tensor / tensor_scalar docstrings: bitvec operators need integer dtypes, run on the Vector
        Engine only, and op0/op1 must both be bitvec or both arithmetic; unary ops take operand None or 0. Each
        error names the call."""
        f = np.ones((2, 4), np.float32)
        i = np.ones((2, 4), np.int32)
        with invocation():
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_tensor: bitvec op needs integer dtypes"):
                _tt(nl.left_shift, f, f)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_scalar: bitvec ops need integer dtypes"):
                _ts(f, nl.invert, None)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_scalar: bitvec operators run on the Vector"):
                _ts(i, nl.right_shift, 1, nl.int32, nl.int32, engine=nisa.gpsimd_engine)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_tensor: bitvec operators run on the Vector"):
                _tt(nl.bitwise_xor, i, i, nl.int32, nl.int32, engine=nisa.gpsimd_engine)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_scalar: op0 and op1 must both be bitvec"):
                d = nl.ndarray((2, 4), nl.int32)
                nisa.tensor_scalar(dst=d, data=tile(i, nl.int32), op0=nl.left_shift, operand0=1, op1=nl.add,
                                   operand1=1.0)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_scalar: unary op invert takes operand0 None"):
                _ts(i, nl.invert, 3, nl.int32, nl.int32)
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_tensor: op 'invert' is not a binary ALU"):
                _tt(nl.invert, i, i, nl.int32, nl.int32)
            with self.assertRaisesRegex(NkiModelError, r"^nl.bitwise_xor: input must be integer typed"):
                nl.bitwise_xor(tile(f), tile(f))
            with self.assertRaisesRegex(NkiModelError, r"^nisa.tensor_tensor: data1 has 2 partitions"):
                nisa.tensor_tensor(dst=nl.ndarray((2, 4), nl.int32), data1=tile(i, nl.int32),
                                   data2=tile(np.ones((4, 2)), nl.int32), op=nl.bitwise_xor)

    def test_nl_bitvec_wrappers(self):
        """nl.bitwise_xor / left_shift / right_shift stubs: integer inputs, a tile and a tile or scalar; the
        result has the first tile's dtype (or dtype=)."""
        a = np.array([[0x0F, 0xF0, 0x80]], np.uint8)
        with invocation():
            t = tile(a, nl.uint8)
            np.testing.assert_array_equal(values(nl.bitwise_xor(t, 0xFF)), [[0xF0, 0x0F, 0x7F]])
            np.testing.assert_array_equal(values(nl.left_shift(t, 1)), [[0x1E, 0xE0, 0x00]])
            np.testing.assert_array_equal(values(nl.right_shift(t, 4)), [[0x00, 0x0F, 0x08]])
            r = nl.right_shift(t, 4, dtype=nl.int32)
            self.assertEqual(r.dtype, nl.int32)
            np.testing.assert_array_equal(values(r), [[0x00, 0x0F, 0x08]])


if __name__ == "__main__":
    unittest.main()
