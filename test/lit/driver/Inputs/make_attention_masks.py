#!/usr/bin/env python3
"""Writes the models of attention-masks.test into argv[1], each with
test_data_set_0 (inputs and ONNX Runtime's outputs).

Every model is one attention written in plain ops, Q [B,H,Sq,D], K and V
[B,H,Sk,D] graph inputs: MatMul(Q, Transpose(K)) * scale, a mask in the form
an exporter leaves it after constant folding, Softmax, MatMul with V.

  causal_offset   additive finfo.min constant [1,1,Sq,Sk], Sq=5 < Sk=13
                  (prefill after 8 cached keys: k <= q + 8), batch 1
  window          Where(bool [Sq,Sk] sliding window of 4, score, -inf)
  chunked         additive -inf constant, causal chunks of 8 (Sq=Sk=19)
  fill_1e4        additive {0, -1e4} causal constant (not -inf-like: kept
                  exact as an expression, no bias input)
  pad_runtime     bool padding input [B,Sk] And causal, Where(c, 0, min) (HF
                  eager mask); B=2, S=300: batch 1 is left-padded by 200
                  keys (whole key tiles empty; rows 0..199 fully masked)
  pad_hf_sub      (1 - Cast(Cast(mask, bool), f32)) * finfo.min + scores, no
                  causal (BERT); batch 0 padded from key 9
  pad_hf_int      (1 - Cast(mask:i64, f32)) * finfo.min: the mask values are
                  not known to be 0/1, so no key mask (a bias input stays)
  pad_folded      the padding folded in: an additive finfo.min constant
                  [2,1,S,S] = causal && padding (batch 1 has 9 of 12 keys)
  f16_or_reasons  fp16 model: Where(Or(Not(causal), Equal(mask:i64, 0)),
                  finfo(f16).min, scores) (masked_fill of the reasons): the
                  key mask is the i64 mask itself (kept where != 0)
  hf_legacy       Where(causal-masked, finfo.min, (1 - bool mask) * finfo.min)
                  (older HF: the padding mask masked_fill'ed with the causal)
  min_combo       Min(Where(causal, 0, min), (1 - bool mask) * min)
  add_inf         Where(causal, 0, -inf) + Where(mask, 0, -inf)
  add_finite      Where(causal, 0, min) + (1 - bool mask) * min: 2 * min
                  overflows to -inf where both mask, so fully masked rows are
                  not uniform over all keys: not split (exact expression)
  alibi_key       BLOOM ALiBi: slope[h] * k (f32 products) + causal -inf
  near_alibi      the same with one element one ulp off: a bias
  pad_folded_all  as pad_folded, every batch padded (keys 10, 11 kept by no
                  batch: free in the index pattern)
  near_causal     causal finfo.min constant with one element off: a bias
  near_folded     [2,1,S,S] constant that is not causal x per-key: a bias
  arange_big      HF's mask from positions, too large to fold ([Sq, Sk] =
                  2100 x 2300 > 2^22): Range(200, 2300) as [Sq, 1] (queries
                  after 200 cached keys) and Range(0, 2300) as [1, Sk];
                  LessOrEqual (causal) And Less(rows - cols, 1024) (sliding
                  window) And the run-time padding, Where(keep, 0, min)
  chunked_big     chunks of 512 from positions at 2100 x 2100 (Llama-4
                  chunked attention): (rows / 512) == (cols / 512) And
                  causal, Where(keep, 0, -inf)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T, helper as h, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(13)
FMIN = np.finfo(np.float32).min


def const(name, arr):
    return h.make_node("Constant", [], [name], name=name + "_c",
                       value=numpy_helper.from_array(np.asarray(arr), name))


def attention(name, B, H, Sq, Sk, D, mask_nodes, mask_out, extra_inputs, feeds_extra, mode="add",
              dt=np.float32):
    """mode add: scores + mask_out; where: Where(mask_out, scores, -inf);
    fill: Where(mask_out, finfo(dt).min, scores)."""
    et = T.FLOAT if dt == np.float32 else T.FLOAT16
    nodes = [
        h.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        const("scale", np.array(1.0 / np.sqrt(D), dt)),
        h.make_node("Mul", ["s", "scale"], ["ss"], name="scale_mul"),
    ] + mask_nodes
    if mode == "add":
        nodes.append(h.make_node("Add", ["ss", mask_out], ["sm"], name="mask_add"))
    elif mode == "fill":
        nodes.append(const("fill", np.array(np.finfo(dt).min, dt)))
        nodes.append(h.make_node("Where", [mask_out, "fill", "ss"], ["sm"], name="mask_fill"))
    else:
        nodes.append(const("ninf", np.array(-np.inf, np.float32)))
        nodes.append(h.make_node("Where", [mask_out, "ss", "ninf"], ["sm"], name="mask_where"))
    nodes += [h.make_node("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
              h.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    inputs = [h.make_tensor_value_info("q", et, [B, H, Sq, D]),
              h.make_tensor_value_info("k", et, [B, H, Sk, D]),
              h.make_tensor_value_info("v", et, [B, H, Sk, D])] + extra_inputs
    g = h.make_graph(nodes, name, inputs, [h.make_tensor_value_info("y", et, [B, H, Sq, D])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    feeds = {"q": rng.standard_normal((B, H, Sq, D)).astype(dt),
             "k": rng.standard_normal((B, H, Sk, D)).astype(dt),
             "v": rng.standard_normal((B, H, Sk, D)).astype(dt)}
    feeds.update(feeds_extra)
    res = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    d = os.path.join(out, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    for i, (k, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(d, f"input_{i}.pb"))
    onnx.save_tensor(numpy_helper.from_array(res[0], "y"), os.path.join(d, "output_0.pb"))


def causal(sq, sk, off=0):
    q = np.arange(sq)[:, None]
    k = np.arange(sk)[None, :]
    return k <= q + off


def additive(keep, fill=FMIN):
    return np.where(keep, 0.0, fill).astype(np.float32)


# 1. causal with a query offset (prefill with a cache of 8 keys), batch 1.
attention("causal_offset", 1, 2, 5, 13, 16, [const("m", additive(causal(5, 13, 8))[None, None])], "m", [], {})

# 2. sliding window of 4 (causal) as a bool Where.
qi, ki = np.arange(20)[:, None], np.arange(20)[None, :]
attention("window", 2, 2, 20, 20, 16, [const("m", (ki <= qi) & (qi - ki < 4))], "m", [], {}, mode="where")

# 3. chunked attention: causal inside chunks of 8.
qi, ki = np.arange(19)[:, None], np.arange(19)[None, :]
attention("chunked", 1, 2, 19, 19, 16,
          [const("m", additive((ki <= qi) & (qi // 8 == ki // 8), -np.inf)[None, None])], "m", [], {})

# 4. a finite fill that is not -inf-like (-1e4): an expression, exact.
attention("fill_1e4", 1, 2, 9, 9, 16, [const("m", additive(causal(9, 9), -1e4))], "m", [], {})

# 5. run-time bool padding And causal (HF eager): key mask operand.
S = 300
pad = np.ones((2, S), bool)
pad[1, :200] = False  # left padding: keys 0..199 of batch 1
attention("pad_runtime", 2, 2, S, S, 16, [
    const("shape4", np.array([2, 1, 1, S], np.int64)),
    h.make_node("Reshape", ["attention_mask", "shape4"], ["pad4"], name="pad_reshape"),
    const("causal", causal(S, S)[None, None]),
    h.make_node("And", ["causal", "pad4"], ["keep"], name="keep_and"),
    const("zero", np.array(0.0, np.float32)),
    const("fmin", np.array(FMIN, np.float32)),
    h.make_node("Where", ["keep", "zero", "fmin"], ["m"], name="mask_where0"),
], "m", [h.make_tensor_value_info("attention_mask", T.BOOL, [2, S])], {"attention_mask": pad})

# 6. BERT: (1 - Cast(mask, f32)) * finfo.min over a bool mask, no causal part.
pad = np.ones((2, 12), np.int64)
pad[0, 9:] = 0
hf = lambda cast_nodes, src: [
    const("shape4", np.array([2, 1, 1, 12], np.int64)),
    h.make_node("Reshape", ["attention_mask", "shape4"], ["pad4"], name="pad_reshape"),
] + cast_nodes + [
    const("one", np.array(1.0, np.float32)),
    h.make_node("Sub", ["one", src], ["inv"], name="inv_sub"),
    const("fmin", np.array(FMIN, np.float32)),
    h.make_node("Mul", ["inv", "fmin"], ["m"], name="inv_mul"),
]
attention("pad_hf_sub", 2, 2, 12, 12, 16,
          hf([h.make_node("Cast", ["pad4"], ["padb"], name="to_bool", to=T.BOOL),
              h.make_node("Cast", ["padb"], ["padf"], name="to_float", to=T.FLOAT)], "padf"), "m",
          [h.make_tensor_value_info("attention_mask", T.INT64, [2, 12])], {"attention_mask": pad})
attention("pad_hf_int", 2, 2, 12, 12, 16,
          hf([h.make_node("Cast", ["pad4"], ["padf"], name="to_float", to=T.FLOAT)], "padf"), "m",
          [h.make_tensor_value_info("attention_mask", T.INT64, [2, 12])], {"attention_mask": pad})

# 7. the padding folded into the constant: causal && padding, [2,1,S,S].
keep = np.broadcast_to(causal(12, 12), (2, 1, 12, 12)).copy()
keep[1, :, :, 9:] = False
attention("pad_folded", 2, 2, 12, 12, 16, [const("m", additive(keep))], "m", [], {})

keep3 = np.broadcast_to(causal(12, 12), (2, 1, 12, 12)).copy()
keep3[0, :, :, 10:] = False
keep3[1, :, :, 7:] = False
attention("pad_folded_all", 2, 2, 12, 12, 16, [const("m", additive(keep3))], "m", [], {})

# 8. fp16: masked_fill of Or(not causal, mask == 0) with finfo(f16).min.
pad = np.ones((2, 20), np.int64)
pad[1, 15:] = 0  # right padding: no row is fully masked
attention("f16_or_reasons", 2, 2, 20, 20, 16, [
    const("shape4", np.array([2, 1, 1, 20], np.int64)),
    h.make_node("Reshape", ["attention_mask", "shape4"], ["pad4"], name="pad_reshape"),
    const("zero_i", np.array(0, np.int64)),
    h.make_node("Equal", ["pad4", "zero_i"], ["is_pad"], name="is_pad"),
    const("causal", causal(20, 20)[None, None]),
    h.make_node("Not", ["causal"], ["future"], name="future"),
    h.make_node("Or", ["future", "is_pad"], ["masked"], name="masked_or"),
], "masked", [h.make_tensor_value_info("attention_mask", T.INT64, [2, 20])], {"attention_mask": pad},
          mode="fill", dt=np.float16)

# 9. combinations of a causal and a padding mask.
pad = np.ones((2, 12), np.int64)
pad[1, :4] = 0  # left padding: rows 0..3 of batch 1 fully masked
padf = [const("shape4", np.array([2, 1, 1, 12], np.int64)),
        h.make_node("Reshape", ["attention_mask", "shape4"], ["pad4"], name="pad_reshape"),
        h.make_node("Cast", ["pad4"], ["padb"], name="to_bool", to=T.BOOL),
        h.make_node("Cast", ["padb"], ["padf"], name="to_float", to=T.FLOAT),
        const("one", np.array(1.0, np.float32)),
        h.make_node("Sub", ["one", "padf"], ["inv"], name="inv_sub"),
        const("fmin", np.array(FMIN, np.float32)),
        h.make_node("Mul", ["inv", "fmin"], ["padm"], name="inv_mul"),
        const("zero", np.array(0.0, np.float32))]
mi = [h.make_tensor_value_info("attention_mask", T.INT64, [2, 12])]
attention("hf_legacy", 2, 2, 12, 12, 16, padf + [
    const("future", ~causal(12, 12)[None, None]),
    h.make_node("Where", ["future", "fmin", "padm"], ["m"], name="masked_fill")], "m", mi, {"attention_mask": pad})
attention("min_combo", 2, 2, 12, 12, 16, padf + [
    const("causal", causal(12, 12)[None, None]),
    h.make_node("Where", ["causal", "zero", "fmin"], ["cm"], name="causal_mask"),
    h.make_node("Min", ["cm", "padm"], ["m"], name="combine")], "m", mi, {"attention_mask": pad})
attention("add_finite", 2, 2, 12, 12, 16, padf + [
    const("causal", causal(12, 12)[None, None]),
    h.make_node("Where", ["causal", "zero", "fmin"], ["cm"], name="causal_mask"),
    h.make_node("Add", ["cm", "padm"], ["m"], name="combine")], "m", mi, {"attention_mask": pad})
padr = np.ones((2, 12), bool)
padr[1, 9:] = False  # right padding (-inf fills: no fully masked row)
attention("add_inf", 2, 2, 12, 12, 16, [
    const("shape4", np.array([2, 1, 1, 12], np.int64)),
    h.make_node("Reshape", ["attention_mask", "shape4"], ["pad4"], name="pad_reshape"),
    const("zero", np.array(0.0, np.float32)),
    const("ninf", np.array(-np.inf, np.float32)),
    const("causal", causal(12, 12)[None, None]),
    h.make_node("Where", ["causal", "zero", "ninf"], ["cm"], name="causal_mask"),
    h.make_node("Where", ["pad4", "zero", "ninf"], ["pm"], name="pad_mask"),
    h.make_node("Add", ["cm", "pm"], ["m"], name="combine")], "m",
    [h.make_tensor_value_info("attention_mask", T.BOOL, [2, 12])], {"attention_mask": padr})

# 10. ALiBi in BLOOM's per-key form, exact f32 products; one ulp off: a bias.
slopes = np.array([2.0 ** -1, 2.0 ** -2.5], np.float32)
al = (slopes[:, None, None] * np.arange(16, dtype=np.float32)[None, None, :]).astype(np.float32)
al = np.where(causal(16, 16)[None], np.broadcast_to(al, (2, 16, 16)), -np.inf).astype(np.float32)
attention("alibi_key", 1, 2, 16, 16, 16, [const("m", al[None])], "m", [], {})
al2 = al.copy()
al2[1, 9, 5] = np.nextafter(al2[1, 9, 5], np.float32(1))
attention("near_alibi", 1, 2, 16, 16, 16, [const("m", al2[None])], "m", [], {})

# 11. near misses, one element off: stay bias inputs.
near = causal(12, 12)
near[5, 7] = True
attention("near_causal", 1, 2, 12, 12, 16, [const("m", additive(near)[None, None])], "m", [], {})
keep2 = keep.copy()
keep2[1, 0, 11, 3] = False
attention("near_folded", 2, 2, 12, 12, 16, [const("m", additive(keep2))], "m", [], {})

# 12. positions too large to fold: the mask is translated op by op from the
# aranges (MaskTerms::affineIndexTerm), the padding becomes the key mask.
SQ, SK, PAST = 2100, 2300, 200
padb = np.ones((2, SK), bool)
padb[1, :700] = False
attention("arange_big", 2, 1, SQ, SK, 16, [
    const("r0", np.array(PAST, np.int64)), const("r1", np.array(SK, np.int64)),
    const("c0", np.array(0, np.int64)), const("one", np.array(1, np.int64)),
    h.make_node("Range", ["r0", "r1", "one"], ["qpos"], name="qpos"),
    h.make_node("Range", ["c0", "r1", "one"], ["kpos"], name="kpos"),
    const("ax1", np.array([1], np.int64)), const("ax0", np.array([0], np.int64)),
    h.make_node("Unsqueeze", ["qpos", "ax1"], ["rows"], name="rows"),
    h.make_node("Unsqueeze", ["kpos", "ax0"], ["cols"], name="cols"),
    h.make_node("LessOrEqual", ["cols", "rows"], ["causal"], name="causal"),
    h.make_node("Sub", ["rows", "cols"], ["dist"], name="dist"),
    const("w", np.array(1024, np.int64)),
    h.make_node("Less", ["dist", "w"], ["inwin"], name="inwin"),
    h.make_node("And", ["causal", "inwin"], ["local"], name="local"),
    const("shape4", np.array([2, 1, 1, SK], np.int64)),
    h.make_node("Reshape", ["attention_mask", "shape4"], ["pad4"], name="pad_reshape"),
    h.make_node("And", ["local", "pad4"], ["keep"], name="keep_and"),
    const("zero", np.array(0.0, np.float32)),
    const("fmin", np.array(FMIN, np.float32)),
    h.make_node("Where", ["keep", "zero", "fmin"], ["m"], name="mask_where0"),
], "m", [h.make_tensor_value_info("attention_mask", T.BOOL, [2, SK])], {"attention_mask": padb})

# 13. chunked attention from positions, too large to fold: integer division
# by a literal translates (truncation toward zero, as ONNX defines it).
S2 = 2100
attention("chunked_big", 1, 1, S2, S2, 16, [
    const("z0", np.array(0, np.int64)), const("s2", np.array(S2, np.int64)), const("one", np.array(1, np.int64)),
    h.make_node("Range", ["z0", "s2", "one"], ["pos"], name="pos"),
    const("ax1", np.array([1], np.int64)), const("ax0", np.array([0], np.int64)),
    h.make_node("Unsqueeze", ["pos", "ax1"], ["rows"], name="rows"),
    h.make_node("Unsqueeze", ["pos", "ax0"], ["cols"], name="cols"),
    const("chunk", np.array(512, np.int64)),
    h.make_node("Div", ["rows", "chunk"], ["rchunk"], name="rchunk"),
    h.make_node("Div", ["cols", "chunk"], ["cchunk"], name="cchunk"),
    h.make_node("Equal", ["rchunk", "cchunk"], ["same"], name="same"),
    h.make_node("LessOrEqual", ["cols", "rows"], ["causal"], name="causal"),
    h.make_node("And", ["same", "causal"], ["keep"], name="keep"),
    const("zero", np.array(0.0, np.float32)), const("ninf", np.array(-np.inf, np.float32)),
    h.make_node("Where", ["keep", "zero", "ninf"], ["m"], name="mask_where0"),
], "m", [], {})
