"""Unit tests for the nl convenience wrappers (0.3+ experimental APIs), NKI.md 4 "nl.* element-wise and
reduction functions" and "nl.matmul"."""

import unittest

import numpy as np

from tests._util import bf16, rand, tile, values

import nki
import nki.language as nl
from nki.model import NkiModelError, hbm, invocation


class WrapperTest(unittest.TestCase):
    def test_load_store_add(self):
        """NKI.md 4 / the simulator example: nl.load, nl.add, nl.store."""
        @nki.jit
        def add_kernel(a_ptr, b_ptr):
            a = nl.load(a_ptr)
            b = nl.load(b_ptr)
            result = nl.add(a, b)
            out = nl.ndarray(a_ptr.shape, dtype=a_ptr.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=result)
            return out
        a, b = rand(128, 512, seed=1), rand(128, 512, seed=2)
        np.testing.assert_allclose(nki.simulate(add_kernel)(a, b), a + b, rtol=1e-6)

    def test_elementwise_and_broadcast(self):
        """NKI.md 4 "nl.* element-wise and reduction functions" and "Other VectorE building blocks" ([N, 1] operands
        broadcast along the free axis): nl element-wise functions take tiles or scalars and broadcast [P, 1] along the
        free axis."""
        x, c = rand(16, 8), rand(16, 1, seed=3)
        with invocation():
            t = tile(x)
            np.testing.assert_allclose(values(nl.multiply(t, tile(c))), x * c, rtol=1e-6)
            np.testing.assert_allclose(values(nl.subtract(t, 2.0)), x - 2, rtol=1e-6)
            np.testing.assert_allclose(values(nl.exp(t)), np.exp(x), rtol=1e-6)
            np.testing.assert_allclose(values(nl.rsqrt(nl.abs(t))), 1 / np.sqrt(np.abs(x)), rtol=1e-6)
            np.testing.assert_allclose(values(nl.maximum(t, 0.0)), np.maximum(x, 0))
            np.testing.assert_array_equal(values(nl.exp(t, dtype=nl.bfloat16)), bf16(np.exp(x)))
            with self.assertRaisesRegex(NkiModelError, "nl.exp: operand is in SHARED_HBM"):
                nl.exp(hbm(x))

    def test_reductions(self):
        """NKI.md 4 "nl.* element-wise and reduction functions" and "nisa.tensor_reduce" (free axes only, never axis
        0): nl.sum/max/mean reduce trailing free axes only."""
        x = rand(16, 4, 8)
        with invocation():
            t = tile(x)
            np.testing.assert_allclose(values(nl.sum(t, axis=[2])), x.sum(2), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(values(nl.max(t, axis=(1, 2), keepdims=True))[:, 0, 0], x.max((1, 2)))
            np.testing.assert_allclose(values(nl.mean(t, axis=2)), x.mean(2), rtol=1e-5, atol=1e-6)
            with self.assertRaisesRegex(NkiModelError, "partition axis"):
                nl.sum(t, axis=0)

    def test_matmul_and_transpose(self):
        """NKI.md 4 "nl.matmul": x.T @ y with transpose_x=True (x @ y otherwise) into PSUM; nl.transpose."""
        x, y = rand(64, 32, seed=1), rand(64, 128, seed=2)
        with invocation():
            p = nl.matmul(tile(x), tile(y), transpose_x=True)
            self.assertIs(p.buffer, nl.psum)
            np.testing.assert_allclose(values(p), x.T @ y, rtol=1e-5, atol=1e-4)
            q = nl.matmul(tile(x.T.copy()), tile(y))
            np.testing.assert_allclose(values(q), x.T @ y, rtol=1e-5, atol=1e-4)
            np.testing.assert_array_equal(values(nl.transpose(tile(x))), x.T)
            with self.assertRaisesRegex(NkiModelError, "moving free size 600 > 512"):
                nl.matmul(tile(x), tile(np.zeros((64, 600))), transpose_x=True)

    def test_softmax_where_broadcast_to(self):
        """NKI.md 4 "nl.* element-wise ..." (0.3+ wrappers incl. nl.softmax) and 5(a) (broadcast_to): nl.softmax along
        the free axis, nl.where, nl.broadcast_to."""
        x = rand(8, 16)
        with invocation():
            e = np.exp(x - x.max(1, keepdims=True))
            np.testing.assert_allclose(values(nl.softmax(tile(x), axis=1)), e / e.sum(1, keepdims=True), rtol=1e-5)
            np.testing.assert_array_equal(values(nl.where(tile(x > 0), tile(x), 0.0)), np.where(x > 0, x, 0))
            np.testing.assert_array_equal(values(nl.broadcast_to(tile(x[:, :1]), (8, 16))),
                                          np.broadcast_to(x[:, :1], (8, 16)))


if __name__ == "__main__":
    unittest.main()
