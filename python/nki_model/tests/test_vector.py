"""Unit tests for the Vector/GpSimd instructions against hand-computed NumPy results (NKI.md 4)."""

import unittest

import numpy as np

from tests._util import bf16, rand, tile, values

import nki.isa as nisa
import nki.language as nl
from nki.model import NkiModelError, hbm, invocation


class TensorTensorTest(unittest.TestCase):
    def test_ops(self):
        """NKI.md 4 "Other VectorE building blocks": tensor_tensor(dst, data1, data2, op) element-wise, fp32."""
        a, b = rand(16, 8, seed=1), rand(16, 8, seed=2)
        cases = {nl.add: a + b, nl.subtract: a - b, nl.multiply: a * b, nl.maximum: np.maximum(a, b),
                 nl.minimum: np.minimum(a, b), nl.divide: a / b, nl.greater: (a > b).astype(np.float32)}
        with invocation():
            for op, want in cases.items():
                d = nl.ndarray((16, 8), nl.float32)
                nisa.tensor_tensor(dst=d, data1=tile(a), data2=tile(b), op=op)
                np.testing.assert_allclose(values(d), want, rtol=1e-6, err_msg=op.__name__)

    def test_psum_operand_and_bf16_out(self):
        """NKI.md 4 "Other VectorE building blocks" (at most one tensor_tensor input in PSUM): tensor_tensor: one input
        may be in PSUM, the fp32 result is rounded into a bf16 dst."""
        a, b = rand(16, 8, seed=1), rand(16, 8, seed=2)
        with invocation():
            d = nl.ndarray((16, 8), nl.bfloat16)
            nisa.tensor_tensor(dst=d, data1=tile(a, buffer=nl.psum), data2=tile(b), op=nl.multiply)
            np.testing.assert_array_equal(values(d), bf16(a * b))
            with self.assertRaisesRegex(NkiModelError, "cannot both be in PSUM"):
                nisa.tensor_tensor(dst=d, data1=tile(a, buffer=nl.psum), data2=tile(b, buffer=nl.psum),
                                   op=nl.add)
            with self.assertRaisesRegex(NkiModelError, "data1 has 16 elements per partition but data2 has 8"):
                nisa.tensor_tensor(dst=nl.ndarray((8, 16), nl.float32), data1=tile(np.zeros((8, 16))),
                                   data2=tile(np.zeros((8, 8))), op=nl.add)

    def test_int32_exact_and_bitvec(self):
        """NKI.md 4 "Which engine runs what" (GpSimd: int32 tensor_tensor): tensor_tensor: all-int32 arithmetic is
        exact (GpSimd); bitvec ops need integer dtypes."""
        big = np.array([[2 ** 30 + 1, 7]], np.int32)
        with invocation():
            d = nl.ndarray((1, 2), nl.int32)
            nisa.tensor_tensor(dst=d, data1=tile(big, nl.int32), data2=tile(np.ones((1, 2)), nl.int32), op=nl.add)
            np.testing.assert_array_equal(values(d), [[2 ** 30 + 2, 8]])
            nisa.tensor_tensor(dst=d, data1=tile(big, nl.int32), data2=tile([[3, 3]], nl.int32),
                               op=nl.bitwise_and)
            np.testing.assert_array_equal(values(d), [[1, 3]])
            with self.assertRaisesRegex(NkiModelError, "bitvec op needs integer dtypes"):
                nisa.tensor_tensor(dst=nl.ndarray((1, 2), nl.float32), data1=tile([[1.0, 2.0]]),
                                   data2=tile([[1.0, 2.0]]), op=nl.bitwise_or)

    def test_power_runs_on_gpsimd(self):
        """NKI.md 4: nl.power runs on GpSimd, which cannot access PSUM."""
        with invocation():
            d = nl.ndarray((2, 2), nl.float32)
            nisa.tensor_tensor(dst=d, data1=tile([[2.0, 3.0], [4.0, 5.0]]), data2=tile(np.full((2, 2), 2.0)),
                               op=nl.power)
            np.testing.assert_array_equal(values(d), [[4, 9], [16, 25]])
            with self.assertRaisesRegex(NkiModelError, "GpSimd engine cannot access PSUM"):
                nisa.tensor_tensor(dst=d, data1=tile(np.ones((2, 2)), buffer=nl.psum), data2=tile(np.ones((2, 2))),
                                   op=nl.power)


class TensorScalarTest(unittest.TestCase):
    def test_two_ops_vector_operand_reverse(self):
        """NKI.md 4: tensor_scalar applies (data op0 s0) op1 s1 with [N, 1] or scalar operands."""
        x, m, r = rand(32, 16), rand(32, 1, seed=1), np.abs(rand(32, 1, seed=2)) + 0.5
        with invocation():
            d = nl.ndarray((32, 16), nl.float32)
            nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.subtract, operand0=tile(m), op1=nl.multiply,
                               operand1=tile(r))
            np.testing.assert_allclose(values(d), (x - m) * r, rtol=1e-6)
            nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.subtract, operand0=1.0, reverse0=True)
            np.testing.assert_allclose(values(d), 1.0 - x, rtol=1e-6)
            nisa.tensor_scalar(dst=d, data=tile(np.abs(x) + 1), op0=nl.rsqrt, operand0=None, op1=nl.add,
                               operand1=2.0)
            np.testing.assert_allclose(values(d), 1 / np.sqrt(np.abs(x) + 1) + 2, rtol=1e-6)

    def test_rules(self):
        """NKI.md 4 "Other VectorE building blocks" (tensor_scalar on VectorE/ScalarE/GpSimd) and the tensor_scalar
        docstring: tensor_scalar: operands are [N, 1] fp32 tiles or scalars; op1=None needs operand1=None; the Scalar
        engine on trn2 runs only multiply/add."""
        x = rand(32, 16)
        with invocation(target="trn2"):
            d = nl.ndarray((32, 16), nl.float32)
            with self.assertRaisesRegex(NkiModelError, r"operand0 must be a \[32, 1\] tile"):
                nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.add, operand0=tile(x))
            with self.assertRaisesRegex(NkiModelError, "operand0 must be float32"):
                nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.add, operand0=tile(np.ones((32, 1)), nl.bfloat16))
            with self.assertRaisesRegex(NkiModelError, "operand1 must be None"):
                nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.add, operand0=1.0, operand1=2.0)
            with self.assertRaisesRegex(NkiModelError, "Scalar engine on trn2"):
                nisa.tensor_scalar(dst=d, data=tile(x), op0=nl.maximum, operand0=1.0, engine=nisa.scalar_engine)


class TensorReduceTest(unittest.TestCase):
    def test_reduce_ops_axes_negate(self):
        """NKI.md 4 "nisa.tensor_reduce": reduces trailing free axes; negate gives -max in one step."""
        x = rand(16, 4, 8)
        with invocation():
            d = nl.ndarray((16, 1), nl.float32)
            nisa.tensor_reduce(dst=d, op=nl.maximum, data=tile(x), axis=(1, 2), negate=True)
            np.testing.assert_allclose(values(d)[:, 0], -x.max(axis=(1, 2)))
            d4 = nl.ndarray((16, 4, 1), nl.float32)
            nisa.tensor_reduce(dst=d4, op=nl.add, data=tile(x), axis=2, keepdims=True)
            np.testing.assert_allclose(values(d4)[..., 0], x.sum(axis=2), rtol=1e-5, atol=1e-6)
            d2 = nl.ndarray((16, 4), nl.float32)
            nisa.tensor_reduce(dst=d2, op=nl.multiply, data=tile(x), axis=[-1])
            np.testing.assert_allclose(values(d2), x.prod(axis=2), rtol=1e-5, atol=1e-7)

    def test_axis_rules(self):
        """NKI.md 4: axis 0 can never be reduced; axes must end at the last axis; dst size must agree."""
        x = rand(16, 4, 8)
        with invocation():
            with self.assertRaisesRegex(NkiModelError, "axis 0 .* cannot be reduced"):
                nisa.tensor_reduce(dst=nl.ndarray((1, 32), nl.float32), op=nl.add, data=tile(x), axis=0)
            with self.assertRaisesRegex(NkiModelError, "last contiguous free axes"):
                nisa.tensor_reduce(dst=nl.ndarray((16, 8), nl.float32), op=nl.add, data=tile(x), axis=1)
            with self.assertRaisesRegex(NkiModelError, "dst must have 16 partitions x 4 elements"):
                nisa.tensor_reduce(dst=nl.ndarray((16, 1), nl.float32), op=nl.add, data=tile(x), axis=2)
            with self.assertRaisesRegex(NkiModelError, "not a legal reduction"):
                nisa.tensor_reduce(dst=nl.ndarray((16, 4), nl.float32), op=nl.greater, data=tile(x), axis=2)

    def test_reciprocal(self):
        """NKI.md 5(b) (softmax: one reciprocal) and nki.api.shared "NKI Engine Selection" (Vector Engine reciprocal):
        nisa.reciprocal: 1/x on the Vector Engine."""
        x = np.abs(rand(4, 4)) + 0.1
        with invocation():
            d = nl.ndarray((4, 4), nl.float32)
            nisa.reciprocal(dst=d, data=tile(x))
            np.testing.assert_allclose(values(d), 1 / x, rtol=1e-6)


class StatsTest(unittest.TestCase):
    def test_bn_stats_and_aggr(self):
        """NKI.md 5(a): bn_stats over <= 512-element chunks (6 stats), bn_aggr -> mean and variance."""
        x = rand(8, 1000)
        with invocation():
            xs = tile(x)
            stats = nl.ndarray((8, 2, 6), nl.float32)
            nisa.bn_stats(dst=stats[:, 0, :], data=xs[:, 0:500])
            nisa.bn_stats(dst=stats[:, 1, :], data=xs[:, 500:1000])
            even = x[:, 0:500:2]
            np.testing.assert_allclose(values(stats)[:, 0, 0:3],
                                       np.stack([np.full(8, 250), even.mean(1), even.var(1) * 250], 1), rtol=1e-5)
            mv = nl.ndarray((8, 2), nl.float32)
            nisa.bn_aggr(dst=mv, data=stats)
            np.testing.assert_allclose(values(mv), np.stack([x.mean(1), x.var(1)], 1), rtol=1e-5, atol=1e-6)
            with self.assertRaisesRegex(NkiModelError, "513 elements per partition > 512"):
                nisa.bn_stats(dst=nl.ndarray((8, 6), nl.float32), data=tile(np.zeros((8, 513))))


class ScanTest(unittest.TestCase):
    def test_tensor_tensor_scan(self):
        """NKI.md 4 "Which engine runs what" (VectorE tensor_tensor_scan): r[i] = op1(op0(d0[i], r[i-1]), d1[i])."""
        a, b = rand(4, 6, seed=1), rand(4, 6, seed=2)
        init = rand(4, 1, seed=3)
        want = np.empty_like(a)
        r = init[:, 0].astype(np.float64)
        for i in range(6):
            r = a[:, i] * r + b[:, i]
            want[:, i] = r
        with invocation():
            d = nl.ndarray((4, 6), nl.float32)
            nisa.tensor_tensor_scan(dst=d, data0=tile(a), data1=tile(b), initial=tile(init), op0=nl.multiply,
                                    op1=nl.add)
            np.testing.assert_allclose(values(d), want, rtol=1e-5, atol=1e-6)
            nisa.tensor_tensor_scan(dst=d, data0=tile(a), data1=tile(b), initial=0.0, op0=nl.subtract,
                                    op1=nl.subtract, reverse0=True, reverse1=True)
            r, w2 = np.zeros(4), np.empty_like(a)
            for i in range(6):
                r = b[:, i] - (r - a[:, i])
                w2[:, i] = r
            np.testing.assert_allclose(values(d), w2, rtol=1e-5, atol=1e-6)

    def test_tensor_partition_reduce(self):
        """NKI.md 4 "nisa.tensor_reduce": reducing across partitions uses tensor_partition_reduce (GpSimd)."""
        x = rand(16, 8)
        with invocation():
            d = nl.ndarray((1, 8), nl.float32)
            nisa.tensor_partition_reduce(dst=d, op=nl.maximum, data=tile(x))
            np.testing.assert_array_equal(values(d)[0], x.max(0))
            with self.assertRaisesRegex(NkiModelError, "data is in PSUM"):
                nisa.tensor_partition_reduce(dst=d, op=nl.add, data=tile(x, buffer=nl.psum))


class FusedTest(unittest.TestCase):
    def test_scalar_tensor_tensor(self):
        """NKI.md 4 (VectorE family): scalar_tensor_tensor = (data op0 operand0) op1 operand1."""
        x, c, y = rand(8, 16, seed=1), rand(8, 1, seed=2), rand(8, 16, seed=3)
        with invocation():
            d = nl.ndarray((8, 16), nl.float32)
            nisa.scalar_tensor_tensor(dst=d, data=tile(x), op0=nl.multiply, operand0=tile(c), op1=nl.subtract,
                                      operand1=tile(y), reverse1=True)
            np.testing.assert_allclose(values(d), y - x * c, rtol=1e-6)
            with self.assertRaisesRegex(NkiModelError, "cannot both be in PSUM"):
                nisa.scalar_tensor_tensor(dst=d, data=tile(x, buffer=nl.psum), op0=nl.add, operand0=1.0,
                                          op1=nl.add, operand1=tile(y, buffer=nl.psum))

    def test_tensor_scalar_reduce(self):
        """Not in NKI.md (its VectorE family list omits it); SDK nki/api/nki/isa/__init__.py tensor_scalar_reduce
        docstring: dst = data op0 operand0, row reduction into the VectorE accumulators."""
        x = rand(8, 16)
        with invocation():
            d, r = nl.ndarray((8, 16), nl.float32), nl.ndarray((8, 1), nl.float32)
            nisa.tensor_scalar_reduce(dst=d, data=tile(x), op0=nl.multiply, operand0=2.0, reduce_op=nl.max,
                                      reduce_res=r, reduce_res_negate=True)
            np.testing.assert_allclose(values(d), 2 * x, rtol=1e-6)
            np.testing.assert_allclose(values(r)[:, 0], -(2 * x).max(1), rtol=1e-6)
            nisa.tensor_scalar_reduce(dst=d, data=tile(x), op0=nl.add, operand0=0.0, reduce_op=nl.add,
                                      reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=tile(np.ones((8, 1))))
            nisa.tensor_scalar_reduce(dst=d, data=tile(x), op0=nl.add, operand0=0.0, reduce_op=nl.add,
                                      reduce_res=r, reduce_cmd=nisa.reduce_cmd.reduce)
            np.testing.assert_allclose(values(r)[:, 0], 1 + 2 * x.sum(1), rtol=1e-5, atol=1e-5)
            with self.assertRaisesRegex(NkiModelError, "reduce_op must be"):
                nisa.tensor_scalar_reduce(dst=d, data=tile(x), op0=nl.add, operand0=0.0, reduce_op=nl.subtract)


class SelectionTest(unittest.TestCase):
    def test_nc_stream_shuffle(self):
        """NKI.md 4 "Which engine runs what" (VectorE nc_stream_shuffle) and its docstring: nc_stream_shuffle: per
        32-partition quadrant, dst[i] = src[mask[i]], 255 keeps dst[i]."""
        x = rand(64, 4)
        mask = [31 - i for i in range(32)]
        mask[5] = 255
        with invocation():
            d = tile(np.zeros((64, 4)))
            nisa.nc_stream_shuffle(dst=d, src=tile(x), shuffle_mask=mask)
            want = np.concatenate([x[0:32][::-1], x[32:64][::-1]])
            want[5] = want[37] = 0
            np.testing.assert_array_equal(values(d), want)
            big = tile(np.zeros((128, 4)))
            with self.assertRaisesRegex(NkiModelError, "must start at one of"):
                nisa.nc_stream_shuffle(dst=big[64:128], src=tile(np.zeros((128, 4)))[32:96], shuffle_mask=[0] * 32)

    def test_tensor_copy_predicated(self):
        """Not in NKI.md; SDK nki/api/nki/isa/__init__.py tensor_copy_predicated docstring: copy where the (unsigned)
        predicate is set; the rest of dst is unchanged."""
        x, pred = rand(4, 6), (rand(4, 6, seed=5) > 0)
        with invocation():
            d = tile(np.full((4, 6), 9.0))
            nisa.tensor_copy_predicated(dst=d, src=tile(x), predicate=tile(pred, nl.uint8))
            np.testing.assert_array_equal(values(d), np.where(pred, x, 9.0))
            nisa.tensor_copy_predicated(dst=d, src=0.0, predicate=tile(pred, nl.uint8), reverse_pred=True)
            np.testing.assert_array_equal(values(d), np.where(pred, x, 0.0))
            with self.assertRaisesRegex(NkiModelError, "predicate must be uint8"):
                nisa.tensor_copy_predicated(dst=d, src=tile(x), predicate=tile(pred, nl.float32))

    def test_max8_and_find_index8(self):
        """Not in NKI.md; SDK nki/api/nki/isa/__init__.py max8 / nc_find_index8 docstrings: max8: 8 largest per
        partition, descending; nc_find_index8: first index of each value (all ones if
        absent)."""
        x = rand(4, 100)
        with invocation():
            m = nl.ndarray((4, 8), nl.float32)
            nisa.max8(dst=m, src=tile(x))
            np.testing.assert_array_equal(values(m), -np.sort(-x, 1)[:, :8])
            idx = nl.ndarray((4, 8), nl.uint32)
            v = values(m).copy()
            v[0, 7] = 123.0
            nisa.nc_find_index8(dst=idx, data=tile(x), vals=tile(v))
            want = np.argsort(-x, 1)[:, :8].astype(np.int64)
            want[0, 7] = 2 ** 32 - 1
            np.testing.assert_array_equal(values(idx), want)
            with self.assertRaisesRegex(NkiModelError, "8..16384 allowed"):
                nisa.max8(dst=m, src=tile(x[:, :4]))

    def test_shared_constant(self):
        """NKI.md 2 "Buffer names" (shared_hbm) and the nl.shared_constant stub (SDK nki/api/nki/language/__init__.py):
        a shared_hbm tensor holding constant data."""
        with invocation():
            c = nl.shared_constant(np.arange(6, dtype=np.int32).reshape(2, 3))
            self.assertIs(c.buffer, nl.shared_hbm)
            np.testing.assert_array_equal(values(c), np.arange(6).reshape(2, 3))


class IotaSelectTest(unittest.TestCase):
    def test_iota(self):
        """NKI.md 4: iota writes offset + partition*channel_multiplier + sum(i_k*step_k) (int32), SBUF only."""
        with invocation():
            d = nl.ndarray((4, 2, 3), nl.int32)
            nisa.iota(dst=d, pattern=[[10, 2], [1, 3]], offset=5, channel_multiplier=100)
            want = 5 + 100 * np.arange(4)[:, None, None] + 10 * np.arange(2)[None, :, None] + np.arange(3)
            np.testing.assert_array_equal(values(d), want)
            f = nl.ndarray((2, 4), nl.float32)
            nisa.iota(dst=f, pattern=[[1, 4]], channel_multiplier=-1)
            np.testing.assert_array_equal(values(f), np.arange(4)[None, :] - np.arange(2)[:, None])
            with self.assertRaisesRegex(NkiModelError, "dst is in PSUM"):
                nisa.iota(dst=nl.ndarray((2, 4), nl.float32, buffer=nl.psum), pattern=[[1, 4]])
            with self.assertRaisesRegex(NkiModelError, "pattern covers 3 elements"):
                nisa.iota(dst=f, pattern=[[1, 3]])

    def test_affine_select_causal_mask(self):
        """NKI.md 5(c): affine_select masks to -inf where the affine predicate fails (causal: col <= row)."""
        x = rand(8, 8)
        with invocation():
            d = nl.ndarray((8, 8), nl.float32)
            # value = row - col; keep where value >= 0
            nisa.affine_select(dst=d, pattern=[[-1, 8]], channel_multiplier=1, on_true_tile=tile(x),
                               on_false_value=-np.inf, cmp_op=nl.greater_equal)
            want = np.where(np.tril(np.ones((8, 8))) > 0, x, -np.inf)
            np.testing.assert_array_equal(values(d), want)
            with self.assertRaisesRegex(NkiModelError, "on_true_tile is in PSUM"):
                nisa.affine_select(dst=d, pattern=[[-1, 8]], channel_multiplier=1,
                                   on_true_tile=tile(x, buffer=nl.psum), on_false_value=0.0)

    def test_set_item_and_hbm_views(self):
        """NKI.md 2 "Who can touch which memory" (HBM traffic is DMA) and the NkiTensor.__setitem__ docstring: copies
        tiles (DMA to HBM) or fills scalars."""
        with invocation():
            h = hbm(np.zeros((4, 4), np.float32))
            s = tile(np.ones((2, 4)))
            h[1:3, :] = s
            s[:, 0:2] = 5.0
            np.testing.assert_array_equal(values(h)[1:3], 1.0)
            np.testing.assert_array_equal(values(s)[:, 0:2], 5.0)


if __name__ == "__main__":
    unittest.main()
