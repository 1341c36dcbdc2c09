"""Small models of the ONNX Runtime contrib ops fusec maps (com.microsoft Gelu ... MatMulNBits,
ai.onnx RotaryEmbedding and SimplifiedLayerNormalization), with expected outputs from ONNX
Runtime's CPU provider.

    python3 make_contrib_models.py OUT_DIR [--models-only]

Writes OUT_DIR/<case>/model.onnx and OUT_DIR/<case>/test_data_set_0/{input,output}_<i>.pb for
every case, and OUT_DIR/manifest.json ({case: {"inputs": {name: dims}}}). The cases cover each
op's optional inputs and outputs and boundary shapes: odd hidden sizes, batch 1, sequence 1,
a partial last quantisation block. Inputs are seeded, so the files are the same on every run.
--models-only writes just OUT_DIR/<case>.onnx for every case and for the models fusec must
refuse (refusal_models), without onnxruntime: the lit tests' inputs.
"""
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
F32 = TensorProto.FLOAT


class Case:
    def __init__(self, name, opset=17):
        self.name = name
        self.opset = opset
        self.nodes = []
        self.inputs = []  # (name, array)
        self.inits = []
        self.outputs = []  # names
        self.reference = None  # a Case that computes the same outputs on ONNX Runtime's CPU provider
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))

    def rand(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def inp(self, name, arr):
        self.inputs.append((name, arr))
        return name

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, ins, outs, domain=MS, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op.lower()}_{len(self.nodes)}",
                                           domain=domain, **attrs))
        return outs

    def out(self, *names):
        self.outputs.extend(names)

    def model(self):
        ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
               for n, a in self.inputs]
        outs = [helper.make_empty_tensor_value_info(n) for n in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, ins, outs, self.inits)
        opsets = [helper.make_opsetid("", self.opset), helper.make_opsetid(MS, 1)]
        ir = 10 if self.opset >= 21 else 8
        return helper.make_model(graph, opset_imports=opsets, ir_version=ir)


def gelu_cases():
    c = Case("gelu")
    c.node("Gelu", [c.inp("x", c.rand(2, 3, 7))], ["y"])
    c.out("y")
    yield c
    c = Case("fast_gelu_bias_b1s1")
    c.node("FastGelu", [c.inp("x", c.rand(1, 1, 5)), c.init("b", c.rand(5))], ["y"])
    c.out("y")
    yield c
    c = Case("fast_gelu")
    c.node("FastGelu", [c.inp("x", c.rand(2, 3, 6, scale=3.0))], ["y"])
    c.out("y")
    yield c
    c = Case("bias_gelu")
    c.node("BiasGelu", [c.inp("a", c.rand(2, 3, 9)), c.init("b", c.rand(9))], ["y"])
    c.out("y")
    yield c
    c = Case("quick_gelu")
    c.node("QuickGelu", [c.inp("x", c.rand(3, 5, scale=2.0))], ["y"])
    c.out("y")
    yield c
    c = Case("quick_gelu_alpha1")
    c.node("QuickGelu", [c.inp("x", c.rand(1, 1, 3))], ["y"], alpha=1.0)
    c.out("y")
    yield c


def norm_cases():
    c = Case("skip_layer_norm_all_outputs")
    h = 7
    c.node("SkipLayerNormalization",
           [c.inp("x", c.rand(2, 3, h)), c.inp("skip", c.rand(2, 3, h)), c.init("gamma", c.rand(h)),
            c.init("beta", c.rand(h)), c.init("bias", c.rand(h))],
           ["y", "mean", "inv_std", "sum"], epsilon=1e-5)
    c.out("y", "mean", "inv_std", "sum")
    yield c
    c = Case("skip_layer_norm_2d_skip")
    c.node("SkipLayerNormalization",
           [c.inp("x", c.rand(2, 3, 5)), c.inp("skip", c.rand(3, 5)), c.init("gamma", c.rand(5))],
           ["y"])
    c.out("y")
    yield c
    c = Case("skip_layer_norm_b1s1_sum")
    c.node("SkipLayerNormalization",
           [c.inp("x", c.rand(1, 1, 13)), c.inp("skip", c.rand(1, 1, 13)), c.init("gamma", c.rand(13)),
            c.init("beta", c.rand(13))],
           ["y", "", "", "sum"], epsilon=1e-6)
    c.out("y", "sum")
    yield c
    c = Case("skip_simplified_layer_norm")
    c.node("SkipSimplifiedLayerNormalization",
           [c.inp("x", c.rand(2, 3, 7)), c.inp("skip", c.rand(2, 3, 7)), c.init("gamma", c.rand(7)),
            c.init("bias", c.rand(7))],
           ["y", "", "inv_std", "sum"], epsilon=1e-5)
    c.out("y", "inv_std", "sum")
    yield c
    c = Case("skip_simplified_layer_norm_b1s1")
    c.node("SkipSimplifiedLayerNormalization",
           [c.inp("x", c.rand(1, 1, 5)), c.inp("skip", c.rand(1, 1, 5)), c.init("gamma", c.rand(5))],
           ["y"])
    c.out("y")
    yield c
    c = Case("simplified_layer_norm")
    c.node("SimplifiedLayerNormalization", [c.inp("x", c.rand(2, 3, 7)), c.init("scale", c.rand(7))],
           ["y", "inv_std"], domain="", epsilon=1e-5)
    c.out("y", "inv_std")
    yield c
    c = Case("simplified_layer_norm_axis1")
    c.node("SimplifiedLayerNormalization", [c.inp("x", c.rand(2, 3, 5)), c.init("scale", c.rand(3, 5))],
           ["y"], domain="", axis=1)
    c.out("y")
    yield c


def caches(rng, positions, half):
    theta = rng.uniform(0.1, 1.0, size=half).astype(np.float32)
    ang = np.arange(positions, dtype=np.float32)[:, None] * theta[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def rotary_cases():
    for inter in (0, 1):
        c = Case(f"rotary_ms_3d_interleaved{inter}")
        cos, sin = caches(c.rng, 8, 2)
        pid = np.array([[0, 1, 2], [5, 6, 7]], dtype=np.int64)
        c.node("RotaryEmbedding", [c.inp("x", c.rand(2, 3, 8)), c.inp("pid", pid), c.init("cos", cos),
                                   c.init("sin", sin)], ["y"], num_heads=2, interleaved=inter)
        c.out("y")
        yield c
    c = Case("rotary_ms_partial_b1s1")
    cos, sin = caches(c.rng, 4, 2)
    c.node("RotaryEmbedding", [c.inp("x", c.rand(1, 1, 16)), c.inp("pid", np.array([[3]], dtype=np.int64)),
                               c.init("cos", cos), c.init("sin", sin)], ["y"], num_heads=2,
           rotary_embedding_dim=4)
    c.out("y")
    yield c
    c = Case("rotary_ms_4d_offset")
    cos, sin = caches(c.rng, 8, 3)
    c.node("RotaryEmbedding", [c.inp("x", c.rand(1, 2, 3, 6)), c.init("pid", np.array([2], dtype=np.int64)),
                               c.init("cos", cos), c.init("sin", sin)], ["y"])
    c.out("y")
    yield c
    c = Case("rotary_onnx23_4d", opset=23)
    cos, sin = caches(c.rng, 8, 2)
    pid = np.array([[0, 1, 2], [4, 3, 7]], dtype=np.int64)
    c.node("RotaryEmbedding", [c.inp("x", c.rand(2, 2, 3, 4)), c.init("cos", cos), c.init("sin", sin),
                               c.inp("pid", pid)], ["y"], domain="")
    c.out("y")
    yield c
    c = Case("rotary_onnx23_3d_nopid_interleaved", opset=23)
    cos, sin = caches(c.rng, 3, 2)
    c.node("RotaryEmbedding", [c.inp("x", c.rand(1, 3, 12)), c.inp("cos", cos[None]), c.inp("sin", sin[None])],
           ["y"], domain="", num_heads=2, interleaved=1, rotary_embedding_dim=4)
    c.out("y")
    yield c


def mha_cases():
    c = Case("mha_cross_bias_masks")
    n, h = 3, 4
    d = n * h
    c.node("MultiHeadAttention",
           [c.inp("q", c.rand(2, 3, d)), c.inp("k", c.rand(2, 5, d)), c.inp("v", c.rand(2, 5, d)),
            c.init("bias", c.rand(3 * d, scale=0.1)),
            c.inp("kpm", np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=np.int32)),
            c.inp("ab", c.rand(1, n, 3, 5))],
           ["y"], num_heads=n)
    c.out("y")
    yield c
    c = Case("mha_causal_present")
    c.node("MultiHeadAttention", [c.inp("q", c.rand(1, 4, 10)), c.inp("k", c.rand(1, 4, 10)),
                                  c.inp("v", c.rand(1, 4, 6))],
           ["y", "pk", "pv"], num_heads=2, unidirectional=1, scale=0.3)
    c.out("y", "pk", "pv")
    yield c
    c = Case("mha_key_lengths")
    c.node("MultiHeadAttention", [c.inp("q", c.rand(2, 2, 8)), c.inp("k", c.rand(2, 4, 8)),
                                  c.inp("v", c.rand(2, 4, 8)), "",
                                  c.inp("len", np.array([2, 4], dtype=np.int32))],
           ["y"], num_heads=2)
    c.out("y")
    yield c
    c = Case("mha_mask3d")
    m3 = np.ones((2, 3, 4), dtype=np.int32)
    m3[0, 1, 2:] = 0
    m3[1, :, 3] = 0
    c.node("MultiHeadAttention", [c.inp("q", c.rand(2, 3, 8)), c.inp("k", c.rand(2, 4, 8)),
                                  c.inp("v", c.rand(2, 4, 8)), "", c.inp("m", m3)],
           ["y"], num_heads=2, mask_filter_value=-1e4)
    c.out("y")
    yield c
    # ONNX Runtime's CPU provider has no packed QKV: the expected output is that of the same
    # attention with Q, K and V passed separately.
    c = Case("mha_packed_qkv")
    qkv = c.rand(1, 3, 2, 3, 4)
    c.node("MultiHeadAttention", [c.inp("qkv", qkv)], ["y"], num_heads=2)
    c.out("y")
    r = Case("mha_packed_qkv_reference")
    r.node("MultiHeadAttention", [r.inp(n, qkv[:, :, :, i, :].reshape(1, 3, 8)) for i, n in enumerate("qkv")],
           ["y"], num_heads=2)
    r.out("y")
    c.reference = r
    yield c
    c = Case("mha_bnsh_kv_s1")
    c.node("MultiHeadAttention", [c.inp("q", c.rand(1, 1, 6)), c.inp("k", c.rand(1, 2, 4, 3)),
                                  c.inp("v", c.rand(1, 2, 4, 3))], ["y"], num_heads=2)
    c.out("y")
    yield c


def attention_cases():
    # com.microsoft Attention (the form ONNX Runtime's BERT / GPT-2 fusion writes by default).
    c = Case("attention_mask2d_bias")
    d_in, n, h = 10, 2, 4
    c.node("Attention", [c.inp("x", c.rand(2, 3, d_in)), c.init("w", c.rand(d_in, 3 * n * h, scale=0.3)),
                         c.init("b", c.rand(3 * n * h, scale=0.1)),
                         c.inp("mask", np.array([[1, 1, 0], [1, 1, 1]], dtype=np.int32))],
           ["y"], num_heads=n)
    c.out("y")
    yield c
    c = Case("attention_causal_present_b1")
    c.node("Attention", [c.inp("x", c.rand(1, 4, 6)), c.init("w", c.rand(6, 24, scale=0.3)),
                         c.init("b", c.rand(24, scale=0.1))],
           ["y", "present"], num_heads=2, unidirectional=1)
    c.out("y", "present")
    yield c
    c = Case("attention_lengths_qkv_sizes_bias")
    c.node("Attention", [c.inp("x", c.rand(2, 3, 8)), c.init("w", c.rand(8, 8 + 8 + 12, scale=0.3)),
                         c.init("b", c.rand(28, scale=0.1)), c.inp("len", np.array([2, 3], dtype=np.int32)),
                         "", c.inp("ab", c.rand(2, 2, 3, 3))],
           ["y"], num_heads=2, qkv_hidden_sizes=[8, 8, 12])
    c.out("y")
    yield c
    c = Case("attention_mask3d_s1")
    c.node("Attention", [c.inp("x", c.rand(2, 1, 6)), c.init("w", c.rand(6, 18, scale=0.3)),
                         c.init("b", c.rand(18, scale=0.1)),
                         c.inp("mask", np.array([[[1]], [[1]]], dtype=np.int32))],
           ["y"], num_heads=3)
    c.out("y")
    yield c


def gqa_case(name, b, s, n, kv, h, packed=False, rotary=False, interleaved=0, seqlens=None,
             bias=False, **attrs):
    c = Case(name)
    ins = []
    if packed:
        ins += [c.inp("qkv", c.rand(b, s, (n + 2 * kv) * h)), "", ""]
    else:
        ins += [c.inp("q", c.rand(b, s, n * h)), c.inp("k", c.rand(b, s, kv * h)), c.inp("v", c.rand(b, s, kv * h))]
    ins += ["", ""]
    lens = np.full([b], s - 1, dtype=np.int32) if seqlens is None else np.array(seqlens, dtype=np.int32)
    ins += [c.inp("seqlens_k", lens),
            c.init("total", np.array(s, dtype=np.int32))]
    if rotary:
        cos, sin = caches(c.rng, s + 3, h // 2)
        ins += [c.init("cos", cos), c.init("sin", sin)]
        attrs["do_rotary"] = 1
        attrs["rotary_interleaved"] = interleaved
    if bias:
        if not rotary:
            ins += ["", ""]
        ins += ["", c.inp("attention_bias", c.rand(1, n, s, s))]
    c.node("GroupQueryAttention", ins, ["y", "pk", "pv"], num_heads=n, kv_num_heads=kv, **attrs)
    c.out("y", "pk", "pv")
    return c


def gqa_cases():
    # ONNX Runtime's CPU provider needs head sizes that are multiples of 16.
    yield gqa_case("gqa_basic", 1, 5, 4, 2, 16)
    yield gqa_case("gqa_rotary_b2", 2, 4, 4, 1, 16, rotary=True)
    yield gqa_case("gqa_rotary_interleaved_packed", 1, 3, 2, 2, 16, packed=True, rotary=True, interleaved=1)
    yield gqa_case("gqa_window_softcap", 1, 6, 2, 1, 16, local_window_size=2, softcap=2.0)
    yield gqa_case("gqa_s1", 2, 1, 4, 4, 16, scale=0.5)
    yield gqa_case("gqa_bidirectional_padded", 2, 4, 2, 1, 16, seqlens=[3, 1], causal=0)
    yield gqa_case("gqa_attention_bias", 1, 3, 4, 2, 16, bias=True)


def pack(q, bits):
    """q: (..., count) ints < 2**bits -> bytes, low bits first, along the last axis."""
    per = 8 // bits
    q = q.reshape(*q.shape[:-1], -1, per).astype(np.uint16)
    out = np.zeros(q.shape[:-1], dtype=np.uint16)
    for i in range(per):
        out |= q[..., i] << (i * bits)
    return out.astype(np.uint8)


def nbits_case(name, a_shape, k, n, bits, block, zp="packed", bias=False):
    c = Case(name)
    blocks = (k + block - 1) // block
    q = c.rng.integers(0, 2**bits, size=(n, blocks, block))
    ins = [c.inp("a", c.rand(*a_shape)), c.init("w", pack(q, bits)),
           # Weights of about the same size for every bit width.
           c.init("scales", (c.rng.uniform(0.01, 0.1, size=(n * blocks,)) / 2**(bits - 4)).astype(np.float32))]
    if zp == "packed":
        z = c.rng.integers(0, 2**bits, size=(n, blocks))
        per = 8 // bits
        padded = np.zeros((n, -(-blocks // per) * per), dtype=np.int64)
        padded[:, :blocks] = z
        ins.append(c.init("zp", pack(padded, bits).reshape(-1)))
    elif zp == "float":
        ins.append(c.init("zp", c.rng.uniform(0, 2**bits - 1, size=(n * blocks,)).astype(np.float32)))
    else:
        ins.append("")
    if bias:
        ins += ["", c.init("bias", c.rand(n))]
    c.node("MatMulNBits", ins, ["y"], K=k, N=n, bits=bits, block_size=block)
    c.out("y")
    return c


def nbits_cases():
    yield nbits_case("matmul_nbits_4bit_zp_bias", (2, 3, 40), 40, 7, 4, 16, zp="packed", bias=True)
    yield nbits_case("matmul_nbits_4bit_nozp", (1, 32), 32, 5, 4, 32, zp=None)
    yield nbits_case("matmul_nbits_8bit", (2, 64), 64, 3, 8, 16, zp="packed")
    yield nbits_case("matmul_nbits_4bit_float_zp", (1, 1, 48), 48, 9, 4, 16, zp="float")


def refusal_models():
    """Models fusec must refuse with a clear error (test/lit/frontend/contrib.test)."""
    c = Case("unknown_contrib")
    x = c.inp("x", c.rand(2, 3, 8))
    c.node("EmbedLayerNormalization", [x], ["e"])
    c.node("Gelu", [x], ["g"])
    c.node("QOrderedGelu", ["g"], ["y"])
    # A mapped op in a form its mapping refuses is listed in the same report.
    c.node("MultiHeadAttention", [x, x, x], ["a", "", "", "qk"], num_heads=2)
    c.out("e", "y", "a", "qk")
    yield c
    c = Case("gqa_past")
    ins = [c.inp("q", c.rand(1, 1, 32)), c.inp("k", c.rand(1, 1, 16)), c.inp("v", c.rand(1, 1, 16)),
           c.inp("past_k", c.rand(1, 1, 4, 16)), c.inp("past_v", c.rand(1, 1, 4, 16)),
           c.inp("seqlens_k", np.array([4], dtype=np.int32)), c.init("total", np.array(5, dtype=np.int32))]
    c.node("GroupQueryAttention", ins, ["y", "pk", "pv"], num_heads=2, kv_num_heads=1)
    c.out("y", "pk", "pv")
    yield c
    c = Case("skip_simplified_mean")
    c.node("SkipSimplifiedLayerNormalization",
           [c.inp("x", c.rand(1, 2, 4)), c.inp("skip", c.rand(1, 2, 4)), c.init("gamma", c.rand(4))],
           ["y", "mean"])
    c.out("y", "mean")
    yield c
    c = Case("nbits_dynamic_weight")
    c.node("MatMulNBits", [c.inp("a", c.rand(1, 16)), c.inp("w", np.zeros((2, 1, 8), dtype=np.uint8)),
                           c.init("scales", np.ones(2, dtype=np.float32))], ["y"], K=16, N=2, bits=4, block_size=16)
    c.out("y")
    yield c


def as_f16(c):
    """Case c with its f32 inputs and initializers in f16 (models optimised for ONNX Runtime
    often are), named <case>_f16."""
    c.name += "_f16"
    c.inputs = [(n, a.astype(np.float16) if a.dtype == np.float32 else a) for n, a in c.inputs]
    c.inits = [numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)
               if t.data_type == TensorProto.FLOAT else t for t in c.inits]
    return c


F16_CASES = ["fast_gelu_bias_b1s1", "skip_layer_norm_2d_skip", "skip_simplified_layer_norm",
             "simplified_layer_norm", "rotary_ms_3d_interleaved0", "mha_cross_bias_masks", "gqa_rotary_b2",
             "matmul_nbits_4bit_zp_bias"]


def rnn_case(name, op, t, b, i, h, dirs=1, layout=0, lens=None, peep=False, init=True, **attrs):
    # ai.onnx LSTM / GRU / RNN, which fusec unrolls at import (RecurrentOps.cpp); ONNX Runtime's
    # CPU kernels are the oracle for the attributes the onnx node tests leave at their defaults.
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    c = Case(name, opset=14)
    x = c.rand(*((b, t, i) if layout else (t, b, i)))
    ins = [c.inp("x", x), c.init("w", c.rand(dirs, g * h, i, scale=0.5)),
           c.init("r", c.rand(dirs, g * h, h, scale=0.5)), c.init("bias", c.rand(dirs, 2 * g * h, scale=0.3))]
    ins.append(c.inp("lens", np.array(lens, dtype=np.int32)) if lens is not None else "")
    state = (b, dirs, h) if layout else (dirs, b, h)
    ins.append(c.inp("h0", c.rand(*state)) if init else "")
    outs = ["y", "y_h"]
    if op == "LSTM":
        ins.append(c.inp("c0", c.rand(*state)) if init else "")
        ins.append(c.init("p", c.rand(dirs, 3 * h, scale=0.5)) if peep else "")
        outs.append("y_c")
    while ins and ins[-1] == "":
        ins.pop()
    direction = {1: "forward", 2: "bidirectional"}[dirs] if "direction" not in attrs else attrs.pop("direction")
    c.node(op, ins, outs, domain="", hidden_size=h, direction=direction, layout=layout, **attrs)
    c.out(*outs)
    return c


def rnn_cases():
    yield rnn_case("lstm_bidir_lens_peep_clip", "LSTM", 5, 3, 4, 3, dirs=2, lens=[3, 5, 1], peep=True,
                   clip=1.5)
    yield rnn_case("lstm_activations_alpha_beta", "LSTM", 4, 2, 3, 5,
                   activations=["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha=[0.3, 0.1],
                   activation_beta=[0.4])
    yield rnn_case("lstm_reverse_input_forget_b1", "LSTM", 3, 1, 2, 4, direction="reverse", input_forget=1,
                   init=False)
    yield rnn_case("gru_lbr_bidir_lens", "GRU", 4, 3, 5, 3, dirs=2, lens=[4, 2, 3], linear_before_reset=1)
    yield rnn_case("gru_reverse_scaledtanh_elu", "GRU", 3, 2, 3, 4, direction="reverse",
                   activations=["ScaledTanh", "Elu"], activation_alpha=[0.8, 1.1], activation_beta=[1.3])
    yield rnn_case("gru_t1_b1", "GRU", 1, 1, 3, 2, init=False)
    yield rnn_case("rnn_bidir_relu_affine_lens", "RNN", 4, 2, 3, 4, dirs=2, lens=[2, 4],
                   activations=["Relu", "Affine"], activation_alpha=[0.5], activation_beta=[0.2])
    yield rnn_case("rnn_thresholdedrelu_clip", "RNN", 3, 2, 3, 3, activations=["ThresholdedRelu"],
                   activation_alpha=[0.2], clip=0.7)


def f16_cases():
    # SkipLayerNormalization's mean / inv_std_var are left out: ONNX Runtime keeps the skip sum
    # in f32 inside its kernel, fusec rounds it to f16 like an unfused graph (docs/CONTRIB_OPS.md).
    for gen in (gelu_cases, norm_cases, rotary_cases, mha_cases, gqa_cases, nbits_cases):
        for c in gen():
            if c.name in F16_CASES:
                yield as_f16(c)


def main(out_dir, mode=""):
    os.makedirs(out_dir, exist_ok=True)
    if mode == "--models-only":
        # Models without expected outputs (no onnxruntime needed): the lit tests' inputs.
        for gen in (gelu_cases, norm_cases, rotary_cases, mha_cases, attention_cases, gqa_cases, nbits_cases, f16_cases,
                    refusal_models, rnn_cases):
            for c in gen():
                onnx.save(c.model(), os.path.join(out_dir, c.name + ".onnx"))
        return
    import onnxruntime as ort

    manifest = {}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for gen in (gelu_cases, norm_cases, rotary_cases, mha_cases, attention_cases, gqa_cases, nbits_cases, f16_cases,
                rnn_cases):
        for c in gen():
            d = os.path.join(out_dir, c.name)
            data = os.path.join(d, "test_data_set_0")
            os.makedirs(data, exist_ok=True)
            m = c.model()
            onnx.save(m, os.path.join(d, "model.onnx"))
            ref = c.reference or c
            sess = ort.InferenceSession(ref.model().SerializeToString(), so, providers=["CPUExecutionProvider"])
            outs = sess.run(ref.outputs, {n: a for n, a in ref.inputs})
            for i, (n, a) in enumerate(c.inputs):
                with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())
            for i, (n, a) in enumerate(zip(c.outputs, outs)):
                with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())
            manifest[c.name] = {"inputs": {n: list(a.shape) for n, a in c.inputs}}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"wrote {len(manifest)} cases to {out_dir}")


if __name__ == "__main__":
    main(*sys.argv[1:])
