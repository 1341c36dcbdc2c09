"""Unit tests, against hand-computed NumPy results, for the nl wrappers, the small nl/nisa utilities, the integer
and fp8 dtypes and the NkiTensor view methods not covered by the other modules.

Where NKI.md does not describe an API, the test cites the SDK page the model follows: `aws-neuron/aws-neuron-sdk`
nki/api/nki/language/__init__.py and nki/api/nki/isa/__init__.py (the generated pages RTD
en/latest/nki/api/generated/nki.language.<name>.html / nki.isa.<name>.html), called "the <name> stub" below.
"""

import contextlib
import io
import math
import unittest

import numpy as np

from tests._util import rand, tile, values

import nki
import nki.isa as nisa
import nki.language as nl
from nki.model import NkiModelError, hbm, invocation

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


class NlWrapperTest(unittest.TestCase):
    """NKI.md 4 "nl.* element-wise and reduction functions": the 0.3+ experimental wrappers compute and return
    a new SBUF tile (dtype: dtype= or the input's)."""

    def test_rounding_functions(self):
        """nl.ceil / nl.floor / nl.trunc stubs (their examples: ceil(3.2)=4, ceil(-3.7)=-3, floor(-3.2)=-4,
        trunc(-3.7)=-3)."""
        x = np.array([[3.2, -3.7, 3.7, -3.2, 2.0, -0.5, 0.5]], np.float32)
        with invocation():
            t = tile(x)
            np.testing.assert_array_equal(values(nl.ceil(t)), [[4, -3, 4, -3, 2, -0.0, 1]])
            np.testing.assert_array_equal(values(nl.floor(t)), [[3, -4, 3, -4, 2, -1, 0]])
            np.testing.assert_array_equal(values(nl.trunc(t)), [[3, -3, 3, -3, 2, -0.0, 0]])
            r = nl.floor(t, dtype=nl.int32)
            self.assertEqual(r.dtype, nl.int32)
            np.testing.assert_array_equal(values(r), [[3, -4, 3, -4, 2, -1, 0]])
            with self.assertRaisesRegex(NkiModelError, r"^nl.ceil: operand is in SHARED_HBM"):
                nl.ceil(hbm(x))

    def test_cos_tan(self):
        """nl.cos / nl.tan stubs (cos(0)=1, tan(0)=0); the wrappers are accurate over the whole domain."""
        x = np.array([[0.0, 0.5, -1.0, 3.0, 10.0]], np.float32)
        x64 = x.astype(np.float64)
        with invocation():
            np.testing.assert_allclose(values(nl.cos(tile(x))), np.cos(x64), rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(values(nl.tan(tile(x))), np.tan(x64), rtol=1e-6, atol=1e-7)

    def test_logical_not(self):
        """nl.logical_not stub: XOR with 1 for boolean-like (0/1) inputs."""
        with invocation():
            np.testing.assert_array_equal(values(nl.logical_not(tile(np.array([[0.0, 1.0, 1.0, 0.0]])))),
                                          [[1, 0, 0, 1]])
            np.testing.assert_array_equal(values(nl.logical_not(tile(np.array([[0, 1]]), nl.uint8))), [[1, 0]])

    def test_operator_constants_only(self):
        """nl.prelu (an activation op for activate2, slope = relu_param) and nl.average exist in the nl stubs as
        constants, not functions: the model names them but refuses to call them."""
        for c, name in ((nl.prelu, "prelu"), (nl.average, "average")):
            self.assertEqual(c._nki_op, name)
            with invocation(), self.assertRaises(NotImplementedError):
                c(tile(np.ones((2, 2))))

    def test_reductions(self):
        """nl.min / nl.prod / nl.var / nl.all stubs: reduce the last contiguous free axes; var is numpy.var
        (population) and "keepdims currently ignored; result always has keepdims=True shape"; all is the logical
        AND reduction; axis 0 is refused (error names the call)."""
        x = rand(8, 4, 6)
        x64 = x.astype(np.float64)
        with invocation():
            t = tile(x)
            np.testing.assert_array_equal(values(nl.min(t, axis=2)), x.min(2))
            np.testing.assert_array_equal(values(nl.min(t, axis=[1, 2], keepdims=True)), x.min((1, 2))[:, None, None])
            np.testing.assert_allclose(values(nl.prod(t, axis=2)), x64.prod(2), rtol=1e-6)
            v = nl.var(t, axis=(1, 2))
            self.assertEqual(v.shape, (8, 1, 1))
            mean = x64.mean(axis=(1, 2), keepdims=True)
            np.testing.assert_allclose(values(v), ((x64 - mean) ** 2).mean(axis=(1, 2), keepdims=True), rtol=1e-5)
            self.assertEqual(nl.var(t, axis=2, keepdims=False).shape, (8, 4, 1))
            b = np.array([[1, 1, 1], [1, 0, 1], [2, -1, 0.5]], np.float32)
            np.testing.assert_array_equal(values(nl.all(tile(b), axis=1)), [[1], [0], [1]])  # kept as [P, 1]
            self.assertEqual(nl.all(tile(b, nl.uint8), axis=1).dtype, nl.uint8)
            for fn in (nl.min, nl.prod, nl.var, nl.all):
                with self.assertRaisesRegex(NkiModelError, rf"^nl.{fn.__name__}: axis 0 .* cannot be reduced"):
                    fn(t, axis=0)
            with self.assertRaisesRegex(NkiModelError, r"^nl.var: axis \(1,\) must be the last contiguous"):
                nl.var(t, axis=1)

    def test_rms_norm(self):
        """nl.rms_norm stub: x / RMS(x) * w over `axis`, RMS = sqrt(sum(x^2) / n + epsilon)."""
        x, w = rand(16, 32, seed=1), rand(16, 32, seed=2)
        x64 = x.astype(np.float64)
        with invocation():
            r = nl.rms_norm(tile(x), tile(w), axis=1, n=32, epsilon=1e-3)
            want = x64 / np.sqrt((x64 ** 2).sum(1, keepdims=True) / 32 + 1e-3) * w
            np.testing.assert_allclose(values(r), want, rtol=1e-5, atol=1e-6)
            # the stub's example: x = 2, w = 1 -> 2 / sqrt(4 + 1e-6)
            ex = nl.rms_norm(nl.full((128, 512), 2.0, nl.float32), nl.full((128, 512), 1.0, nl.float32), axis=1,
                             n=512)
            np.testing.assert_allclose(values(ex), 2 / math.sqrt(4 + 1e-6), rtol=1e-6)
            with self.assertRaisesRegex(NkiModelError, r"^nl.rms_norm: axis 0"):
                nl.rms_norm(tile(x), tile(w), axis=0, n=16)

    def test_expand_dims(self):
        """nl.expand_dims stub: a view with a new axis at `axis` (writes through); on chip the new axis cannot
        precede the partition axis (NkiTensor.expand_dim constraint)."""
        with invocation():
            t = tile(np.arange(12, dtype=np.float32).reshape(4, 3))
            e = nl.expand_dims(t, 1)
            self.assertEqual(e.shape, (4, 1, 3))
            e[:, 0, 1:2] = 7.0
            np.testing.assert_array_equal(values(t)[:, 1], 7.0)
            self.assertEqual(nl.expand_dims(t, 2).shape, (4, 3, 1))
            with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.expand_dim: cannot insert before the partition"):
                nl.expand_dims(t, 0)
            self.assertEqual(nl.expand_dims(hbm(np.zeros((4, 3), np.float32)), 0).shape, (1, 4, 3))

    def test_zeros_like_and_ones(self):
        """nl.zeros_like stub: zeros of x's shape and dtype, buffer defaults to nl.sbuf (even for an HBM x);
        nl.ones stub: ones, buffer defaults to nl.sbuf. Allocation rules (NKI.md 2: <= 128 partitions) apply."""
        with invocation():
            h = hbm(np.ones((4, 6), np.float16))
            z = nl.zeros_like(h)
            self.assertIs(z.buffer, nl.sbuf)
            self.assertEqual((z.shape, z.dtype), ((4, 6), nl.float16))
            np.testing.assert_array_equal(values(z), 0)
            z2 = nl.zeros_like(h, dtype=nl.int32, buffer=nl.psum)
            self.assertEqual((z2.buffer, z2.dtype), (nl.psum, nl.int32))
            o = nl.ones((2, 3, 4), nl.bfloat16)
            self.assertIs(o.buffer, nl.sbuf)
            np.testing.assert_array_equal(values(o), np.ones((2, 3, 4)))
            np.testing.assert_array_equal(values(nl.ones((5,), nl.int32, buffer=nl.shared_hbm)), [1] * 5)
            with self.assertRaisesRegex(NkiModelError, r"partition axis 129 > 128"):
                nl.ones((129, 2), nl.float32)
            with self.assertRaisesRegex(NkiModelError, r"partition axis 200 > 128"):
                nl.zeros_like(hbm(np.zeros((200, 2), np.float32)))


class UtilityTest(unittest.TestCase):
    def test_device_print(self):
        """NKI.md 6 (the simulator supports nl.device_print) and the device_print stub: in CPU simulation it
        prints the prefix and the tile's values at once; the tensor may be in SBUF or HBM (PSUM refused) and the
        prefix must be a constant string. Errors name the call."""
        x = np.array([[1.5, -2.0]], np.float32)
        out = io.StringIO()
        with invocation(), contextlib.redirect_stdout(out):
            nl.device_print("tile_x", tile(x))
            nl.device_print("hbm_x", hbm(x))
        lines = out.getvalue().splitlines()
        self.assertEqual(lines, ["tile_x [[ 1.5 -2. ]]", "hbm_x [[ 1.5 -2. ]]"])
        with invocation():
            with self.assertRaisesRegex(NkiModelError, r"^nl.device_print: tensor is in PSUM"):
                nl.device_print("p", tile(x, buffer=nl.psum))
            with self.assertRaisesRegex(NkiModelError, r"^nl.device_print: print_prefix must be a constant string"):
                nl.device_print(3, tile(x))
        with self.assertRaisesRegex(NkiModelError, r"^nl.device_print: called outside a running kernel"):
            nl.device_print("x", None)

    def test_no_reorder(self):
        """no_reorder stub: a context manager; the operations inside run in program order (its example:
        full 3 + full 2 = 5)."""
        with invocation():
            with nl.no_reorder():
                a = nl.full((128, 512), 3.0, dtype=nl.float32, buffer=nl.sbuf)
                b = nl.full((128, 512), 2.0, dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
                nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.multiply)  # (3 + 2) * 2, in order
            np.testing.assert_array_equal(values(a), 10.0)

    def test_program_ndim(self):
        """NKI.md 1 "Launch grids": nl.program_ndim() is the number of grid axes (its stub: 0 if no grid)."""
        @nki.jit
        def k(x):
            out = nl.ndarray((1, 3), nl.int32, buffer=nl.shared_hbm)
            t = nl.ndarray((1, 3), nl.int32)
            nisa.memset(dst=t, value=nl.program_ndim())
            nisa.memset(dst=t[:, 1:2], value=nl.num_programs(0))
            nisa.memset(dst=t[:, 2:3], value=nl.num_programs(nl.program_ndim() - 1) if nl.program_ndim() else 1)
            nisa.dma_copy(dst=out, src=t)
            return out
        x = np.zeros((1, 1), np.float32)
        np.testing.assert_array_equal(k(x), [[0, 1, 1]])
        np.testing.assert_array_equal(k[4](x), [[1, 4, 4]])
        np.testing.assert_array_equal(k[2, 3](x), [[2, 2, 3]])

    def test_buffer_predicates(self):
        """NKI.md 2 "Buffer names" and the is_hbm/is_sbuf/is_psum/is_on_chip stubs: hbm (= private_hbm) and
        shared_hbm are HBM; sbuf and psum are on chip."""
        table = {nl.sbuf: (False, True, False, True), nl.psum: (False, False, True, True),
                 nl.hbm: (True, False, False, False), nl.private_hbm: (True, False, False, False),
                 nl.shared_hbm: (True, False, False, False)}
        for buf, want in table.items():
            got = (nl.is_hbm(buf), nl.is_sbuf(buf), nl.is_psum(buf), nl.is_on_chip(buf))
            self.assertEqual(got, want, buf)
        self.assertIs(nl.hbm, nl.private_hbm)
        with invocation():
            self.assertTrue(nl.is_psum(nl.ndarray((2, 2), nl.float32, buffer=nl.psum).buffer))

    def test_get_nc_version(self):
        """NKI.md 1/3 (trn1 = NeuronCore-v2, trn2 = v3, trn3 = v4) and the get_nc_version stub: the nc_version
        of the current target; outside a kernel the error names the call."""
        for target, want in (("trn1", nisa.nc_version.gen2), ("trn2", nisa.nc_version.gen3),
                             ("trn3", nisa.nc_version.gen4)):
            with invocation(target=target):
                self.assertIs(nisa.get_nc_version(), want)
        self.assertEqual([v.value for v in nisa.nc_version], [2, 3, 4])
        with self.assertRaisesRegex(NkiModelError, r"^nisa.get_nc_version: called outside"):
            nisa.get_nc_version()


class IntAndFp8DTypeTest(unittest.TestCase):
    """NKI.md 4 "dtypes" (int16, uint16, float8_e5m2, float8_e4m3fn; the nl stubs: e4m3fn "no inf, NaN
    represented by 0bS111'1111") and NKI.md 6 (the simulator stores low-precision types with ml_dtypes). The docs
    do not define rounding/saturation of stores; the model's choices (README "Conversions") are checked here:
    floats round to nearest-even, fp8 overflow gives inf (e5m2) / NaN (e4m3fn, as ml_dtypes), integers round
    half-even and saturate, NaN -> 0."""

    def _store(self, vals, dtype):
        with invocation():
            return values(tile(np.asarray(vals, np.float32), dtype))

    def test_int16_uint16(self):
        """int16: [-32768, 32767]; uint16: [0, 65535]; 2 bytes each (NKI.md 4 "dtypes")."""
        v = [[2.5, 3.5, -2.5, -0.5, 1e6, -1e6, np.nan, 32767.4]]
        np.testing.assert_array_equal(self._store(v, nl.int16), [[2, 4, -2, 0, 32767, -32768, 0, 32767]])
        np.testing.assert_array_equal(self._store(v, nl.uint16), [[2, 4, 0, 0, 65535, 0, 0, 32767]])
        self.assertEqual((nl.int16.itemsize, nl.uint16.itemsize), (2, 2))
        with invocation():
            # integer to integer: exact inside the range, saturating outside
            t = tile(np.array([[70000, -5, 65535]], np.int32), nl.int32)
            d = nl.ndarray((1, 3), nl.uint16)
            nisa.tensor_copy(dst=d, src=t)
            np.testing.assert_array_equal(values(d), [[65535, 0, 65535]])
            self.assertEqual(values(d).dtype, np.uint16)
        with invocation():
            # SBUF cost is 2 bytes per element (NKI.md 3 capacity)
            n = nl.tile_size.total_available_sbuf_size // 2
            big = nl.ndarray((128, n), nl.int16)  # noqa: F841 (fits exactly)
            with self.assertRaisesRegex(NkiModelError, r"^nl.ndarray: SBUF capacity exceeded"):
                nl.ndarray((128, 1), nl.uint16)

    def test_float8_e5m2(self):
        """float8_e5m2 (1S,5E,2M): RNE to 2 mantissa bits, max 57344, overflow past 61440 -> inf, subnormal step
        2^-16."""
        v = [[1.0, 1.1, 1.125, 1.375, -1.375, 60000.0, 61440.0, -1e6, 2.0 ** -17, 1.5 * 2.0 ** -17, np.inf,
              np.nan]]
        want = [[1.0, 1.0, 1.0, 1.5, -1.5, 57344.0, np.inf, -np.inf, 0.0, 2.0 ** -16, np.inf, np.nan]]
        got = self._store(v, nl.float8_e5m2)
        np.testing.assert_array_equal(got, want)
        if ml_dtypes is not None:
            ref = np.asarray(v, np.float32).astype(ml_dtypes.float8_e5m2).astype(np.float32)
            np.testing.assert_array_equal(got, ref)

    def test_float8_e4m3fn(self):
        """float8_e4m3fn (1S,4E,3M, no inf): RNE to 3 mantissa bits, max 448, past it (and inf) -> NaN,
        subnormal step 2^-9."""
        v = [[1.0625, 1.1875, 460.0, 464.0, -464.0, 470.0, np.inf, 2.0 ** -10, 3 * 2.0 ** -11, -0.0, np.nan]]
        want = [[1.0, 1.25, 448.0, 448.0, -448.0, np.nan, np.nan, 0.0, 2.0 ** -9, -0.0, np.nan]]
        got = self._store(v, nl.float8_e4m3fn)
        np.testing.assert_array_equal(got, want)
        self.assertTrue(np.signbit(got[0, 9]))
        if ml_dtypes is not None:
            ref = np.asarray(v, np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
            np.testing.assert_array_equal(got, ref)

    def test_fp8_engine_store_and_matmul(self):
        """An engine result stored into fp8 is rounded (NKI.md 4: results are cast to dst.dtype); fp8_e5m2 and
        fp8_e4m3fn are Tensor Engine input types (NKI.md 4 "nisa.nc_matmul"), int16 is not (error names the call)."""
        with invocation():
            d = nl.ndarray((1, 3), nl.float8_e5m2)
            nisa.tensor_scalar(dst=d, data=tile(np.array([[1.0, 2.0, 3.0]])), op0=nl.multiply, operand0=1.2)
            np.testing.assert_array_equal(values(d), [[1.25, 2.5, 3.5]])  # 1.2, 2.4, 3.6 to 2 mantissa bits
            s = tile(np.array([[1.0, 2.0], [0.5, -1.0]]), nl.float8_e4m3fn)
            m = tile(np.array([[3.0], [4.0]]), nl.float8_e5m2)
            p = nl.ndarray((2, 1), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=p, stationary=s, moving=m)
            np.testing.assert_array_equal(values(p), [[1 * 3 + 0.5 * 4], [2 * 3 - 4]])
            with self.assertRaisesRegex(NkiModelError, r"^nisa.nc_matmul: stationary dtype int16 is not a Tensor"):
                nisa.nc_matmul(dst=p, stationary=tile(np.ones((2, 2)), nl.int16), moving=m)


class TensorMethodTest(unittest.TestCase):
    """NKI.md 2 "Allocation" / "Indexing" (views share storage) and the NkiTensor method stubs (expand_dim,
    squeeze_dim, select, slice, and the strides / offset attributes, in elements)."""

    def test_expand_squeeze_dim(self):
        """expand_dim(dim) inserts a size-1 axis, squeeze_dim(dim) removes one (t.shape[dim] must be 1); on chip
        neither may touch dim 0; both are views that write through."""
        with invocation():
            t = tile(np.zeros((128, 64)))
            e = t.expand_dim(1)
            self.assertEqual(e.shape, (128, 1, 64))
            s = e.squeeze_dim(1)
            self.assertEqual(s.shape, (128, 64))
            s[:, 3:4] = 2.0
            np.testing.assert_array_equal(values(t)[:, 3], 2.0)
            with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.expand_dim: cannot insert before"):
                t.expand_dim(0)
            with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.squeeze_dim: axis 1 has size 64, not 1"):
                t.squeeze_dim(1)
            with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.squeeze_dim: cannot remove the partition"):
                tile(np.zeros((1, 4))).squeeze_dim(0)
            h = hbm(np.arange(6, dtype=np.float32).reshape(1, 6))
            self.assertEqual(h.squeeze_dim(0).shape, (6,))
            self.assertEqual(h.expand_dim(0).shape, (1, 1, 6))

    def test_select(self):
        """select(dim, index): the static form is t[:, index, :] and removes the axis (stub example: (128, 8, 64)
        select(1, 3) -> (128, 64)); 0 <= index < shape[dim]; on HBM dim 0 may be selected. Dynamic (tensor)
        indices are not modelled and raise."""
        x = np.arange(4 * 8 * 5, dtype=np.float32).reshape(4, 8, 5)
        with invocation():
            t = tile(x)
            s = t.select(1, 3)
            self.assertEqual(s.shape, (4, 5))
            np.testing.assert_array_equal(values(s), x[:, 3, :])
            np.testing.assert_array_equal(values(t.select(2, 4)), x[:, :, 4])
            h = hbm(x)
            np.testing.assert_array_equal(values(h.select(0, 2)), x[2])
            with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.__getitem__: index 8 out of range"):
                t.select(1, 8)
            with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.select: dynamic select is not modelled"):
                h.select(0, tile(np.zeros((1, 1)), nl.int32))

    def test_slice(self):
        """slice(dim, start, end, step) = t[:, start:end:step] (stub examples: (128, 64).slice(1, 8, 24, 1) ->
        (128, 16), .slice(1, 0, 64, 2) -> (128, 32)); constraints 0 <= start < end <= shape[dim], step >= 1."""
        x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
        with invocation():
            t = tile(x)
            a = t.slice(1, 8, 24, 1)
            self.assertEqual(a.shape, (128, 16))
            np.testing.assert_array_equal(values(a), x[:, 8:24])
            b = t.slice(1, 0, 64, 2)
            self.assertEqual(b.shape, (128, 32))
            np.testing.assert_array_equal(values(b), x[:, 0:64:2])
            np.testing.assert_array_equal(values(t.slice(0, 32, 64)), x[32:64])
            for args in ((1, -4, 64), (1, 10, 10), (1, 0, 65), (1, 0, 8, 0), (2, 0, 1)):
                with self.assertRaisesRegex(NkiModelError, r"^NkiTensor.slice: "):
                    t.slice(*args)
            b[:, 0:1] = -1.0  # a view: writes through
            self.assertEqual(values(t)[5, 0], -1.0)
            self.assertEqual(values(t)[5, 1], x[5, 1])

    def test_strides_and_offset(self):
        """strides / offset are in elements of the underlying storage (the ap() pattern units); offset is where
        the view starts; get_pattern pairs strides with shape."""
        with invocation():
            h = hbm(np.zeros((4, 6, 8), np.float32))
            self.assertEqual((h.strides, h.offset), ((48, 8, 1), 0))
            v = h[1:3, 2:4, ::2]
            self.assertEqual((v.shape, v.strides, v.offset), ((2, 2, 4), (48, 8, 2), 1 * 48 + 2 * 8))
            self.assertEqual(v.get_pattern(), [[48, 2], [8, 2], [2, 4]])
            self.assertEqual(h.permute((2, 0, 1)).strides, (1, 48, 8))
            self.assertEqual(h.select(1, 5).offset, 40)
            self.assertEqual(h.select(1, 5).strides, (48, 1))
            t = tile(np.zeros((16, 10)), nl.bfloat16)
            s = t[4:8, 3:9]
            self.assertEqual((s.strides, s.offset), ((10, 1), 4 * 10 + 3))
            self.assertEqual(t.expand_dim(1).shape, (16, 1, 10))
            w = h.ap(pattern=[[8, 4], [1, 3]], offset=5)
            self.assertEqual((w.strides, w.offset), ((8, 1), 5))


if __name__ == "__main__":
    unittest.main()
