"""Unit tests: dtypes, allocation, views, budgets, tile sizes, loops, nki.jit (NKI.md sections 1-3)."""

import gc
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402
from nki.model import NkiModelError, invocation  # noqa: E402


class DTypeTest(unittest.TestCase):
    def test_bfloat16_round_to_nearest_even(self):
        """NKI.md 4 "dtypes": bfloat16 keeps 7 mantissa bits; stores round to nearest, ties to even."""
        one = 1.0
        ulp = 2.0 ** -7
        vals = np.array([one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + 2 ** -20, -(one + ulp / 2),
                         3.4e38, np.nan, 1.0 + ulp / 4], dtype=np.float32)
        got = nl.bfloat16.convert(vals)
        want = [one, one + 2 * ulp, one + ulp, -one, np.inf, np.nan, one]
        np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))

    def test_float16_int_and_bool_conversion(self):
        """NKI.md 4 "dtypes": float16 is IEEE half; model choice: float->int rounds half-even and saturates."""
        self.assertEqual(nl.float16.convert(np.float32(1.0 + 2 ** -11)), np.float16(1.0))
        np.testing.assert_array_equal(nl.int8.convert(np.array([2.5, 3.5, -300.0, np.nan])), [2, 4, -128, 0])
        np.testing.assert_array_equal(nl.bool_.convert(np.array([0.0, -2.0])), [0, 1])

    def test_tfloat32_and_fp8(self):
        """NKI.md 4 "dtypes": tfloat32 has 10 mantissa bits; float8_e4m3 3 bits (RNE)."""
        self.assertEqual(nl.tfloat32.convert(np.float32(1.0 + 2 ** -11))[()], 1.0)
        self.assertEqual(nl.tfloat32.convert(np.float32(1.0 + 3 * 2 ** -11))[()], 1.0 + 2 ** -9)
        np.testing.assert_array_equal(nl.float8_e4m3.convert(np.array([1.0625, 1.1875, 0.3])),
                                      np.array([1.0, 1.25, 0.3125], dtype=np.float32))

    def test_packed_dtypes_are_names_only(self):
        """NKI.md 4 "dtypes": MX/packed types exist; the model refuses to store values of them."""
        with invocation():
            t = nl.ndarray((4, 4), nl.float8_e4m3fn_x4)
            with self.assertRaisesRegex(NkiModelError, "not modelled"):
                nisa.memset(dst=t, value=0.0)

    def test_dtype_equality_with_numpy(self):
        """NKI.md 4 "dtypes": old code passes numpy dtypes; they name the same NKI types."""
        self.assertEqual(nl.float32, np.float32)
        self.assertEqual(nl.int32, np.dtype("int32"))
        self.assertNotEqual(nl.bfloat16, np.float32)


class AllocationTest(unittest.TestCase):
    def test_ndarray_buffers_and_sentinels(self):
        """NKI.md 2 "Allocation" and 6: ndarray is uninitialised (NaN / 4), zeros/full initialise."""
        with invocation():
            t = nl.ndarray((128, 4), nl.float32)
            self.assertIs(t.buffer, nl.sbuf)
            self.assertTrue(np.isnan(nki.model.values(t)).all())
            i = nl.ndarray((2, 3), nl.int32, buffer=nl.psum)
            self.assertTrue((nki.model.values(i) == 4).all())
            z = nl.full((4, 2), 7.0, nl.bfloat16)
            np.testing.assert_array_equal(nki.model.values(z), 7.0)
            self.assertEqual(nl.zeros((1, 1), nl.float32, buffer=nl.hbm).buffer, nl.private_hbm)

    def test_partition_limit(self):
        """NKI.md 2: axis 0 of an on-chip tensor is the partition axis, at most 128."""
        with invocation():
            with self.assertRaisesRegex(NkiModelError, "nl.ndarray: partition axis 129 > 128"):
                nl.ndarray((129, 4), nl.float32)
            nl.ndarray((4096, 4), nl.float32, buffer=nl.shared_hbm)  # HBM has no partition limit

    def test_string_buffer_rejected(self):
        """NKI.md 2 "Buffer names": from 0.3 buffers are objects; strings are an error."""
        with invocation():
            with self.assertRaisesRegex(NkiModelError, "buffer must be"):
                nl.ndarray((4, 4), nl.float32, buffer="sbuf")

    def test_sbuf_budget_per_target(self):
        """NKI.md 3: usable SBUF per partition is 212984 bytes on trn2 and 180224 on trn1."""
        with invocation(target="trn2") as inv:
            a = nl.ndarray((128, 50000), nl.float32)  # 200000 bytes per partition
            self.assertEqual(inv.sbuf_live, 200000)
            with self.assertRaisesRegex(NkiModelError, "SBUF capacity exceeded on trn2"):
                nl.ndarray((128, 4000), nl.float32)
            del a
            gc.collect()
            self.assertEqual(inv.sbuf_live, 0)  # freed once the tensor is unreachable
            nl.ndarray((128, 4000), nl.float32)
        with invocation(target="trn1"):
            with self.assertRaisesRegex(NkiModelError, "SBUF capacity exceeded on trn1"):
                nl.ndarray((128, 46000), nl.float32)

    def test_psum_banks(self):
        """NKI.md 3: PSUM is 8 banks of 2 KiB per partition; tensors start on a bank boundary."""
        with invocation() as inv:
            tiles = [nl.ndarray((128, 512), nl.float32, buffer=nl.psum) for _ in range(6)]
            big = nl.ndarray((128, 2, 256), nl.float32, buffer=nl.psum)  # 2 KiB: one bank
            small = nl.ndarray((128, 1), nl.float32, buffer=nl.psum)  # 4 bytes still take a bank
            self.assertEqual(sum(inv.psum_banks), 8)
            with self.assertRaisesRegex(NkiModelError, "PSUM capacity exceeded"):
                nl.ndarray((128, 1), nl.float32, buffer=nl.psum)
            del tiles, big, small
            gc.collect()
            wide = nl.ndarray((128, 2048), nl.float32, buffer=nl.psum)  # 8 KiB: four whole banks
            self.assertEqual(sum(inv.psum_banks), 4)
            del wide

    def test_manual_address(self):
        """NKI.md 2 "Allocation": address=(partition_offset, free_offset) places a tensor by hand; it must fit,
        it is outside the automatic budget, and instruction rules see its physical partitions and bytes."""
        with invocation() as inv:
            a = nl.ndarray((32, 512), nl.float32, buffer=nl.psum, address=(32, 2048))
            self.assertEqual(sum(inv.psum_banks), 0)
            self.assertEqual(a.partition_start(), 32)
            with self.assertRaisesRegex(NkiModelError, "exceed the 16384 bytes of PSUM"):
                nl.ndarray((1, 512), nl.float32, buffer=nl.psum, address=(0, 15 * 1024))
            with self.assertRaisesRegex(NkiModelError, "exceeds 128 partitions"):
                nl.ndarray((64, 4), nl.float32, address=(96, 0))
            b = nl.ndarray((4, 512), nl.float32, buffer=nl.psum, address=(0, 1024))
            with self.assertRaisesRegex(NkiModelError, "crossing a 2048-byte PSUM bank"):
                nisa.nc_matmul(dst=b, stationary=nl.zeros((8, 4), nl.float32), moving=nl.zeros((8, 512), nl.float32))
            with self.assertRaisesRegex(NkiModelError, "starting at partition 16"):
                nisa.memset(dst=nl.ndarray((8, 4), nl.float32, address=(16, 0)), value=0.0)

    def test_nki_object_dataclass(self):
        """Not in NKI.md; SDK nki/api/nki/language/__init__.py NKIObject ("Base class for NKI kernel dataclasses and
        configuration objects"): nl.NKIObject subclasses (also @dataclass ones with plain class attributes) take
        keyword arguments."""
        import dataclasses

        @dataclasses.dataclass
        class Params(nl.NKIObject):
            tile = 128
            name = None
        p = Params(tile=64)
        self.assertEqual((p.tile, p.name), (64, None))
        self.assertIsInstance(nl.float32, nki.dtype)

    def test_outside_kernel(self):
        """NKI.md 1: nl/nisa calls belong inside a kernel; the model refuses them elsewhere."""
        with self.assertRaisesRegex(NkiModelError, "outside a running kernel"):
            nl.ndarray((1, 1), nl.float32)


class ViewTest(unittest.TestCase):
    def test_slices_write_through(self):
        """NKI.md 2 "Indexing": integer slices are views; writing a slice writes the tensor."""
        with invocation():
            t = nl.zeros((128, 8), nl.float32)
            v = t[0:64, 2:6]
            self.assertEqual(v.shape, (64, 4))
            nisa.memset(dst=v, value=3.0)
            want = np.zeros((128, 8), np.float32)
            want[0:64, 2:6] = 3.0
            np.testing.assert_array_equal(nki.model.values(t), want)

    def test_integer_index_rules(self):
        """NKI.md 2 "Indexing" (plain integer slices) and the NkiTensor.__getitem__ docstring (SDK
        nki/api/nki/language/__init__.py): on chip an integer on axis 0 keeps a size-1 axis; HBM drops the axis."""
        with invocation():
            s = nl.zeros((128, 4, 8), nl.float32)
            self.assertEqual(s[3].shape, (1, 4, 8))
            self.assertEqual(s[:, 1].shape, (128, 8))
            self.assertEqual(s[..., 0].shape, (128, 4))
            h = nl.zeros((2, 3, 5), nl.float32, buffer=nl.shared_hbm)
            self.assertEqual(h[1].shape, (3, 5))
            self.assertEqual(h[1, 2].shape, (5,))
            self.assertEqual(h[nl.ds(1, 1), :, 0:5:2].shape, (1, 3, 3))

    def test_out_of_range_slice_raises(self):
        """NKI.md 2 "Indexing" and the NkiTensor.slice docstring (0 <= start < end <= shape): slices must lie inside
        the tensor (the model refuses what NumPy would clip silently)."""
        with invocation():
            t = nl.zeros((128, 8), nl.float32)
            with self.assertRaisesRegex(NkiModelError, "outside axis 1"):
                t[:, 4:12]
            with self.assertRaisesRegex(NkiModelError, "out of range"):
                t[:, 8]

    def test_reshape_permute_broadcast(self):
        """NKI.md 2 "Allocation" (axis 0 is the partition axis) and the NkiTensor docstrings (views share storage):
        NkiTensor view operations: reshape keeps the partition axis on chip; views write through."""
        with invocation():
            t = nl.zeros((128, 4, 6), nl.float32)
            r = t.reshape((128, 24))
            nisa.memset(dst=r[:, 6:12], value=1.0)
            np.testing.assert_array_equal(nki.model.values(t)[:, 1, :], 1.0)
            self.assertEqual(t.permute((0, 2, 1)).shape, (128, 6, 4))
            self.assertEqual(t.reshape_dim(2, (2, 3)).shape, (128, 4, 2, 3))
            self.assertEqual(t.flatten_dims(1, 2).shape, (128, 24))
            self.assertEqual(t[:, 0:1, :].broadcast(1, 5).shape, (128, 5, 6))
            with self.assertRaisesRegex(NkiModelError, "keep the partition axis"):
                t.reshape((64, 48))
            with self.assertRaisesRegex(NkiModelError, "partition axis first"):
                t.permute((1, 0, 2))
            with self.assertRaisesRegex(NkiModelError, "without a copy"):
                t.permute((0, 2, 1)).reshape((128, 24))
            h = nl.zeros((4, 6), nl.float32, buffer=nl.shared_hbm)
            self.assertEqual(h.reshape((24,)).shape, (24,))

    def test_access_pattern(self):
        """NKI.md 2: tensor.ap(pattern=[[stride, num], ...]) addresses the storage directly."""
        with invocation():
            h = nki.model.hbm(np.arange(12, dtype=np.float32).reshape(3, 4))
            s = nl.ndarray((4, 3), nl.float32)
            nisa.dma_copy(dst=s, src=h.ap(pattern=[[1, 4], [4, 3]]))  # the transpose
            np.testing.assert_array_equal(nki.model.values(s), np.arange(12).reshape(3, 4).T)


class TileSizeAndLoopsTest(unittest.TestCase):
    def test_tile_size_constants(self):
        """NKI.md 3 "nl.tile_size constants" (KLR values)."""
        ts = nl.tile_size
        self.assertEqual((ts.pmax, ts.gemm_stationary_fmax, ts.gemm_moving_fmax, ts.psum_fmax, ts.bn_stats_fmax),
                         (128, 128, 512, 512, 512))
        self.assertEqual(ts.psum_num_banks, 8)
        with invocation(target="trn1"):
            self.assertEqual(ts.total_available_sbuf_size, 180224)
        with invocation(target="trn2"):
            self.assertEqual(ts.total_available_sbuf_size, 212984)

    def test_ranges(self):
        """NKI.md 2 "Loop iterators": affine/sequential/static ranges iterate like range()."""
        self.assertEqual(list(nl.affine_range(3)), [0, 1, 2])
        self.assertEqual(list(nl.sequential_range(1, 7, 2)), [1, 3, 5])
        self.assertEqual(list(nl.static_range(2)), [0, 1])


class JitTest(unittest.TestCase):
    def test_outputs_must_be_shared_hbm(self):
        """NKI.md 1 "Kernel arguments and outputs": outputs come from nl.shared_hbm, not nl.hbm."""
        @nki.jit
        def bad(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)
            nisa.dma_copy(dst=out, src=a)
            return out
        with self.assertRaisesRegex(NkiModelError, "must be allocated in nl.shared_hbm"):
            bad(np.zeros((2, 2), np.float32))

    def test_list_argument_and_keyword_only_rejected(self):
        """NKI.md 1: arguments may not be lists; '*' in the signature is rejected."""
        @nki.jit
        def k(a):
            return None
        with self.assertRaisesRegex(NkiModelError, "may not be lists"):
            k([np.zeros(2, np.float32)])
        with self.assertRaisesRegex(NkiModelError, "keyword-only"):
            nki.jit(lambda a, *, b=1: None)

    def test_float64_argument_rejected(self):
        """NKI.md 4 "dtypes": float64 is not an NKI dtype."""
        k = nki.jit(lambda a: None)
        with self.assertRaisesRegex(NkiModelError, "not an NKI dtype"):
            k(np.zeros(2))

    def test_kernel_called_from_kernel_runs_inline(self):
        """NKI.md 1 "@nki.jit and calling kernels" (sub-kernels; old dialect mode='trace'): a jitted kernel called
        inside another works on the caller's tensors (no NumPy round trip)."""
        @nki.jit
        def inner(t):
            nisa.memset(dst=t, value=2.0)
            return t

        @nki.jit
        def outer(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = inner(nl.ndarray(a.shape, dtype=a.dtype))
            nisa.dma_copy(dst=out, src=t)
            return out
        np.testing.assert_array_equal(outer(np.zeros((2, 3), np.float32)), 2.0)

    def test_typing_annotations(self):
        """NKI.md 1 "Versions and namespaces" (nki.typing): nki.typing (0.3+): nt.tensor[shape] annotations on kernel
        parameters are accepted."""
        import nki.typing as nt

        @nki.jit
        def k(a: nt.tensor[2, 2]):
            return None
        self.assertIsNone(k(np.zeros((2, 2), np.float32)))

    def test_spmd_grid(self):
        """NKI.md 1 "Launch grids": kernel[g](...) runs one instance per program id; shared_hbm is shared."""
        @nki.jit
        def fill(a):
            out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            i = nl.program_id(0)
            t = nl.full((1, 8), float(i + 10 * nl.num_programs(0)), nl.float32)
            nisa.dma_copy(dst=out[i:i + 1, :], src=t)
            return out
        got = fill[4](np.zeros(1, np.float32))
        np.testing.assert_array_equal(got, np.arange(4)[:, None] + 40 + np.zeros((4, 8)))

    def test_bf16_inputs_and_simulate(self):
        """NKI.md 6: nki.simulate(kernel)(*numpy) runs the kernel; typed() passes bfloat16 inputs."""
        @nki.jit
        def ident(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray(a.shape, dtype=a.dtype)
            nisa.dma_copy(dst=t, src=a)
            nisa.dma_copy(dst=out, src=t)
            return out
        x = np.array([[1.0 + 2 ** -8, 3.0]], np.float32)
        got = nki.simulate(ident)(nki.model.typed(x, nl.bfloat16))
        np.testing.assert_array_equal(got, [[1.0, 3.0]])


if __name__ == "__main__":
    unittest.main()
