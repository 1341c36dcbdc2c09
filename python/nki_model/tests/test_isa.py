"""Unit tests for nki.isa against hand-computed NumPy results, and one test per enforced rule (NKI.md 2-4)."""

import unittest

import numpy as np

from tests._util import bf16, rand, tile, values

import nki  # noqa: F401
import nki.isa as nisa
import nki.language as nl
from nki.model import NkiModelError, hbm, invocation


class DmaTest(unittest.TestCase):
    def test_dma_copy_hbm_sbuf_and_conversion(self):
        """NKI.md 2 "Who can touch which memory": dma_copy moves HBM <-> SBUF; dtypes convert via fp32."""
        x = rand(128, 16)
        with invocation():
            s = nl.ndarray((128, 16), nl.bfloat16)
            nisa.dma_copy(dst=s, src=hbm(x))
            np.testing.assert_array_equal(values(s), bf16(x))
            out = nl.ndarray((128, 16), nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=s)
            np.testing.assert_array_equal(values(out), bf16(x))

    def test_dma_copy_same_count_other_shape(self):
        """NKI.md 2 "Who can touch which memory" (dma_copy) and the dma_copy docstring (SDK
        nki/api/nki/isa/__init__.py): nisa.dma_copy: only the element counts of src and dst must match (row-major
        order)."""
        with invocation():
            s = nl.ndarray((4, 6), nl.float32)
            nisa.dma_copy(dst=s, src=hbm(np.arange(24, dtype=np.float32).reshape(2, 12)))
            np.testing.assert_array_equal(values(s), np.arange(24).reshape(4, 6))
            with self.assertRaisesRegex(NkiModelError, "nisa.dma_copy: src has 24 elements but dst has 20"):
                nisa.dma_copy(dst=nl.ndarray((4, 5), nl.float32), src=s)

    def test_dma_cannot_touch_psum(self):
        """NKI.md 2: as of 0.3 dma_copy cannot read PSUM (tensor_copy to SBUF first)."""
        with invocation():
            p = nl.zeros((4, 4), nl.float32, buffer=nl.psum)
            with self.assertRaisesRegex(NkiModelError, "nisa.dma_copy: src is in PSUM"):
                nisa.dma_copy(dst=hbm(np.zeros((4, 4), np.float32)), src=p)

    def test_indirect_gather_scatter(self):
        """NKI.md 2 "Indexing" (access patterns) / dma_copy docs: vector_offset gathers or scatters HBM rows,
        scalar_offset shifts by a value read from SBUF; out-of-bounds rows raise unless oob_mode=skip."""
        data = np.arange(40, dtype=np.float32).reshape(10, 4)
        with invocation():
            src = hbm(data)
            idx = tile([[7], [2], [9]], nl.int32)
            g = nl.ndarray((3, 4), nl.float32)
            nisa.dma_copy(dst=g, src=src.ap(pattern=[[4, 3], [1, 4]], vector_offset=idx, indirect_dim=0))
            np.testing.assert_array_equal(values(g), data[[7, 2, 9]])
            out = hbm(np.zeros((10, 4), np.float32))
            nisa.dma_copy(dst=out.ap(pattern=[[4, 3], [1, 4]], vector_offset=idx, indirect_dim=0), src=g)
            np.testing.assert_array_equal(values(out)[[7, 2, 9]], data[[7, 2, 9]])
            self.assertEqual(values(out)[0].sum(), 0)
            one = nl.ndarray((1, 1), nl.float32)
            nisa.dma_copy(dst=one, src=src.ap(pattern=[[4, 1], [1, 1]], offset=8,
                                              scalar_offset=tile([[3]], nl.int32), indirect_dim=1))
            self.assertEqual(values(one)[0, 0], data[2, 3])
            bad = tile([[1], [12], [3]], nl.int32)
            with self.assertRaisesRegex(NkiModelError, "out of bounds"):
                nisa.dma_copy(dst=g, src=src.ap(pattern=[[4, 3], [1, 4]], vector_offset=bad, indirect_dim=0))
            nisa.memset(dst=g, value=-1.0)
            nisa.dma_copy(dst=g, src=src.ap(pattern=[[4, 3], [1, 4]], vector_offset=bad, indirect_dim=0),
                          oob_mode=nisa.oob_mode.skip)
            np.testing.assert_array_equal(values(g), np.stack([data[1], np.full(4, -1.0), data[3]]))

    def test_dma_transpose(self):
        """NKI.md 4 "nc_transpose" alternative: dma_transpose (v3+) transposes HBM -> SBUF."""
        x = rand(8, 16)
        with invocation(target="trn2"):
            s = nl.ndarray((16, 8), nl.float32)
            nisa.dma_transpose(dst=s, src=hbm(x))
            np.testing.assert_array_equal(values(s), x.T)
            h4 = hbm(rand(5, 1, 1, 16))
            d4 = nl.ndarray((16, 1, 1, 5), nl.float32)
            nisa.dma_transpose(dst=d4, src=h4)  # 4-D: permutation (3, 1, 2, 0)
            np.testing.assert_array_equal(values(d4), np.transpose(values(h4), (3, 1, 2, 0)))
            with self.assertRaisesRegex(NkiModelError, "must equal dst dtype"):
                nisa.dma_transpose(dst=nl.ndarray((16, 8), nl.bfloat16), src=hbm(x))
        with invocation(target="trn1"):
            with self.assertRaisesRegex(NkiModelError, "NeuronCore-v3"):
                nisa.dma_transpose(dst=nl.ndarray((16, 8), nl.float32), src=hbm(x))


class CopyMemsetTest(unittest.TestCase):
    def test_tensor_copy_psum_to_sbuf_with_cast(self):
        """NKI.md 4: tensor_copy moves PSUM -> SBUF; a dtype change goes through fp32 (bf16 rounding)."""
        x = rand(64, 32)
        with invocation():
            p = tile(x, buffer=nl.psum)
            s = nl.ndarray((64, 2, 16), nl.bfloat16)  # same elements per partition, other shape
            nisa.tensor_copy(dst=s, src=p)
            np.testing.assert_array_equal(values(s).reshape(64, 32), bf16(x))

    def test_compute_engines_never_touch_hbm(self):
        """NKI.md 2: compute engines read and write SBUF/PSUM only."""
        with invocation():
            with self.assertRaisesRegex(NkiModelError, "nisa.tensor_copy: src is in SHARED_HBM"):
                nisa.tensor_copy(dst=nl.ndarray((2, 2), nl.float32), src=hbm(np.zeros((2, 2), np.float32)))

    def test_gpsimd_cannot_touch_psum(self):
        """NKI.md 2: GpSimd cannot access PSUM."""
        with invocation():
            p = nl.zeros((4, 4), nl.float32, buffer=nl.psum)
            with self.assertRaisesRegex(NkiModelError, "GpSimd engine cannot access PSUM"):
                nisa.tensor_copy(dst=nl.ndarray((4, 4), nl.float32), src=p, engine=nisa.gpsimd_engine)
            with self.assertRaisesRegex(NkiModelError, "GpSimd engine cannot access PSUM"):
                nisa.memset(dst=p, value=0.0, engine=nisa.gpsimd_engine)

    def test_partition_start_rule(self):
        """NKI.md 2 "Hardware addressing rules": >64 partitions start at 0, 33-64 at 0/64, <=32 at 32k."""
        with invocation():
            t = nl.zeros((128, 4), nl.float32)
            nisa.memset(dst=t[64:128], value=1.0)
            nisa.memset(dst=t[96:100], value=1.0)
            with self.assertRaisesRegex(NkiModelError, "starting at partition 32"):
                nisa.memset(dst=t[32:96], value=1.0)
            with self.assertRaisesRegex(NkiModelError, "starting at partition 5"):
                nisa.memset(dst=t[5:6], value=1.0)

    def test_memset(self):
        """NKI.md 4 "Which engine runs what" is silent on memset; SDK nki/api/nki/isa/__init__.py memset docstring:
        nisa.memset fills with a constant, rounded to dst's dtype."""
        with invocation():
            t = nl.ndarray((3, 5), nl.bfloat16)
            nisa.memset(dst=t, value=1.0 + 2 ** -9)
            np.testing.assert_array_equal(values(t), 1.0)


class MatmulTest(unittest.TestCase):
    def test_stationary_transposed_times_moving(self):
        """NKI.md 4 "nisa.nc_matmul": dst[M, N] = stationary[K, M].T @ moving[K, N], fp32 in PSUM."""
        a, b = rand(128, 64, seed=1), rand(128, 512, seed=2)
        with invocation():
            d = nl.ndarray((64, 512), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=d, stationary=tile(a), moving=tile(b))
            np.testing.assert_allclose(values(d), a.T @ b, rtol=1e-5, atol=1e-4)

    def test_bf16_inputs_accumulate_in_fp32(self):
        """NKI.md 4: bf16 inputs, accumulation always fp32 (products of bf16 values are exact)."""
        a, b = rand(128, 32, seed=3), rand(128, 16, seed=4)
        with invocation():
            d = nl.ndarray((32, 16), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=d, stationary=tile(a, nl.bfloat16), moving=tile(b, nl.bfloat16))
            want = bf16(a).astype(np.float64).T @ bf16(b).astype(np.float64)
            np.testing.assert_allclose(values(d), want, rtol=1e-5, atol=1e-4)

    def test_accumulate_modes(self):
        """NKI.md 4 "Accumulation (0.3+)": False overwrites, True adds, None: first write overwrites, then adds;
        model choice: a non-matmul read (draining PSUM) ends the group, so the next None overwrites."""
        a, b = rand(16, 8, seed=5), rand(16, 8, seed=6)
        ab = a.T @ b
        with invocation():
            d = nl.ndarray((8, 8), nl.float32, buffer=nl.psum)
            sa, sb = tile(a), tile(b)
            for _ in range(3):
                nisa.nc_matmul(dst=d, stationary=sa, moving=sb)
            np.testing.assert_allclose(values(d), 3 * ab, rtol=1e-5, atol=1e-5)
            nisa.nc_matmul(dst=d, stationary=sa, moving=sb, accumulate=False)
            np.testing.assert_allclose(values(d), ab, rtol=1e-5, atol=1e-5)
            nisa.nc_matmul(dst=d, stationary=sa, moving=sb, accumulate=True)
            np.testing.assert_allclose(values(d), 2 * ab, rtol=1e-5, atol=1e-5)
            out = nl.ndarray((8, 8), nl.float32)
            nisa.tensor_copy(dst=out, src=d)
            nisa.nc_matmul(dst=d, stationary=sa, moving=sb)  # new group after the drain
            np.testing.assert_allclose(values(d), ab, rtol=1e-5, atol=1e-5)
            fresh = nl.zeros((8, 8), nl.float32, buffer=nl.psum)
            with self.assertRaisesRegex(NkiModelError, "accumulate=True onto PSUM locations that no matmul"):
                nisa.nc_matmul(dst=fresh, stationary=sa, moving=sb, accumulate=True)

    def test_operand_limits(self):
        """NKI.md 3 "Matmul tile limits": K <= 128, stationary free <= 128, moving free <= 512 (v2/v3)."""
        with invocation():
            with self.assertRaisesRegex(NkiModelError, "stationary free size 129 > 128"):
                nisa.nc_matmul(dst=nl.ndarray((128, 4), nl.float32, buffer=nl.psum),
                               stationary=nl.zeros((8, 129), nl.float32), moving=nl.zeros((8, 4), nl.float32))
            with self.assertRaisesRegex(NkiModelError, "moving free size 1024 > 512"):
                nisa.nc_matmul(dst=nl.ndarray((4, 1024), nl.float32, buffer=nl.psum),
                               stationary=nl.zeros((8, 4), nl.float32), moving=nl.zeros((8, 1024), nl.float32))
            with self.assertRaisesRegex(NkiModelError, "contraction .* differ"):
                nisa.nc_matmul(dst=nl.ndarray((4, 4), nl.float32, buffer=nl.psum),
                               stationary=nl.zeros((8, 4), nl.float32), moving=nl.zeros((16, 4), nl.float32))
            with self.assertRaisesRegex(NkiModelError, "dst must have 4 partitions x 8 elements"):
                nisa.nc_matmul(dst=nl.ndarray((4, 4), nl.float32, buffer=nl.psum),
                               stationary=nl.zeros((8, 4), nl.float32), moving=nl.zeros((8, 8), nl.float32))

    def test_buffers_and_dtypes(self):
        """NKI.md 4: inputs in SBUF, dst in PSUM and fp32 (v2/v3); fp32 pairs only with fp32/tf32."""
        with invocation():
            ps = nl.zeros((8, 4), nl.float32, buffer=nl.psum)
            with self.assertRaisesRegex(NkiModelError, "stationary is in PSUM"):
                nisa.nc_matmul(dst=nl.ndarray((4, 4), nl.float32, buffer=nl.psum), stationary=ps,
                               moving=nl.zeros((8, 4), nl.float32))
            with self.assertRaisesRegex(NkiModelError, "dst is in SBUF"):
                nisa.nc_matmul(dst=nl.ndarray((4, 4), nl.float32), stationary=nl.zeros((8, 4), nl.float32),
                               moving=nl.zeros((8, 4), nl.float32))
            with self.assertRaisesRegex(NkiModelError, "dst must be float32 on trn2"):
                nisa.nc_matmul(dst=nl.ndarray((4, 4), nl.bfloat16, buffer=nl.psum),
                               stationary=nl.zeros((8, 4), nl.bfloat16), moving=nl.zeros((8, 4), nl.bfloat16))
            with self.assertRaisesRegex(NkiModelError, "float32/tfloat32 the other"):
                nisa.nc_matmul(dst=nl.ndarray((4, 4), nl.float32, buffer=nl.psum),
                               stationary=nl.zeros((8, 4), nl.float32), moving=nl.zeros((8, 4), nl.bfloat16))

    def test_dst_within_one_bank(self):
        """NKI.md 3: a matmul output fits one 2 KiB PSUM bank (512 fp32) per partition."""
        with invocation():
            d = nl.ndarray((4, 1024), nl.float32, buffer=nl.psum)
            s, m = nl.zeros((8, 4), nl.float32), nl.zeros((8, 512), nl.float32)
            nisa.nc_matmul(dst=d[:, 512:1024], stationary=s, moving=m)
            with self.assertRaisesRegex(NkiModelError, "crossing a 2048-byte PSUM bank"):
                nisa.nc_matmul(dst=d[:, 256:768], stationary=s, moving=m)

    def test_is_transpose_mode(self):
        """NKI.md 4 "nisa.nc_matmul" (is_transpose: bit-exact TensorE transpose on v3+) and the nc_matmul docs:
        is_transpose=True with an identity moving tile is the TensorE transpose: dst keeps
        the data dtype, NaN/Inf survive (bit-exact on v3+), and it overwrites."""
        x = rand(16, 8)
        x[3, 2] = np.nan
        with invocation():
            eye = nl.shared_identity_matrix(16, dtype=nl.bfloat16)
            d = nl.ndarray((8, 16), nl.bfloat16, buffer=nl.psum)
            for _ in range(2):
                nisa.nc_matmul(dst=d, stationary=tile(x, nl.bfloat16), moving=eye, is_transpose=True)
            np.testing.assert_array_equal(values(d), bf16(x).T)
            with self.assertRaisesRegex(NkiModelError, "is_transpose=True: dst dtype float32 must equal"):
                nisa.nc_matmul(dst=nl.ndarray((8, 16), nl.float32, buffer=nl.psum), stationary=tile(x, nl.bfloat16),
                               moving=eye, is_transpose=True)

    def test_nc_transpose(self):
        """NKI.md 4 "nisa.nc_transpose": TensorE SBUF -> PSUM up to 128x128, same dtype; VectorE up to 32x32."""
        x = rand(96, 40)
        with invocation():
            d = nl.ndarray((40, 96), nl.bfloat16, buffer=nl.psum)
            nisa.nc_transpose(dst=d, data=tile(x, nl.bfloat16))
            np.testing.assert_array_equal(values(d), bf16(x).T)
            with self.assertRaisesRegex(NkiModelError, "dst dtype float32 must equal data dtype bfloat16"):
                nisa.nc_transpose(dst=nl.ndarray((40, 96), nl.float32, buffer=nl.psum), data=tile(x, nl.bfloat16))
            with self.assertRaisesRegex(NkiModelError, r"exceeds \[32, 32\] on the vector"):
                nisa.nc_transpose(dst=nl.ndarray((40, 96), nl.float32), data=tile(x))
            v = nl.ndarray((8, 16), nl.float32)
            nisa.nc_transpose(dst=v, data=tile(x[:16, :8]))
            np.testing.assert_array_equal(values(v), x[:16, :8].T)


class ActivationTest(unittest.TestCase):
    def test_scale_bias_op(self):
        """NKI.md 4 "nisa.activation": dst = op(data * scale + bias), scale/bias scalar or [N, 1]."""
        x, b, s = rand(64, 32), rand(64, 1, seed=1), rand(64, 1, seed=2)
        with invocation():
            d = nl.ndarray((64, 32), nl.float32)
            nisa.activation(dst=d, op=nl.exp, data=tile(x), bias=tile(b), scale=2.0)
            np.testing.assert_allclose(values(d), np.exp(2 * x + b), rtol=1e-5)
            nisa.activation(dst=d, op=nl.tanh, data=tile(x), scale=tile(s), bias=0.5)
            np.testing.assert_allclose(values(d), np.tanh(x * s + 0.5), rtol=1e-5, atol=1e-6)

    def test_functions(self):
        """NKI.md 4 / activation function table: gelu (erf), silu, sigmoid, rsqrt, relu, copy, square."""
        import math
        x = rand(8, 16)
        erf = np.vectorize(math.erf)
        want = {nl.gelu: 0.5 * x * (1 + erf(x / math.sqrt(2))), nl.silu: x / (1 + np.exp(-x)),
                nl.sigmoid: 1 / (1 + np.exp(-x)), nl.relu: np.maximum(x, 0), nl.copy: x, nl.square: x * x,
                nl.rsqrt: 1 / np.sqrt(np.abs(x))}
        with invocation():
            for op, w in want.items():
                d = nl.ndarray((8, 16), nl.float32)
                src = tile(np.abs(x)) if op is nl.rsqrt else tile(x)
                nisa.activation(dst=d, op=op, data=src)
                np.testing.assert_allclose(values(d), w, rtol=1e-5, atol=1e-6, err_msg=op.__name__)
            with self.assertRaisesRegex(NkiModelError, "not a Scalar Engine activation"):
                nisa.activation(dst=d, op=nl.maximum, data=tile(x))

    def test_fused_free_axis_reduce(self):
        """NKI.md 4: reduce_op=nl.add sums op's output along the free axis into per-lane registers."""
        x = rand(32, 64)
        with invocation():
            d, r = nl.ndarray((32, 64), nl.bfloat16), nl.ndarray((32, 1), nl.float32)
            nisa.activation(dst=d, op=nl.exp, data=tile(x), bias=-1.0, reduce_op=nl.add, reduce_res=r,
                            reduce_cmd=nisa.reduce_cmd.reset_reduce)
            e = np.exp(x - 1)
            np.testing.assert_array_equal(values(d), bf16(e))
            np.testing.assert_allclose(values(r)[:, 0], e.sum(axis=1), rtol=1e-5)
            # reduce adds onto the registers; idle leaves them alone
            nisa.activation(dst=d, op=nl.exp, data=tile(x), bias=-1.0, reduce_op=nl.add,
                            reduce_cmd=nisa.reduce_cmd.reduce)
            nisa.activation(dst=d, op=nl.copy, data=tile(x), reduce_res=r)
            np.testing.assert_allclose(values(r)[:, 0], 2 * e.sum(axis=1), rtol=1e-5)
            nisa.activation_reduce(dst=d, op=nl.square, data=tile(x), reduce_op=nl.add, reduce_res=r)
            np.testing.assert_allclose(values(r)[:, 0], (x * x).sum(axis=1), rtol=1e-5)
            with self.assertRaisesRegex(NkiModelError, "reduce_op must be nl.add"):
                nisa.activation(dst=d, op=nl.exp, data=tile(x), reduce_op=nl.maximum, reduce_res=r)

    def test_scalar_bias_needs_v3(self):
        """NKI.md 4: on v2 (trn1) bias must be an [N, 1] vector; a scalar is allowed from v3."""
        with invocation(target="trn1"):
            with self.assertRaisesRegex(NkiModelError, "bias must be a .* tile on this target"):
                nisa.activation(dst=nl.ndarray((4, 4), nl.float32), op=nl.exp, data=nl.zeros((4, 4), nl.float32),
                                bias=1.0)

    def test_scale_tile_must_be_fp32(self):
        """NKI.md 4 "nisa.activation": scale is an fp32 scalar or an [N, 1] vector; the scale parameter must be
        float32."""
        with invocation():
            with self.assertRaisesRegex(NkiModelError, "scale must be float32"):
                nisa.activation(dst=nl.ndarray((4, 4), nl.float32), op=nl.exp, data=nl.zeros((4, 4), nl.float32),
                                scale=nl.zeros((4, 1), nl.bfloat16))


if __name__ == "__main__":
    unittest.main()
