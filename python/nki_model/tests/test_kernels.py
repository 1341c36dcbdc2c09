"""Complete kernels in the new dialect, written the way the public samples are (NKI.md 5), run on the model and
compared with NumPy: tiled add, RMSNorm, LayerNorm (bn_stats), tiled matmul, flash-attention forward."""

import math
import unittest

import numpy as np

from tests._util import bf16, rand

import nki
import nki.isa as nisa
import nki.language as nl
from nki.model import NkiModelError, typed


@nki.jit
def tiled_add(a_input, b_input):
    """Element-wise add in [128, 512] tiles; the last row block may be partial (min())."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    M, N = a_input.shape
    TILE_M, TILE_N = nl.tile_size.pmax, 512
    for m in nl.affine_range((M + TILE_M - 1) // TILE_M):
        rows = min(TILE_M, M - m * TILE_M)
        for n in nl.affine_range(N // TILE_N):
            a_tile = nl.ndarray((TILE_M, TILE_N), dtype=a_input.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((TILE_M, TILE_N), dtype=b_input.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a_tile[0:rows], src=a_input[m * TILE_M:m * TILE_M + rows, n * TILE_N:(n + 1) * TILE_N])
            nisa.dma_copy(dst=b_tile[0:rows], src=b_input[m * TILE_M:m * TILE_M + rows, n * TILE_N:(n + 1) * TILE_N])
            c_tile = nl.ndarray((TILE_M, TILE_N), dtype=a_input.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=c_tile[0:rows], data1=a_tile[0:rows], data2=b_tile[0:rows], op=nl.add)
            nisa.dma_copy(dst=c_output[m * TILE_M:m * TILE_M + rows, n * TILE_N:(n + 1) * TILE_N], src=c_tile[0:rows])
    return c_output


@nki.jit
def rmsnorm(a_tensor, g_tensor):
    """out = a / sqrt(mean(a^2) + eps) * g, rows on partitions, statistics in fp32 (NKI.md 5(a))."""
    out = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    rows, hidden = a_tensor.shape
    P = nl.tile_size.pmax
    g_tile = nl.ndarray((P, hidden), dtype=g_tensor.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_tile, src=g_tensor.reshape((1, hidden)).broadcast(0, P))  # gamma on every partition
    for i in nl.affine_range((rows + P - 1) // P):
        n = min(P, rows - i * P)
        a_tile = nl.ndarray((P, hidden), dtype=a_tensor.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile[0:n], src=a_tensor[i * P:i * P + n, :])
        sq = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        ssum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq[0:n], op=nl.square, data=a_tile[0:n], reduce_op=nl.add, reduce_res=ssum[0:n],
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[0:n], data=ssum[0:n], op0=nl.multiply, operand0=1.0 / hidden, op1=nl.add,
                           operand1=1e-6)
        nisa.activation(dst=rstd[0:n], op=nl.rsqrt, data=rstd[0:n])
        y = nl.ndarray((P, hidden), dtype=a_tensor.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:n], data=a_tile[0:n], op0=nl.multiply, operand0=rstd[0:n])
        nisa.tensor_tensor(dst=y[0:n], data1=y[0:n], data2=g_tile[0:n], op=nl.multiply)
        nisa.dma_copy(dst=out[i * P:i * P + n, :], src=y[0:n])
    return out


@nki.jit
def layernorm(a_tensor, g_tensor, b_tensor):
    """LayerNorm with bn_stats over 512-wide chunks, bn_aggr, and one tensor_scalar (NKI.md 5(a) v2)."""
    out = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    rows, hidden = a_tensor.shape
    P, F = nl.tile_size.pmax, nl.tile_size.bn_stats_fmax
    chunks = (hidden + F - 1) // F
    g_tile = nl.ndarray((P, hidden), dtype=g_tensor.dtype, buffer=nl.sbuf)
    b_tile = nl.ndarray((P, hidden), dtype=b_tensor.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_tile, src=g_tensor.ap(pattern=[[0, P], [1, hidden]]))
    nisa.dma_copy(dst=b_tile, src=b_tensor.ap(pattern=[[0, P], [1, hidden]]))
    for i in nl.affine_range((rows + P - 1) // P):
        n = min(P, rows - i * P)
        x = nl.ndarray((P, hidden), dtype=a_tensor.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x[0:n], src=a_tensor[i * P:i * P + n, :])
        stats = nl.ndarray((P, chunks, 6), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            w = min(F, hidden - c * F)
            nisa.bn_stats(dst=stats[0:n, c, :], data=x[0:n, c * F:c * F + w])
        mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv[0:n], data=stats[0:n])
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[0:n], data=mv[0:n, 1:2], op0=nl.add, operand0=1e-5, op1=nl.rsqrt,
                           operand1=None)
        y = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:n], data=x[0:n], op0=nl.subtract, operand0=mv[0:n, 0:1], op1=nl.multiply,
                           operand1=rstd[0:n])
        nisa.tensor_tensor(dst=y[0:n], data1=y[0:n], data2=g_tile[0:n], op=nl.multiply)
        o = nl.ndarray((P, hidden), dtype=a_tensor.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=o[0:n], data1=y[0:n], data2=b_tile[0:n], op=nl.add)
        nisa.dma_copy(dst=out[i * P:i * P + n, :], src=o[0:n])
    return out


@nki.jit
def matmul(lhsT, rhs):
    """result[M, N] = lhsT[K, M].T @ rhs[K, N]: 128x512 output tiles, K accumulated in PSUM over 128-row tiles
    (the last K tile may be partial), epilogue copies PSUM -> SBUF -> HBM."""
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range((M + TM - 1) // TM):
        mm = min(TM, M - m * TM)
        for n in nl.affine_range((N + TN - 1) // TN):
            nn = min(TN, N - n * TN)
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range((K + TK - 1) // TK):
                kk = min(TK, K - k * TK)
                lhs = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_t = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhs[0:kk, 0:mm], src=lhsT[k * TK:k * TK + kk, m * TM:m * TM + mm])
                nisa.dma_copy(dst=rhs_t[0:kk, 0:nn], src=rhs[k * TK:k * TK + kk, n * TN:n * TN + nn])
                nisa.nc_matmul(dst=acc[0:mm, 0:nn], stationary=lhs[0:kk, 0:mm], moving=rhs_t[0:kk, 0:nn],
                               accumulate=(k > 0))
            res = nl.ndarray((TM, TN), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res[0:mm, 0:nn], src=acc[0:mm, 0:nn])
            nisa.dma_copy(dst=result[m * TM:m * TM + mm, n * TN:n * TN + nn], src=res[0:mm, 0:nn])
    return result


@nki.jit
def flash_fwd(q, k, v, causal):
    """Single-head attention o = softmax(q k^T / sqrt(d) [+ causal mask]) v in the flash structure (NKI.md 5(c)):
    128-row query tiles, 512-wide key tiles (one PSUM bank), running max m and sum l in fp32 SBUF, p
    transposed in 128x128 blocks on the Tensor Engine for p @ v. seq_q, seq_k multiples of 128."""
    seq_q, d = q.shape
    seq_k = k.shape[0]
    P, KT = 128, 512
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((seq_q, d), dtype=q.dtype, buffer=nl.shared_hbm)
    for qi in nl.affine_range(seq_q // P):
        qT = nl.ndarray((d, P), dtype=q.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=qT, src=q[qi * P:(qi + 1) * P, :].permute((1, 0)))
        m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        l_sum = nl.zeros((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        o_acc = nl.zeros((P, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=m, value=-3.0e38)
        for kj in nl.sequential_range((seq_k + KT - 1) // KT):
            kw = min(KT, seq_k - kj * KT)
            if causal and kj * KT > qi * P + P - 1:
                continue  # key tile entirely above the diagonal
            kT = nl.ndarray((d, KT), dtype=k.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=kT[:, 0:kw], src=k[kj * KT:kj * KT + kw, :].permute((1, 0)))
            s_psum = nl.ndarray((P, KT), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_psum[:, 0:kw], stationary=qT, moving=kT[:, 0:kw])
            s = nl.ndarray((P, KT), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=s[:, 0:kw], op=nl.copy, data=s_psum[:, 0:kw], scale=scale)
            if causal and kj * KT + kw - 1 > qi * P:  # partially masked: keep key <= query
                nisa.affine_select(dst=s[:, 0:kw], pattern=[[-1, kw]], channel_multiplier=1,
                                   on_true_tile=s[:, 0:kw], on_false_value=-3.0e38, cmp_op=nl.greater_equal,
                                   offset=qi * P - kj * KT)
            bmax = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=bmax, op=nl.maximum, data=s[:, 0:kw], axis=1)
            m_new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=m_new, data1=m, data2=bmax, op=nl.maximum)
            neg_m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
            alpha = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=alpha, op=nl.exp, data=m, bias=neg_m)  # exp(m_old - m_new)
            p = nl.ndarray((P, KT), dtype=q.dtype, buffer=nl.sbuf)
            rowsum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=p[:, 0:kw], op=nl.exp, data=s[:, 0:kw], bias=neg_m, reduce_op=nl.add,
                            reduce_res=rowsum, reduce_cmd=nisa.reduce_cmd.reset_reduce)
            nisa.tensor_scalar(dst=l_sum, data=l_sum, op0=nl.multiply, operand0=alpha, op1=nl.add,
                               operand1=rowsum)
            pv = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
            for b in nl.affine_range(kw // P):
                pT_psum = nl.ndarray((P, P), dtype=q.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=pT_psum, data=p[:, b * P:(b + 1) * P])
                pT = nl.ndarray((P, P), dtype=q.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=pT, src=pT_psum)
                vb = nl.ndarray((P, d), dtype=v.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=vb, src=v[kj * KT + b * P:kj * KT + (b + 1) * P, :])
                nisa.nc_matmul(dst=pv, stationary=pT, moving=vb, accumulate=(b > 0))
            nisa.tensor_scalar(dst=o_acc, data=o_acc, op0=nl.multiply, operand0=alpha)
            nisa.tensor_tensor(dst=o_acc, data1=o_acc, data2=pv, op=nl.add)
            nisa.tensor_copy(dst=m, src=m_new)
        inv_l = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv_l, data=l_sum)
        o = nl.ndarray((P, d), dtype=q.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=o_acc, op0=nl.multiply, operand0=inv_l)
        nisa.dma_copy(dst=out[qi * P:(qi + 1) * P, :], src=o)
    return out


def attention_ref(q, k, v, causal):
    s = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(q.shape[1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)) @ v.astype(np.float64)


class KernelTest(unittest.TestCase):
    def test_tiled_add_ragged_rows(self):
        """NKI.md 5 / SDK tensor_addition sample: [128, 512] tiles, 300 rows (last block 44 rows)."""
        a, b = rand(300, 1024, seed=1), rand(300, 1024, seed=2)
        np.testing.assert_array_equal(tiled_add(a, b), a + b)

    def test_rmsnorm_fp32_and_bf16(self):
        """NKI.md 5(a) RMSNorm, rows not a multiple of 128, fp32 and bf16 inputs."""
        a, g = rand(200, 384, seed=3), rand(384, seed=4)
        want = a / np.sqrt((a.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6) * g
        np.testing.assert_allclose(rmsnorm(a, g), want, rtol=1e-5, atol=1e-5)
        got = rmsnorm(typed(a, nl.bfloat16), typed(g, nl.bfloat16))
        ab, gb = bf16(a).astype(np.float64), bf16(g).astype(np.float64)
        want_b = ab / np.sqrt((ab ** 2).mean(1, keepdims=True) + 1e-6) * gb
        np.testing.assert_allclose(got, want_b, rtol=2e-2, atol=2e-2)
        np.testing.assert_array_equal(got, bf16(got))  # every stored value is a bf16 value

    def test_layernorm_bn_stats(self):
        """NKI.md 5(a) LayerNorm v2 (bn_stats/bn_aggr), hidden 1100 > 2 x bn_stats_fmax."""
        a, g, b = rand(130, 1100, seed=5), rand(1100, seed=6), rand(1100, seed=7)
        a = a * 3 + 1
        mu, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
        np.testing.assert_allclose(layernorm(a, g, b), (a - mu) / np.sqrt(var + 1e-5) * g + b, rtol=1e-4, atol=1e-4)

    def test_tiled_matmul_k_accumulation(self):
        """NKI.md 3 "Matmul tile limits": M, N, K tiled; K (300) accumulated in PSUM, ragged M (200), N (700)."""
        lhsT, rhs = rand(300, 200, seed=8), rand(300, 700, seed=9)
        np.testing.assert_allclose(matmul(lhsT, rhs), lhsT.T.astype(np.float64) @ rhs, rtol=1e-4, atol=1e-3)
        got = matmul(typed(lhsT, nl.bfloat16), typed(rhs, nl.bfloat16))
        want = bf16(lhsT).T.astype(np.float64) @ bf16(rhs)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=5e-2)
        self.assertLessEqual(matmul.last_stats["psum_peak_banks"], 2)

    def test_flash_attention_forward(self):
        """NKI.md 5(c) flash_fwd structure: q 256 rows, k/v 640 rows (a 128-wide last key tile), d 64/128,
        with and without the causal mask; fp32 and bf16."""
        for d in (64, 128):
            q, k, v = rand(256, d, seed=10), rand(640, d, seed=11), rand(640, d, seed=12)
            np.testing.assert_allclose(flash_fwd(q, k, v, False), attention_ref(q, k, v, False), rtol=1e-4,
                                       atol=1e-5)
            np.testing.assert_allclose(flash_fwd(q, k, v, True), attention_ref(q, k, v, True), rtol=1e-4,
                                       atol=1e-5)
        got = flash_fwd(typed(q, nl.bfloat16), typed(k, nl.bfloat16), typed(v, nl.bfloat16), True)
        np.testing.assert_allclose(got, attention_ref(bf16(q), bf16(k), bf16(v), True), atol=3e-2)

    def test_kernel_violation_names_the_call(self):
        """NKI.md 6 (the simulator checks hardware constraints and raises) and NKI.md 3 "Matmul tile limits": a kernel
        that breaks a hardware rule stops with an error naming the call and the rule."""
        @nki.jit
        def too_wide(a):
            t = nl.ndarray((128, 1024), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a)
            acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=t[:, 0:128], moving=t)
            return None
        with self.assertRaisesRegex(NkiModelError, r"^nisa.nc_matmul: moving free size 1024 > 512"):
            too_wide(np.zeros((128, 1024), np.float32))


if __name__ == "__main__":
    unittest.main()
