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
        self.prebuilt = None  # a ModelProto (made by onnxruntime.quantization) instead of nodes / inits
        self.threads = None  # ONNX Runtime's intra-op threads for the expected outputs (None: its default)
        self.atol = None  # fusec-run's tolerance for the f32 outputs (None: its default)
        self.rtol = None
        self.expected = None  # the expected outputs, for a case ONNX Runtime cannot run
        self.bf16 = True  # also checked with --precision bf16 (run_contrib_ops.py's *-bf16 modes)
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
        if self.prebuilt is not None:
            return self.prebuilt
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
    # DynamicQuantizeLSTM forms ONNX Runtime refuses: a nonzero per-column zero point of i8 weights,
    # W and R of different dtypes, a layout attribute.
    c = dq_case("dqlstm_i8_per_column_zp", 2, 1, 3, 4, per_column=True)
    c.inits = [numpy_helper.from_array(np.where(np.arange(16) == 5, 3, 0).astype(np.int8).reshape(1, 16), t.name)
               if t.name == "w_zp" else t for t in c.inits]
    yield c
    yield dq_case("dqlstm_mixed_dtypes", 2, 1, 3, 4, wtype=np.uint8, rtype=np.int8)
    yield dq_case("dqlstm_layout", 2, 1, 3, 4, layout=0)
    c = dq_case("dqlstm_scale_shape", 2, 1, 3, 4)
    c.inits = [numpy_helper.from_array(np.full((3,), 0.01, np.float32), t.name) if t.name == "r_scale" else t
               for t in c.inits]
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
    # A row of length 0: Y_h (and Y_c) are 0, not the initial state (ONNX Runtime's kernels).
    yield rnn_case("lstm_bidir_len0", "LSTM", 4, 3, 5, 6, dirs=2, lens=[0, 4, 2])
    yield rnn_case("gru_reverse_len0", "GRU", 3, 2, 4, 5, lens=[3, 0], direction="reverse")
    yield rnn_case("rnn_len0_b3", "RNN", 3, 3, 2, 4, lens=[2, 0, 3])


# --- DynamicQuantizeLSTM ----------------------------------------------------------------------
# ONNX Runtime's expected outputs are computed with one intra-op thread: with more, its kernel
# quantises each thread's chunk of batch rows of H on its own range (DynamicQuantizeLstm.cpp), so
# its result depends on the machine. fusec matches it to float rounding (the MLAS sigmoid / tanh
# are a few ulps from fusec's): the tolerance of these cases is 1e-5, against quantisation steps of
# about 1e-3 that a wrong grouping of rows or another rounding would show. They are not run with
# --precision bf16: a bf16 H is up to half a quantisation step of H away from the f32 one, so about
# every other element quantises to another integer and the (unbounded) cell state drifts by several
# steps, past any tolerance that would still check the quantisation.
DQ_ATOL = 1e-5
DQ_RTOL = 1e-4


def dq_case(name, t, b, i, h, dirs=1, wtype=np.int8, rtype=None, per_column=False, lens=None, lens_const=False,
            peep=False, bias=True, init=True, want_y=True, want_c=True, tail_scale=1.0, **attrs):
    """A hand-built DynamicQuantizeLSTM: W [D, I, 4H], R [D, H, 4H] of wtype / rtype, scales and zero
    points per direction ([D]) or per column ([D, 4H]); u8 zero points differ per direction (per
    column they are one value, as ONNX Runtime requires)."""
    rtype = rtype or wtype
    c = Case(name, opset=14)
    c.threads, c.atol, c.rtol, c.bf16 = 1, DQ_ATOL, DQ_RTOL, False
    shape = (dirs, 4 * h) if per_column else (dirs,)

    def weights(nm, k, dt):
        # i8 weights are 7-bit ([-64, 63], as quantize_dynamic's reduce_range writes them): ONNX
        # Runtime's u8 x i8 product on x86 hosts without VNNI adds pairs of products in saturating
        # int16 (pmaddubsw), so full-range i8 weights give host-dependent expected outputs.
        lo, hi = (-64, 63) if dt == np.int8 else (0, 255)
        q = c.rng.integers(lo, hi + 1, size=(dirs, k, 4 * h)).astype(dt)
        scale = (c.rng.uniform(0.5, 1.5, size=shape) * (0.7 / np.sqrt(k)) / hi).astype(np.float32)
        if dt == np.int8:
            zp = np.zeros(shape, dtype=dt)
        elif per_column:
            zp = np.full(shape, c.rng.integers(100, 156), dtype=dt)
        else:
            zp = c.rng.integers(100, 156, size=shape).astype(dt)
        return [c.init(nm, q), c.init(nm + "_scale", scale), c.init(nm + "_zp", zp)]

    w = weights("w", i, wtype)
    r = weights("r", h, rtype)
    x = c.rand(t, b, i)
    if lens is not None:
        x[max(lens):] *= tail_scale  # the steps no row reads, scaled past the others' range
    ins = [c.inp("x", x), w[0], r[0], c.init("bias", c.rand(dirs, 8 * h, scale=0.3)) if bias else ""]
    if lens is None:
        ins.append("")
    elif lens_const:
        ins.append(c.init("lens", np.array(lens, dtype=np.int32)))
    else:
        ins.append(c.inp("lens", np.array(lens, dtype=np.int32)))
    ins.append(c.inp("h0", c.rand(dirs, b, h)) if init else "")
    ins.append(c.inp("c0", c.rand(dirs, b, h)) if init else "")
    ins.append(c.init("p", c.rand(dirs, 3 * h, scale=0.5)) if peep else "")
    ins += [w[1], w[2], r[1], r[2]]
    outs = ["y" if want_y else "", "y_h", "y_c" if want_c else ""]
    while outs[-1] == "":
        outs.pop()
    direction = {1: "forward", 2: "bidirectional"}[dirs] if "direction" not in attrs else attrs.pop("direction")
    c.node("DynamicQuantizeLSTM", ins, outs, hidden_size=h, direction=direction, **attrs)
    c.out(*[o for o in outs if o])
    return c


def quantized(c, fp32_model, per_channel):
    """c with onnxruntime.quantization.quantize_dynamic(fp32_model) as its model."""
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f32.onnx"), os.path.join(d, "q.onnx")
        onnx.save(fp32_model, src)
        # reduce_range: 7-bit weights, so that ONNX Runtime's expected outputs do not depend on the
        # host (its u8 x i8 kernel saturates int16 pair sums on x86 without VNNI; see dq_case).
        quantize_dynamic(src, dst, per_channel=per_channel, weight_type=QuantType.QInt8, reduce_range=True)
        c.prebuilt = onnx.load(dst)
    return c


def qd_lstm_case(name, t, b, i, h, dirs=1, per_channel=False, lens=None, init=False, **attrs):
    """An ai.onnx LSTM quantised by quantize_dynamic (its weights become i8, transposed)."""
    c = rnn_case(name, "LSTM", t, b, i, h, dirs=dirs, lens=lens, init=init, **attrs)
    c.threads, c.atol, c.rtol, c.bf16 = 1, DQ_ATOL, DQ_RTOL, False
    return quantized(c, c.model(), per_channel)


def crnn_case(name, b, per_channel):
    """A CRNN text recogniser: two Conv + Relu + MaxPool blocks over a [B, 1, 16, 20] image, the
    feature columns as a sequence [T = 10, B, 64], a bidirectional LSTM (hidden 16), a Linear to 11
    classes; quantize_dynamic'd (ConvInteger, MatMulInteger, DynamicQuantizeLSTM)."""
    c = Case(name, opset=14)
    c.threads, c.bf16 = 1, False
    x = c.inp("image", c.rand(b, 1, 16, 20))
    c.node("Conv", [x, c.init("c1w", c.rand(8, 1, 3, 3, scale=0.5)), c.init("c1b", c.rand(8, scale=0.1))], ["c1"],
           domain="", pads=[1, 1, 1, 1])
    c.node("Relu", ["c1"], ["r1"], domain="")
    c.node("MaxPool", ["r1"], ["p1"], domain="", kernel_shape=[2, 2], strides=[2, 2])  # [B, 8, 8, 10]
    c.node("Conv", ["p1", c.init("c2w", c.rand(16, 8, 3, 3, scale=0.2)), c.init("c2b", c.rand(16, scale=0.1))],
           ["c2"], domain="", pads=[1, 1, 1, 1])
    c.node("Relu", ["c2"], ["r2"], domain="")
    c.node("MaxPool", ["r2"], ["p2"], domain="", kernel_shape=[2, 1], strides=[2, 1])  # [B, 16, 4, 10]
    c.node("Reshape", ["p2", c.init("seq_shape", np.array([b, 64, 10], dtype=np.int64))], ["f"], domain="")
    c.node("Transpose", ["f"], ["seq"], domain="", perm=[2, 0, 1])  # [10, B, 64]
    h = 16
    c.node("LSTM", ["seq", c.init("lw", c.rand(2, 4 * h, 64, scale=0.2)), c.init("lr", c.rand(2, 4 * h, h, scale=0.3)),
                    c.init("lb", c.rand(2, 8 * h, scale=0.1))], ["y"], domain="", hidden_size=h,
           direction="bidirectional")  # [10, 2, B, 16]
    c.node("Transpose", ["y"], ["yt"], domain="", perm=[0, 2, 1, 3])
    c.node("Reshape", ["yt", c.init("feat_shape", np.array([10, b, 2 * h], dtype=np.int64))], ["feat"], domain="")
    c.node("MatMul", ["feat", c.init("fc_w", c.rand(2 * h, 11, scale=0.3))], ["fc"], domain="")
    c.node("Add", ["fc", c.init("fc_b", c.rand(11, scale=0.1))], ["logits"], domain="")
    c.out("logits")
    return quantized(c, c.model(), per_channel)


def dqlstm_cases():
    yield from dqlstm_quantized_cases()
    yield from dqlstm_hand_cases()


def dqlstm_quantized_cases():
    # quantize_dynamic on ai.onnx LSTMs (i8 weights, per tensor or per column).
    yield qd_lstm_case("dqlstm_qd_forward_b3_h8_i7", 5, 3, 7, 8)
    yield qd_lstm_case("dqlstm_qd_per_column_bidir_b1_h32_i13", 4, 1, 13, 32, dirs=2, per_channel=True, init=True)
    yield qd_lstm_case("dqlstm_qd_per_column_reverse_lens_b3", 5, 3, 5, 8, per_channel=True, lens=[3, 5, 1],
                       direction="reverse")
    yield qd_lstm_case("dqlstm_qd_bidir_lens_h32_i10_b3", 4, 3, 10, 32, dirs=2, lens=[4, 2, 3], init=True)
    # A CRNN-like recogniser (conv stack + bidirectional LSTM + Linear), quantize_dynamic'd.
    for b in (1, 3):
        c = crnn_case(f"dqlstm_crnn_b{b}", b, per_channel=b == 3)
        c.atol, c.rtol = 1e-4, 1e-4
        yield c


def dqlstm_hand_cases():
    # By hand: u8 weights with zero points, both scale layouts, the optional inputs and outputs.
    yield dq_case("dqlstm_u8_zp_forward_b3_h8_i7", 4, 3, 7, 8, wtype=np.uint8)
    yield dq_case("dqlstm_u8_per_column_bidir_peep_b3_h8_i5", 3, 3, 5, 8, dirs=2, wtype=np.uint8, per_column=True,
                  peep=True)
    yield dq_case("dqlstm_u8_reverse_no_bias_b1_h32_i9", 4, 1, 9, 32, wtype=np.uint8, direction="reverse",
                  bias=False, init=False)
    # sequence_lens (a length 0 row included) with Y: finished rows read 0 from Y's step.
    yield dq_case("dqlstm_bidir_lens_zero_b3_h8_i7", 5, 3, 7, 8, dirs=2, lens=[3, 5, 0], peep=True)
    # ... without Y: finished rows keep their last H in the next step's range.
    yield dq_case("dqlstm_bidir_lens_no_y_b3_h8_i6", 5, 3, 6, 8, dirs=2, lens=[2, 5, 4], want_y=False)
    yield dq_case("dqlstm_reverse_const_lens_per_column_b3", 4, 3, 5, 8, per_column=True, lens=[1, 4, 3],
                  lens_const=True, direction="reverse")
    # max(sequence_lens) < T: the steps past it are outside X's range (ONNX Runtime's input product
    # covers only the steps below it).
    yield dq_case("dqlstm_lens_below_t_b3_h8_i5", 6, 3, 5, 8, lens=[3, 1, 2], tail_scale=3.0)
    yield dq_case("dqlstm_bidir_const_lens_below_t_b3_h8_i5", 6, 3, 5, 8, dirs=2, lens=[2, 4, 1], lens_const=True,
                  tail_scale=3.0)
    yield dq_case("dqlstm_all_lens_zero_b3", 3, 3, 4, 8, lens=[0, 0, 0])
    yield dq_case("dqlstm_t1_b1_h8_i3", 1, 1, 3, 8, init=False, want_c=False)
    # An empty batch: empty outputs (ONNX Runtime 1.32 aborts the process on it, so they are given).
    c = dq_case("dqlstm_empty_batch_bidir", 3, 0, 4, 8, dirs=2)
    c.expected = [np.zeros((3, 2, 0, 8), np.float32), np.zeros((2, 0, 8), np.float32), np.zeros((2, 0, 8), np.float32)]
    yield c
    yield dq_case("dqlstm_clip_input_forget_activations_b3", 4, 3, 6, 8, clip=0.8, input_forget=1,
                  activations=["HardSigmoid", "Tanh", "Softsign"], activation_alpha=[0.3], activation_beta=[0.45])


def f16_cases():
    # SkipLayerNormalization's mean / inv_std_var are left out: ONNX Runtime keeps the skip sum
    # in f32 inside its kernel, fusec rounds it to f16 like an unfused graph (docs/CONTRIB_OPS.md).
    for gen in (gelu_cases, norm_cases, rotary_cases, mha_cases, gqa_cases, nbits_cases):
        for c in gen():
            if c.name in F16_CASES:
                yield as_f16(c)


def ort_outputs(ort, so, c):
    """c's outputs on ONNX Runtime's CPU provider (so, or c's own thread count)."""
    if c.threads:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.intra_op_num_threads = c.threads
    sess = ort.InferenceSession(c.model().SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(c.outputs, {n: a for n, a in c.inputs})


def main(out_dir, mode=""):
    os.makedirs(out_dir, exist_ok=True)
    if mode == "--models-only":
        # Models without expected outputs (no onnxruntime needed): the lit tests' inputs.
        for gen in (gelu_cases, norm_cases, rotary_cases, mha_cases, attention_cases, gqa_cases, nbits_cases, f16_cases,
                    refusal_models, rnn_cases, dqlstm_hand_cases):
            for c in gen():
                onnx.save(c.model(), os.path.join(out_dir, c.name + ".onnx"))
        return
    import onnxruntime as ort

    manifest = {}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for gen in (gelu_cases, norm_cases, rotary_cases, mha_cases, attention_cases, gqa_cases, nbits_cases, f16_cases,
                rnn_cases, dqlstm_cases):
        for c in gen():
            d = os.path.join(out_dir, c.name)
            data = os.path.join(d, "test_data_set_0")
            os.makedirs(data, exist_ok=True)
            m = c.model()
            onnx.save(m, os.path.join(d, "model.onnx"))
            ref = c.reference or c
            if c.expected is not None:
                outs = c.expected
            else:
                outs = ort_outputs(ort, so, ref)
            for i, (n, a) in enumerate(c.inputs):
                with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(a, n).SerializeToString())
            for i, (n, a) in enumerate(zip(c.outputs, outs)):
                with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a), n).SerializeToString())
            manifest[c.name] = {"inputs": {n: list(a.shape) for n, a in c.inputs}}
            if c.atol is not None:
                manifest[c.name]["atol"], manifest[c.name]["rtol"] = c.atol, c.rtol
            if not c.bf16:
                manifest[c.name]["bf16"] = False
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"wrote {len(manifest)} cases to {out_dir}")


if __name__ == "__main__":
    main(*sys.argv[1:])
