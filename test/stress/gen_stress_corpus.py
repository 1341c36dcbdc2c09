#!/usr/bin/env python3
"""Writes the fusion/lowering stress corpus: small ONNX models in the shapes
that fusion once accepted and lowering then refused (issue 8):

  ln_channels_last NCHW -> Transpose -> LayerNormalization -> Transpose back
  convnext_block   LayerNormalization on channels-last reached through a
                   Transpose (ConvNeXt / SVTR style), MLP, Transpose back
  svtr_mixer       [B,C,H,W] -> flatten + Transpose -> LayerNormalization ->
                   attention-free token mixing, reductions over both layouts
  decoder_mask     decoder mask from a [B,Sk] padding vector and a causal
                   pattern (broadcast And / Where), added to scores, Softmax
  mask_bias_output the same mask as a graph output and a Softmax input
  computed_slice   Slice / Split whose sizes come from Shape (GLU halves)
  reduce_layouts   ReduceMean / ReduceMax over leading, middle and transposed
                   axes with keepdims and broadcasting back

Usage: gen_stress_corpus.py OUTDIR   (writes OUTDIR/<name>/model.onnx and
OUTDIR/manifest.json with the input shapes). Needs the `onnx` pip package.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 18
rng = np.random.default_rng(8)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def weight(name, *shape):
    return const(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))


def save(out, name, nodes, inputs, outputs, inits, shapes):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    os.makedirs(os.path.join(out, name), exist_ok=True)
    onnx.save(m, os.path.join(out, name, "model.onnx"))
    return {name: shapes}


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def convnext_block(out):
    B, C, H, W = 2, 16, 8, 8
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "dw_w", "dw_b"], ["dw"], group=C, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Transpose", ["dw"], ["nhwc"], perm=[0, 2, 3, 1]),
        n("LayerNormalization", ["nhwc", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-6),
        n("MatMul", ["ln", "w1"], ["h1"]),
        n("Add", ["h1", "b1"], ["h1b"]),
        n("Div", ["h1b", "sqrt2"], ["hd"]),
        n("Erf", ["hd"], ["he"]),
        n("Add", ["he", "one"], ["he1"]),
        n("Mul", ["h1b", "he1"], ["hm"]),
        n("Mul", ["hm", "half"], ["gelu"]),
        n("MatMul", ["gelu", "w2"], ["h2"]),
        n("Add", ["h2", "b2"], ["h2b"]),
        n("Mul", ["h2b", "gamma"], ["scaled"]),
        n("Transpose", ["scaled"], ["nchw"], perm=[0, 3, 1, 2]),
        n("Add", ["x", "nchw"], ["y"]),
    ]
    inits = [weight("dw_w", C, 1, 3, 3), weight("dw_b", C), weight("ln_s", C), weight("ln_b", C),
             weight("w1", C, 4 * C), weight("b1", 4 * C), weight("w2", 4 * C, C), weight("b2", C),
             weight("gamma", C), const("sqrt2", np.float32(np.sqrt(2))),
             const("one", np.float32(1)), const("half", np.float32(0.5))]
    return save(out, "convnext_block", nodes, [vi("x", TensorProto.FLOAT, [B, C, H, W])],
                [vi("y", TensorProto.FLOAT, [B, C, H, W])], inits, {"x": [B, C, H, W]})


def ln_channels_last(out):
    """SVTR / ConvNeXt: NCHW -> Transpose -> LayerNormalization over C ->
    Transpose back -> residual Add (fusion once merged the back-Transpose
    into the LayerNormalization kernel, whose rows then no longer matched)."""
    B, C, H, W = 2, 16, 4, 6
    n = helper.make_node
    nodes = [
        n("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
        n("LayerNormalization", ["t", "s", "b"], ["ln"], axis=-1),
        n("Transpose", ["ln"], ["back"], perm=[0, 3, 1, 2]),
        n("Add", ["x", "back"], ["y"]),
    ]
    return save(out, "ln_channels_last", nodes, [vi("x", TensorProto.FLOAT, [B, C, H, W])],
                [vi("y", TensorProto.FLOAT, [B, C, H, W])], [weight("s", C), weight("b", C)],
                {"x": [B, C, H, W]})


def svtr_mixer(out):
    B, C, H, W = 2, 32, 2, 12
    n = helper.make_node
    nodes = [
        n("Reshape", ["x", "flat_shape"], ["flat"]),            # [B,C,H*W]
        n("Transpose", ["flat"], ["tok"], perm=[0, 2, 1]),      # [B,HW,C]
        n("LayerNormalization", ["tok", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-6),
        n("MatMul", ["ln", "w1"], ["h"]),
        n("Sigmoid", ["h"], ["sg"]),
        n("Mul", ["h", "sg"], ["swish"]),
        n("Add", ["tok", "swish"], ["res"]),
        n("Transpose", ["res"], ["back"], perm=[0, 2, 1]),      # [B,C,HW]
        n("LayerNormalization", ["back", "ln2_s", "ln2_b"], ["ln2"], axis=-1, epsilon=1e-5),
        n("ReduceMean", ["ln2", "axes_c"], ["pooled"], keepdims=1),  # over C: [B,1,HW]
        n("Sub", ["ln2", "pooled"], ["y"]),
    ]
    inits = [const("flat_shape", np.array([B, C, H * W], np.int64)), weight("ln_s", C),
             weight("ln_b", C), weight("w1", C, C), weight("ln2_s", H * W), weight("ln2_b", H * W),
             const("axes_c", np.array([1], np.int64))]
    return save(out, "svtr_mixer", nodes, [vi("x", TensorProto.FLOAT, [B, C, H, W])],
                [vi("y", TensorProto.FLOAT, [B, C, H * W])], inits, {"x": [B, C, H, W]})


def decoder_mask(out):
    B, NH, Sq, Sk, D = 2, 2, 16, 24, 8
    n = helper.make_node
    nodes = [
        # padding vector [B,Sk] -> [B,1,1,Sk]
        n("Cast", ["pad"], ["padb"], to=TensorProto.BOOL),
        n("Unsqueeze", ["padb", "ax12"], ["pad4"]),
        # causal pattern [Sq,Sk] from Range: k <= q + (Sk - Sq)
        n("Range", ["zero", "sq", "one"], ["qi"]),
        n("Range", ["zero", "sk", "one"], ["ki"]),
        n("Unsqueeze", ["qi", "ax1"], ["q2"]),
        n("Add", ["q2", "offset"], ["q2o"]),
        n("LessOrEqual", ["ki", "q2o"], ["causal"]),            # [Sq,Sk]
        n("Unsqueeze", ["causal", "ax01"], ["causal4"]),        # [1,1,Sq,Sk]
        n("And", ["pad4", "causal4"], ["mask"]),                # [B,1,Sq,Sk]
        n("Where", ["mask", "fzero", "neg"], ["bias"]),         # [B,1,Sq,Sk]
        n("MatMul", ["q", "kt"], ["s"]),                        # [B,NH,Sq,Sk]
        n("Mul", ["s", "scale"], ["ss"]),
        n("Add", ["ss", "bias"], ["sb"]),
        n("Softmax", ["sb"], ["p"], axis=-1),
        n("MatMul", ["p", "v"], ["o"]),
        n("Identity", ["bias"], ["bias_out"]),
    ]
    inits = [const("ax12", np.array([1, 2], np.int64)), const("ax1", np.array([1], np.int64)),
             const("ax01", np.array([0, 1], np.int64)), const("zero", np.int64(0)),
             const("one", np.int64(1)), const("sq", np.int64(Sq)), const("sk", np.int64(Sk)),
             const("offset", np.int64(Sk - Sq)), const("fzero", np.float32(0)),
             const("neg", np.float32(-1e9)), const("scale", np.float32(D ** -0.5))]
    ins = [vi("q", TensorProto.FLOAT, [B, NH, Sq, D]), vi("kt", TensorProto.FLOAT, [B, NH, D, Sk]),
           vi("v", TensorProto.FLOAT, [B, NH, Sk, D]), vi("pad", TensorProto.INT64, [B, Sk])]
    outs = [vi("o", TensorProto.FLOAT, [B, NH, Sq, D]), vi("bias_out", TensorProto.FLOAT, [B, 1, Sq, Sk])]
    return save(out, "decoder_mask", nodes, ins, outs, inits,
                {"q": [B, NH, Sq, D], "kt": [B, NH, D, Sk], "v": [B, NH, Sk, D], "pad": [B, Sk]})


def mask_bias_output(out):
    """The decoder's additive mask [B,1,Sq,Sk] (padding And causal, Where) is
    both a graph output and added to the [B,H,Sq,Sk] scores before Softmax:
    fusion once put the Where into the Softmax kernel, whose domain the
    smaller mask does not fit."""
    B, NH, Sq, Sk = 2, 2, 16, 24
    n = helper.make_node
    nodes = [
        n("Cast", ["pad"], ["padb"], to=TensorProto.BOOL),
        n("Unsqueeze", ["padb", "ax12"], ["pad4"]),
        n("And", ["pad4", "causal"], ["mask"]),
        n("Where", ["mask", "fzero", "neg"], ["bias"]),
        n("Add", ["s", "bias"], ["sb"]),
        n("Softmax", ["sb"], ["p"], axis=-1),
    ]
    causal = np.tril(np.ones((Sq, Sk), bool), k=Sk - Sq).reshape(1, 1, Sq, Sk)
    inits = [const("ax12", np.array([1, 2], np.int64)), const("causal", causal),
             const("fzero", np.float32(0)), const("neg", np.float32(-1e9))]
    ins = [vi("s", TensorProto.FLOAT, [B, NH, Sq, Sk]), vi("pad", TensorProto.INT64, [B, Sk])]
    outs = [vi("p", TensorProto.FLOAT, [B, NH, Sq, Sk]), vi("bias", TensorProto.FLOAT, [B, 1, Sq, Sk])]
    return save(out, "mask_bias_output", nodes, ins, outs, inits,
                {"s": [B, NH, Sq, Sk], "pad": [B, Sk]})


def computed_slice(out):
    B, S, C = 2, 24, 64
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shp"]),
        n("Gather", ["shp", "idx2"], ["c"], axis=0),            # [1]
        n("Div", ["c", "two"], ["half"]),
        n("Slice", ["x", "zero1", "half", "ax2"], ["a"]),
        n("Slice", ["x", "half", "c", "ax2"], ["b"]),
        n("Sigmoid", ["b"], ["sb"]),
        n("Mul", ["a", "sb"], ["glu"]),
        n("Shape", ["glu"], ["gshp"]),
        n("Gather", ["gshp", "idx2"], ["gc"], axis=0),
        n("Div", ["gc", "four"], ["q"]),
        n("Sub", ["gc", "q"], ["rest"]),
        n("Concat", ["q", "rest"], ["sizes"], axis=0),
        n("Split", ["glu", "sizes"], ["s0", "s1"], axis=2),
        n("ReduceSum", ["s1", "ax2"], ["r"], keepdims=1),
        n("Mul", ["s0", "r"], ["y"]),
    ]
    inits = [const("idx2", np.array([2], np.int64)), const("two", np.array([2], np.int64)),
             const("four", np.array([4], np.int64)), const("zero1", np.array([0], np.int64)),
             const("ax2", np.array([2], np.int64))]
    return save(out, "computed_slice", nodes, [vi("x", TensorProto.FLOAT, [B, S, C])],
                [vi("y", TensorProto.FLOAT, [B, S, C // 8])], inits, {"x": [B, S, C]})


def reduce_layouts(out):
    B, C, H, W = 2, 8, 6, 10
    n = helper.make_node
    nodes = [
        n("ReduceMean", ["x", "ax1"], ["mc"], keepdims=1),       # over C: [B,1,H,W]
        n("Sub", ["x", "mc"], ["xc"]),
        n("Mul", ["xc", "xc"], ["sq"]),
        n("ReduceMean", ["sq", "ax1"], ["var"], keepdims=1),
        n("Add", ["var", "eps"], ["ve"]),
        n("Sqrt", ["ve"], ["sd"]),
        n("Div", ["xc", "sd"], ["norm"]),                        # channels-first LayerNorm
        n("Transpose", ["norm"], ["t"], perm=[0, 3, 2, 1]),      # [B,W,H,C]
        n("ReduceMax", ["t", "ax2"], ["mx"], keepdims=0),        # [B,W,C]
        n("Softmax", ["mx"], ["sm"], axis=1),                    # over W (middle axis)
        n("ReduceSum", ["sm", "ax0"], ["y"], keepdims=0),        # leading axis: [W,C]
    ]
    inits = [const("ax1", np.array([1], np.int64)), const("ax2", np.array([2], np.int64)),
             const("ax0", np.array([0], np.int64)), const("eps", np.float32(1e-5))]
    return save(out, "reduce_layouts", nodes, [vi("x", TensorProto.FLOAT, [B, C, H, W])],
                [vi("y", TensorProto.FLOAT, [W, C])], inits, {"x": [B, C, H, W]})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_stress_corpus.py OUTDIR")
    out = sys.argv[1]
    manifest = {}
    for gen in (convnext_block, ln_channels_last, svtr_mixer, decoder_mask, mask_bias_output, computed_slice, reduce_layouts):
        manifest.update(gen(out))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
