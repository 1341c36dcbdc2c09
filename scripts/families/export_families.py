#!/usr/bin/env python3
"""Export small but structurally faithful models of real-world ONNX families
(project issue 11, "Real-world ONNX coverage").

Each family is written as a real exporter writes it (torch.onnx.export with
the TorchScript exporter, dynamo=False; onnxruntime.quantization for the int8
one; an onnx rewrite for the paddle-style -1 dims), with random weights from
a fixed seed, to

  OUTDIR/<family>/model.onnx
  OUTDIR/<family>/test_data_set_0/input_<i>.pb, output_<i>.pb
      serialized onnx TensorProtos named by the graph's input/output names
      (the layout `fusec-run --data` reads)
  OUTDIR/<family>/shapes.txt
      one `NAME=DxD...` line per graph input whose declared shape is not
      fully static (dim_param, missing dim or -1): the --shape flags that
      scripts/families/check_families.sh passes to fusec
  OUTDIR/<family>/info.txt
      what the model is, its ops, and how far onnxruntime CPU is from the
      expected outputs

Expected outputs are the torch model's, in fp32; for the quantised model
(crnn_int8) they are onnxruntime CPU's on the quantised model, since ORT
defines the semantics of its dynamic quantisation.

Families: yolov8 dbnet mobilenetv3 pplcnet (timm) mtcnn (O-Net) mtcnn_pnet
silero_vad silero_vad_core (its 16 kHz branch, no If) crnn_int8
crnn_int8_nolstm (LSTMs left fp32) bloom opt deberta_v2 paddle_negdim. Each
is exported in its own try/except and prints one line (exported / failed:
reason); the traceback of a failure goes to OUTDIR/<family>/FAILED.

Usage: python3 scripts/families/export_families.py [--out DIR] [--only a,b]
           [--opset N] [--static] [-v]
  --static exports every model without dynamic_axes (as a fixed-shape
  deployment export would), to tell dynamic-shape gaps from the rest.
"""
import argparse
import collections
import os
import shutil
import sys
import time
import traceback
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

SEED = 1234
STATIC = False  # --static: no dynamic_axes anywhere


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# Writing a family folder


def graph_inputs(model):
    """Graph inputs that are not initializers (what a caller feeds)."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def is_static(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return False
    for d in t.shape.dim:
        if not d.HasField("dim_value") or d.dim_value < 0:
            return False
    return True


def op_histogram(model):
    c = collections.Counter()

    def walk(g):
        for n in g.node:
            c[(n.domain + "." if n.domain and n.domain != "ai.onnx" else "") + n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        walk(sg)

    walk(model.graph)
    return c


def run_ort(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    # One intra-op thread: ORT's quantised LSTM (DynamicQuantizeLSTM)
    # quantises each thread's chunk of batch rows with its own range, so its
    # result depends on the thread count; with one thread it is the
    # whole-batch quantisation that fusec reproduces (docs/CONTRIB_OPS.md).
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def write_family(out_dir, family, model_path, feeds, expected, note, opset):
    """feeds: name -> ndarray for every graph input (in any order);
    expected: list of ndarrays in graph output order, or None to take
    onnxruntime's outputs as the expected ones."""
    model = onnx.load(model_path)
    ins = graph_inputs(model)
    outs = list(model.graph.output)
    missing = [i.name for i in ins if i.name not in feeds]
    if missing:
        raise RuntimeError("no data for graph inputs %s (have %s)" % (missing, list(feeds)))
    unused = [n for n in feeds if n not in {i.name for i in ins}]
    feeds = {i.name: feeds[i.name] for i in ins}
    ort_out, ort_err = None, None
    try:
        ort_out = run_ort(model_path, feeds)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        ort_err = str(e).splitlines()[0][:200]
    if expected is None:
        if ort_out is None:
            raise RuntimeError("onnxruntime failed and it defines the expected outputs: " + ort_err)
        expected = [ort_out[o.name] for o in outs]
    if len(expected) != len(outs):
        raise RuntimeError("%d expected outputs for %d graph outputs" % (len(expected), len(outs)))
    diffs = []
    for o, e in zip(outs, expected):
        if ort_out is not None and o.name in ort_out:
            a, b = np.asarray(ort_out[o.name]), np.asarray(e)
            if a.shape != b.shape:
                diffs.append("%s shape ort %s vs expected %s" % (o.name, a.shape, b.shape))
            elif a.dtype.kind in "fc":
                diffs.append("%s %.2e" % (o.name, float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0))
            else:
                diffs.append("%s %s" % (o.name, "exact" if np.array_equal(a, b) else "DIFFERS"))
    data = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for i, vi in enumerate(ins):
        t = numpy_helper.from_array(np.ascontiguousarray(feeds[vi.name]), vi.name)
        with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
            f.write(t.SerializeToString())
    for i, (vi, e) in enumerate(zip(outs, expected)):
        t = numpy_helper.from_array(np.ascontiguousarray(e), vi.name)
        with open(os.path.join(data, "output_%d.pb" % i), "wb") as f:
            f.write(t.SerializeToString())
    with open(os.path.join(out_dir, "shapes.txt"), "w") as f:
        for vi in ins:
            if not is_static(vi) and feeds[vi.name].ndim > 0:
                f.write("%s=%s\n" % (vi.name, "x".join(str(d) for d in feeds[vi.name].shape)))
    hist = op_histogram(model)
    with open(os.path.join(out_dir, "info.txt"), "w") as f:
        f.write("family: %s\n%s\n" % (family, note))
        f.write("opset: %s (requested %d)\n" % (
            ", ".join("%s:%d" % (o.domain or "ai.onnx", o.version) for o in model.opset_import), opset))
        for vi in ins:
            f.write("input %s %s %s\n" % (vi.name, feeds[vi.name].dtype, list(feeds[vi.name].shape)))
        for vi, e in zip(outs, expected):
            f.write("output %s %s %s\n" % (vi.name, np.asarray(e).dtype, list(np.asarray(e).shape)))
        if unused:
            f.write("inputs the exporter dropped: %s\n" % ", ".join(unused))
        f.write("ops: %s\n" % ", ".join("%s x%d" % kv for kv in sorted(hist.items())))
        f.write("onnxruntime CPU vs expected (max abs): %s\n" % (
            "; ".join(diffs) if ort_out is not None else "ORT failed: %s" % ort_err))
    ort_note = ("ort max|d| " + "; ".join(diffs)) if ort_out is not None else ("ORT failed: " + ort_err)
    return "%d nodes, %d op types; %s" % (sum(hist.values()), len(hist), ort_note)


def to_numpy(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def flatten_outputs(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    res = []
    for o in out:
        res += flatten_outputs(o)
    return res


def torch_export(model, feeds, path, opset, output_names, dynamic_axes=None):
    """feeds: ordered dict name -> torch tensor. Returns the torch outputs
    (numpy, in output order)."""
    import torch
    names = list(feeds)
    args = tuple(feeds[n] for n in names)
    with torch.no_grad():
        expected = [to_numpy(o) for o in flatten_outputs(model(*args))]
    kwargs = dict(input_names=names, output_names=output_names, opset_version=opset,
                  do_constant_folding=True, dynamic_axes=None if STATIC else dynamic_axes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            try:
                torch.onnx.export(model, args, path, dynamo=False, **kwargs)
            except TypeError as e:  # a torch without the dynamo argument
                if "dynamo" not in str(e):
                    raise
                torch.onnx.export(model, args, path, **kwargs)
    onnx.checker.check_model(onnx.load(path))
    return expected


def seed_all():
    import torch
    torch.manual_seed(SEED)
    np.random.seed(SEED)


def randomize_bn(model):
    """Random running statistics and affine parameters, so that folded
    BatchNorms are not identities."""
    import torch
    g = torch.Generator().manual_seed(SEED + 1)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            if m.affine:
                m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
    return model


# ---------------------------------------------------------------------------
# yolov8: Conv-BN-SiLU, C2f (Split/Concat), SPPF (MaxPool), nearest Upsample,
# decoupled Detect head with DFL (softmax over 16 bins) over three scales.


def build_yolov8():
    import torch
    from torch import nn

    class Conv(nn.Module):
        def __init__(self, c1, c2, k=1, s=1):
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut=True):
            super().__init__()
            self.cv1 = Conv(c, c, 3)
            self.cv2 = Conv(c, c, 3)
            self.add = shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C2f(nn.Module):
        def __init__(self, c1, c2, n=1, shortcut=False):
            super().__init__()
            self.c = c2 // 2
            self.cv1 = Conv(c1, 2 * self.c, 1)
            self.cv2 = Conv((2 + n) * self.c, c2, 1)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

        def forward(self, x):
            y = list(self.cv1(x).split((self.c, self.c), 1))  # Split, as ultralytics' forward_split
            y.extend(m(y[-1]) for m in self.m)
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, c1, c2, k=5):
            super().__init__()
            c_ = c1 // 2
            self.cv1 = Conv(c1, c_, 1)
            self.cv2 = Conv(c_ * 4, c2, 1)
            self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.m(x)
            y2 = self.m(y1)
            return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))

    class DFL(nn.Module):
        def __init__(self, c1=16):
            super().__init__()
            self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
            self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)
            self.c1 = c1

        def forward(self, x):
            b, _, a = x.shape
            return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)

    def make_anchors(feats, strides, offset=0.5):
        anchor_points, stride_tensor = [], []
        for f, s in zip(feats, strides):
            _, _, h, w = f.shape
            sx = torch.arange(end=w, dtype=f.dtype) + offset
            sy = torch.arange(end=h, dtype=f.dtype) + offset
            sy, sx = torch.meshgrid(sy, sx, indexing="ij")
            anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
            stride_tensor.append(torch.full((h * w, 1), s, dtype=f.dtype))
        return torch.cat(anchor_points), torch.cat(stride_tensor)

    class Detect(nn.Module):
        def __init__(self, nc, ch, strides):
            super().__init__()
            self.nc, self.reg_max = nc, 16
            self.no = nc + self.reg_max * 4
            self.strides = strides
            c2, c3 = max(16, ch[0] // 4, self.reg_max * 4), max(ch[0], min(nc, 100))
            self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3),
                                                   nn.Conv2d(c2, 4 * self.reg_max, 1)) for x in ch)
            self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3),
                                                   nn.Conv2d(c3, nc, 1)) for x in ch)
            self.dfl = DFL(self.reg_max)

        def forward(self, xs):
            xs = [torch.cat((self.cv2[i](x), self.cv3[i](x)), 1) for i, x in enumerate(xs)]
            b = xs[0].shape[0]
            anchors, strides = (t.transpose(0, 1) for t in make_anchors(xs, self.strides))
            x_cat = torch.cat([xi.view(b, self.no, -1) for xi in xs], 2)
            box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
            distance = self.dfl(box)
            lt, rb = distance.chunk(2, 1)
            x1y1 = anchors.unsqueeze(0) - lt
            x2y2 = anchors.unsqueeze(0) + rb
            dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
            return torch.cat((dbox, cls.sigmoid()), 1)

    class YOLOv8(nn.Module):
        # yolov8n layout at width 0.125 (channels 8..128), depth 1, nc 8.
        def __init__(self, w=(8, 16, 32, 64, 128), nc=8):
            super().__init__()
            self.b0 = Conv(3, w[0], 3, 2)
            self.b1 = Conv(w[0], w[1], 3, 2)
            self.b2 = C2f(w[1], w[1], 1, True)
            self.b3 = Conv(w[1], w[2], 3, 2)
            self.b4 = C2f(w[2], w[2], 2, True)
            self.b5 = Conv(w[2], w[3], 3, 2)
            self.b6 = C2f(w[3], w[3], 2, True)
            self.b7 = Conv(w[3], w[4], 3, 2)
            self.b8 = C2f(w[4], w[4], 1, True)
            self.b9 = SPPF(w[4], w[4], 5)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.h12 = C2f(w[4] + w[3], w[3], 1)
            self.h15 = C2f(w[3] + w[2], w[2], 1)
            self.h16 = Conv(w[2], w[2], 3, 2)
            self.h18 = C2f(w[2] + w[3], w[3], 1)
            self.h19 = Conv(w[3], w[3], 3, 2)
            self.h21 = C2f(w[3] + w[4], w[4], 1)
            self.detect = Detect(nc, (w[2], w[3], w[4]), (8.0, 16.0, 32.0))

        def forward(self, x):
            x = self.b2(self.b1(self.b0(x)))
            p3 = self.b4(self.b3(x))
            p4 = self.b6(self.b5(p3))
            p5 = self.b9(self.b8(self.b7(p4)))
            h = self.h12(torch.cat((self.up(p5), p4), 1))
            o3 = self.h15(torch.cat((self.up(h), p3), 1))
            o4 = self.h18(torch.cat((self.h16(o3), h), 1))
            o5 = self.h21(torch.cat((self.h19(o4), p5), 1))
            return self.detect([o3, o4, o5])

    seed_all()
    m = randomize_bn(YOLOv8()).eval()
    x = torch.rand(1, 3, 160, 160)
    return m, collections.OrderedDict(images=x)


def export_yolov8(d, opset):
    m, feeds = build_yolov8()
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["output0"])
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "YOLOv8n-style detector, width 1/8, nc 8, 160x160 (output 1x(4+8)x525)"


# ---------------------------------------------------------------------------
# dbnet: ResNet-ish backbone, FPN (F.interpolate / nn.Upsample nearest),
# head with ConvTranspose2d, Sigmoid probability / threshold maps and the
# differentiable binarisation.


def build_dbnet():
    import torch
    import torch.nn.functional as F
    from torch import nn

    def cbr(c1, c2, k=3, s=1):
        return nn.Sequential(nn.Conv2d(c1, c2, k, s, k // 2, bias=False), nn.BatchNorm2d(c2),
                             nn.ReLU(inplace=True))

    class BasicBlock(nn.Module):
        def __init__(self, c1, c2, s):
            super().__init__()
            self.c1 = cbr(c1, c2, 3, s)
            self.c2 = nn.Sequential(nn.Conv2d(c2, c2, 3, 1, 1, bias=False), nn.BatchNorm2d(c2))
            self.down = None
            if s != 1 or c1 != c2:
                self.down = nn.Sequential(nn.Conv2d(c1, c2, 1, s, bias=False), nn.BatchNorm2d(c2))

        def forward(self, x):
            r = x if self.down is None else self.down(x)
            return F.relu(self.c2(self.c1(x)) + r)

    class Head(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = cbr(c, c // 4, 3)
            self.up1 = nn.Sequential(nn.ConvTranspose2d(c // 4, c // 4, 2, 2), nn.BatchNorm2d(c // 4),
                                     nn.ReLU(inplace=True))
            self.up2 = nn.ConvTranspose2d(c // 4, 1, 2, 2)

        def forward(self, x):
            return torch.sigmoid(self.up2(self.up1(self.conv(x))))

    class DBNet(nn.Module):
        def __init__(self, w=(16, 32, 64, 128), inner=64, k=50.0):
            super().__init__()
            self.stem = nn.Sequential(cbr(3, w[0], 3, 2), cbr(w[0], w[0], 3, 1),
                                      nn.MaxPool2d(3, 2, 1))
            self.s2 = nn.Sequential(BasicBlock(w[0], w[0], 1), BasicBlock(w[0], w[0], 1))
            self.s3 = nn.Sequential(BasicBlock(w[0], w[1], 2), BasicBlock(w[1], w[1], 1))
            self.s4 = nn.Sequential(BasicBlock(w[1], w[2], 2), BasicBlock(w[2], w[2], 1))
            self.s5 = nn.Sequential(BasicBlock(w[2], w[3], 2), BasicBlock(w[3], w[3], 1))
            self.lat = nn.ModuleList(nn.Conv2d(c, inner, 1, bias=False) for c in w)
            self.smooth = nn.ModuleList(nn.Conv2d(inner, inner // 4, 3, 1, 1, bias=False) for _ in w)
            self.ups = nn.ModuleList([nn.Identity(), nn.Upsample(scale_factor=2, mode="nearest"),
                                      nn.Upsample(scale_factor=4, mode="nearest"),
                                      nn.Upsample(scale_factor=8, mode="nearest")])
            self.prob = Head(inner)
            self.thresh = Head(inner)
            self.k = k

        def forward(self, x):
            c2 = self.s2(self.stem(x))
            c3 = self.s3(c2)
            c4 = self.s4(c3)
            c5 = self.s5(c4)
            in5, in4, in3, in2 = (l(c) for l, c in zip(self.lat[::-1], (c5, c4, c3, c2)))
            out4 = in4 + F.interpolate(in5, scale_factor=2, mode="nearest")
            out3 = in3 + F.interpolate(out4, scale_factor=2, mode="nearest")
            out2 = in2 + F.interpolate(out3, scale_factor=2, mode="nearest")
            ps = [s(o) for s, o in zip(self.smooth, (out2, out3, out4, in5))]
            fuse = torch.cat([u(p) for u, p in zip(self.ups, ps)][::-1], 1)
            p = self.prob(fuse)
            t = self.thresh(fuse)
            b = torch.reciprocal(1 + torch.exp(-self.k * (p - t)))
            return torch.cat((p, t, b), 1)

    seed_all()
    m = randomize_bn(DBNet()).eval()
    x = torch.rand(1, 3, 128, 128)
    return m, collections.OrderedDict(x=x)


def export_dbnet(d, opset):
    m, feeds = build_dbnet()
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["maps"],
                       dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"},
                                     "maps": {0: "batch", 2: "height", 3: "width"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "DBNet text detector: ResNet-18-ish backbone (widths 16..128), FPN, ConvTranspose heads, 128x128, dynamic batch/H/W"


# ---------------------------------------------------------------------------
# mobilenetv3 / pplcnet


def export_mobilenetv3(d, opset):
    import torch
    import torchvision
    seed_all()
    m = randomize_bn(torchvision.models.mobilenet_v3_small(weights=None, num_classes=100)).eval()
    feeds = collections.OrderedDict(input=torch.rand(1, 3, 128, 128))
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["logits"],
                       dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "torchvision mobilenet_v3_small (weights=None, 100 classes), 128x128, dynamic batch"


def export_pplcnet(d, opset):
    import torch
    import timm
    seed_all()
    m = randomize_bn(timm.create_model("lcnet_050", pretrained=False, num_classes=100)).eval()
    feeds = collections.OrderedDict(input=torch.rand(1, 3, 128, 128))
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["logits"],
                       dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "timm lcnet_050 (PP-LCNet, pretrained=False, 100 classes), 128x128, dynamic batch"


# ---------------------------------------------------------------------------
# mtcnn: O-Net (fixed 48x48) and P-Net (fully convolutional, dynamic H/W),
# NHWC input permuted inside the model, PReLU, MaxPool ceil_mode.


def mtcnn_nets():
    import torch
    from torch import nn

    class PNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 10, 3)
            self.prelu1 = nn.PReLU(10)
            self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv2 = nn.Conv2d(10, 16, 3)
            self.prelu2 = nn.PReLU(16)
            self.conv3 = nn.Conv2d(16, 32, 3)
            self.prelu3 = nn.PReLU(32)
            self.conv4_1 = nn.Conv2d(32, 2, 1)
            self.conv4_2 = nn.Conv2d(32, 4, 1)

        def forward(self, x):
            x = x.permute(0, 3, 1, 2)  # NHWC -> NCHW
            x = self.prelu3(self.conv3(self.prelu2(self.conv2(self.pool1(self.prelu1(self.conv1(x)))))))
            prob = torch.softmax(self.conv4_1(x), dim=1)
            return prob, self.conv4_2(x)

    class ONet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 32, 3)
            self.prelu1 = nn.PReLU(32)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2 = nn.Conv2d(32, 64, 3)
            self.prelu2 = nn.PReLU(64)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3 = nn.Conv2d(64, 64, 3)
            self.prelu3 = nn.PReLU(64)
            self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv4 = nn.Conv2d(64, 128, 2)
            self.prelu4 = nn.PReLU(128)
            self.dense5 = nn.Linear(1152, 256)
            self.prelu5 = nn.PReLU(256)
            self.dense6_1 = nn.Linear(256, 2)
            self.dense6_2 = nn.Linear(256, 4)
            self.dense6_3 = nn.Linear(256, 10)

        def forward(self, x):
            x = x.permute(0, 3, 1, 2)  # NHWC -> NCHW
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.pool3(self.prelu3(self.conv3(x)))
            x = self.prelu4(self.conv4(x))
            x = x.permute(0, 3, 2, 1).contiguous()  # as facenet-pytorch
            x = self.prelu5(self.dense5(x.view(x.shape[0], -1)))
            return torch.softmax(self.dense6_1(x), dim=1), self.dense6_2(x), self.dense6_3(x)

    return PNet, ONet


def randomize_prelu(m):
    import torch
    g = torch.Generator().manual_seed(SEED + 2)
    for mod in m.modules():
        if isinstance(mod, torch.nn.PReLU):
            mod.weight.data.copy_(torch.rand(mod.weight.shape, generator=g) * 0.5)
    return m


def export_mtcnn(d, opset):
    import torch
    _, ONet = mtcnn_nets()
    seed_all()
    m = randomize_prelu(ONet()).eval()
    feeds = collections.OrderedDict(input=torch.rand(4, 48, 48, 3) * 2 - 1)
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["prob", "bbox", "landmarks"],
                       dynamic_axes={"input": {0: "batch"}, "prob": {0: "batch"},
                                     "bbox": {0: "batch"}, "landmarks": {0: "batch"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "MTCNN O-Net: NHWC 48x48 input permuted inside, PReLU, MaxPool ceil_mode, dynamic batch (4)"


def export_mtcnn_pnet(d, opset):
    import torch
    PNet, _ = mtcnn_nets()
    seed_all()
    m = randomize_prelu(PNet()).eval()
    feeds = collections.OrderedDict(input=torch.rand(1, 61, 83, 3) * 2 - 1)
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["prob", "bbox"],
                       dynamic_axes={"input": {0: "batch", 1: "height", 2: "width"},
                                     "prob": {0: "batch", 2: "h", 3: "w"},
                                     "bbox": {0: "batch", 2: "h", 3: "w"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "MTCNN P-Net: fully convolutional, NHWC input 61x83 (odd: ceil_mode pools a partial window), dynamic batch/H/W"


# ---------------------------------------------------------------------------
# silero_vad: STFT as a Conv1d over a reflect-padded window, conv encoder,
# LSTM, decoder; a scripted top module branches on the scalar sample rate
# (nested If: 16000 / 8000 / anything else).


def build_silero():
    import numpy as _np
    import torch
    import torch.nn.functional as F
    from torch import nn

    class STFT(nn.Module):
        def __init__(self, n_fft, hop):
            super().__init__()
            self.n_fft, self.hop = n_fft, hop
            bins = n_fft // 2 + 1
            n = _np.arange(n_fft)
            k = _np.arange(bins)[:, None]
            win = 0.5 - 0.5 * _np.cos(2 * _np.pi * n / n_fft)  # periodic Hann
            real = _np.cos(2 * _np.pi * k * n / n_fft) * win
            imag = -_np.sin(2 * _np.pi * k * n / n_fft) * win
            basis = _np.concatenate([real, imag], 0)[:, None, :].astype(_np.float32)
            self.register_buffer("forward_basis_buffer", torch.from_numpy(basis))

        def forward(self, x):
            x = F.pad(x.unsqueeze(1), (0, self.n_fft // 4), mode="reflect")
            f = F.conv1d(x, self.forward_basis_buffer, stride=self.hop)
            c = self.n_fft // 2 + 1
            re, im = f[:, :c], f[:, c:]
            return torch.sqrt(re * re + im * im)

    class Core(nn.Module):
        def __init__(self, n_fft, hop, decimate):
            super().__init__()
            self.decimate = decimate
            self.stft = STFT(n_fft, hop)
            c = n_fft // 2 + 1
            self.encoder = nn.Sequential(
                nn.Conv1d(c, 128, 3, 1, 1), nn.ReLU(),
                nn.Conv1d(128, 64, 3, 2, 1), nn.ReLU(),
                nn.Conv1d(64, 64, 3, 2, 1), nn.ReLU(),
                nn.Conv1d(64, 128, 3, 1, 1), nn.ReLU())
            self.rnn = nn.LSTM(128, 128, batch_first=True)
            self.decoder = nn.Sequential(nn.Dropout(0.1), nn.ReLU(), nn.Conv1d(128, 1, 1), nn.Sigmoid())

        def forward(self, x, state):
            if self.decimate > 1:
                x = x[:, ::self.decimate]
            f = self.encoder(self.stft(x))  # [B, 128, T]; T == 1 for one window
            y, (h, c) = self.rnn(f.transpose(1, 2), (state[0:1], state[1:2]))
            out = self.decoder(y.transpose(1, 2)).squeeze(1).mean(dim=1, keepdim=True)
            return out, torch.cat((h, c), 0)

    class VAD(nn.Module):
        def __init__(self, m16, m8):
            super().__init__()
            self.m16 = m16
            self.m8 = m8

        def forward(self, x: torch.Tensor, state: torch.Tensor, sr: torch.Tensor):
            if bool(sr == 16000):
                out, new_state = self.m16(x, state)
            else:
                if bool(sr == 8000):
                    out, new_state = self.m8(x, state)
                else:
                    out = torch.zeros_like(x[:, 0:1])
                    new_state = state * 0.0
            return out, new_state

    seed_all()
    c16 = Core(256, 128, 1).eval()
    c8 = Core(128, 64, 2).eval()
    # 512 samples + 64 of context, as silero v5 takes at 16 kHz.
    x = torch.randn(2, 576) * 0.3
    state = torch.randn(2, 2, 128) * 0.1
    sr = torch.tensor(16000, dtype=torch.int64)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit's deprecation notes
        t16 = torch.jit.trace(c16, (x, state))
        t8 = torch.jit.trace(c8, (x, state))
        top = torch.jit.script(VAD(t16, t8).eval())
    return top, collections.OrderedDict(input=x, state=state, sr=sr), c16


def export_silero_vad(d, opset):
    top, feeds, _ = build_silero()
    path = os.path.join(d, "model.onnx")
    exp = torch_export(top, feeds, path, opset, ["output", "stateN"],
                       dynamic_axes={"input": {0: "batch"}, "state": {1: "batch"},
                                     "output": {0: "batch"}, "stateN": {1: "batch"}})
    hist = op_histogram(onnx.load(path))
    if hist.get("If", 0) < 1:
        raise RuntimeError("the exported model has no If")
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "Silero-style VAD: scripted If on scalar sr (nested: 16000 / 8000 / else), STFT Conv1d, conv encoder, LSTM, decoder; sr=16000 in the data"


def export_silero_vad_core(d, opset):
    """The 16 kHz branch alone (no If): tells the If from the rest."""
    _, feeds, core = build_silero()
    feeds = collections.OrderedDict((k, feeds[k]) for k in ("input", "state"))
    path = os.path.join(d, "model.onnx")
    exp = torch_export(core, feeds, path, opset, ["output", "stateN"],
                       dynamic_axes={"input": {0: "batch"}, "state": {1: "batch"},
                                     "output": {0: "batch"}, "stateN": {1: "batch"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "the silero_vad model's 16 kHz branch alone (traced, no If): STFT Conv1d, conv encoder, LSTM, decoder"


# ---------------------------------------------------------------------------
# crnn_int8: CRNN (conv stack + 2 bidirectional LSTMs + Linear), dynamic
# quantisation with onnxruntime.quantization.


def export_crnn_int8(d, opset, op_types=None):
    import torch
    from torch import nn
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class BiLSTM(nn.Module):
        def __init__(self, nin, nh, nout):
            super().__init__()
            self.rnn = nn.LSTM(nin, nh, bidirectional=True)
            self.embedding = nn.Linear(nh * 2, nout)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.embedding(y)

    class CRNN(nn.Module):
        def __init__(self, nclass=37):
            super().__init__()

            def c(i, o, bn=False):
                layers = [nn.Conv2d(i, o, 3, 1, 1)]
                if bn:
                    layers.append(nn.BatchNorm2d(o))
                return layers + [nn.ReLU(True)]

            self.cnn = nn.Sequential(
                *c(1, 32), nn.MaxPool2d(2, 2),
                *c(32, 64), nn.MaxPool2d(2, 2),
                *c(64, 128, True), *c(128, 128), nn.MaxPool2d((2, 1), (2, 1)),
                *c(128, 128, True), nn.MaxPool2d((2, 1), (2, 1)),
                nn.Conv2d(128, 128, (2, 1)), nn.ReLU(True))
            self.rnn = nn.Sequential(BiLSTM(128, 64, 64), BiLSTM(64, 64, nclass))

        def forward(self, x):
            f = self.cnn(x)  # [B, C, 1, W/4]
            f = f.squeeze(2).permute(2, 0, 1)  # [T, B, C]
            return self.rnn(f)

    seed_all()
    m = randomize_bn(CRNN()).eval()
    feeds = collections.OrderedDict(image=torch.rand(2, 1, 32, 96))
    fp32 = os.path.join(d, "model_fp32.onnx")
    torch_out = torch_export(m, feeds, fp32, opset, ["logits"],
                             dynamic_axes={"image": {0: "batch", 3: "width"},
                                           "logits": {0: "time", 1: "batch"}})
    path = os.path.join(d, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # op_types None: quantize_dynamic's default, every op it can
        # (Conv, MatMul, LSTM, ...), as a user who just calls it gets.
        quantize_dynamic(fp32, path, weight_type=QuantType.QUInt8, op_types_to_quantize=op_types)
    np_feeds = {k: to_numpy(v) for k, v in feeds.items()}
    ort = run_ort(path, np_feeds)
    q = onnx.load(path)
    exp = [ort[o.name] for o in q.graph.output]
    diff = float(np.max(np.abs(exp[0] - torch_out[0])))
    os.remove(fp32)
    return path, np_feeds, exp, \
        ("CRNN (7 convs, 2 BiLSTM + Linear) 32x96, quantize_dynamic u8 (%s); expected = "
         "onnxruntime CPU on the quantised model (max |d| to fp32 torch %.3f)" % (
             ", ".join(op_types) if op_types else "default op types: Conv, MatMul, LSTM, ...", diff))


def export_crnn_int8_nolstm(d, opset):
    """The same with the LSTMs left in fp32 (op_types_to_quantize Conv,
    MatMul): DynamicQuantizeLinear, ConvInteger and MatMulInteger only."""
    return export_crnn_int8(d, opset, ["Conv", "MatMul"])


# ---------------------------------------------------------------------------
# transformers: tiny random configs, no hub access.


def lm_feeds():
    import torch
    g = torch.Generator().manual_seed(SEED)
    ids = torch.randint(3, 1000, (2, 16), generator=g, dtype=torch.int64)
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 12:] = 0  # batch 1 right-padded by 4
    return collections.OrderedDict(input_ids=ids, attention_mask=mask)


class _HFWrap:
    pass


def hf_wrap(model, key):
    import torch

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                         return_dict=True) if key == "logits" else \
                self.m(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
            return out[key]

    return Wrap(model).eval()


def hf_model(cls, cfg):
    try:
        cfg._attn_implementation = "eager"
    except Exception:  # noqa: BLE001
        pass
    try:
        m = cls(cfg, attn_implementation="eager")
    except TypeError:
        m = cls(cfg)
    return m.eval()


def export_hf(d, opset, name, build, key, note):
    import torch
    seed_all()
    m = hf_wrap(build(), key)
    feeds = lm_feeds()
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, [key],
                       dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                     "attention_mask": {0: "batch", 1: "sequence"},
                                     key: {0: "batch", 1: "sequence"}})
    import transformers
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "%s (transformers %s, torch %s); batch 2 x seq 16, batch 1 right-padded by 4" % (
            note, transformers.__version__, torch.__version__)


def export_bloom(d, opset):
    from transformers import BloomConfig, BloomForCausalLM
    cfg = BloomConfig(vocab_size=1000, hidden_size=64, n_layer=2, n_head=4, use_cache=False)
    return export_hf(d, opset, "bloom", lambda: hf_model(BloomForCausalLM, cfg), "logits",
                     "BloomForCausalLM 2 layers, hidden 64, 4 heads, vocab 1000 (ALiBi)")


def export_opt(d, opset):
    from transformers import OPTConfig, OPTForCausalLM
    cfg = OPTConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, ffn_dim=256,
                    num_attention_heads=4, max_position_embeddings=128, word_embed_proj_dim=64,
                    use_cache=False)
    return export_hf(d, opset, "opt", lambda: hf_model(OPTForCausalLM, cfg), "logits",
                     "OPTForCausalLM 2 layers, hidden 64, 4 heads, vocab 1000")


def export_deberta_v2(d, opset):
    from transformers import DebertaV2Config, DebertaV2Model
    # deberta-v3-style: relative attention with log buckets, c2p|p2c, shared keys.
    cfg = DebertaV2Config(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=256, max_position_embeddings=128, type_vocab_size=0,
                          relative_attention=True, position_buckets=32, max_relative_positions=-1,
                          pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True,
                          position_biased_input=False)
    return export_hf(d, opset, "deberta_v2", lambda: hf_model(DebertaV2Model, cfg), "last_hidden_state",
                     "DebertaV2Model (v3-style: relative attention, 32 log buckets, c2p+p2c) 2 layers, hidden 64, 4 heads")


# ---------------------------------------------------------------------------
# paddle_negdim: the DBNet export rewritten as old paddle2onnx writes its
# models: dynamic input/output dims as dim_value -1 (no dim_param), no
# value_info.


def export_torchvision(d, opset, ctor, note, size=96, classes=10):
    import torch
    import torchvision
    seed_all()
    m = randomize_bn(getattr(torchvision.models, ctor)(weights=None, num_classes=classes)).eval()
    feeds = collections.OrderedDict(input=torch.rand(2, 3, size, size))
    path = os.path.join(d, "model.onnx")
    exp = torch_export(m, feeds, path, opset, ["logits"],
                       dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "torchvision %s (weights=None, %d classes), batch 2 x 3 x %d x %d, dynamic batch; %s" % (
            ctor, classes, size, size, note)


def export_efficientnet_b0(d, opset):
    return export_torchvision(d, opset, "efficientnet_b0",
                              "depthwise convolutions, squeeze-excite, SiLU (Conv + Swish epilogues)")


def export_resnet18(d, opset):
    return export_torchvision(d, opset, "resnet18", "Conv-BN-ReLU, residual Adds, MaxPool")


def export_convnext_tiny(d, opset):
    return export_torchvision(d, opset, "convnext_tiny",
                              "7x7 depthwise convolutions, channels-last LayerNorm through Permute, "
                              "GELU, layer scale", size=64)


def lm_config(cls_name, **extra):
    """A 2-layer, hidden-64 config of transformers class \p cls_name."""
    import transformers
    base = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, max_position_embeddings=128, use_cache=False)
    base.update(extra)
    return getattr(transformers, cls_name)(**base)


def export_llama(d, opset):
    from transformers import LlamaForCausalLM
    cfg = lm_config("LlamaConfig", num_key_value_heads=2)
    return export_hf(d, opset, "llama", lambda: hf_model(LlamaForCausalLM, cfg), "logits",
                     "LlamaForCausalLM 2 layers, hidden 64, GQA 4/2, RoPE, SwiGLU, vocab 1000")


def export_mistral(d, opset):
    from transformers import MistralForCausalLM
    cfg = lm_config("MistralConfig", num_key_value_heads=2, sliding_window=8)
    return export_hf(d, opset, "mistral", lambda: hf_model(MistralForCausalLM, cfg), "logits",
                     "MistralForCausalLM 2 layers, hidden 64, GQA 4/2, sliding window 8, vocab 1000")


def export_qwen2(d, opset):
    from transformers import Qwen2ForCausalLM
    cfg = lm_config("Qwen2Config", num_key_value_heads=2)
    return export_hf(d, opset, "qwen2", lambda: hf_model(Qwen2ForCausalLM, cfg), "logits",
                     "Qwen2ForCausalLM 2 layers, hidden 64, GQA 4/2, QKV bias, vocab 1000")


def export_phi3(d, opset):
    from transformers import Phi3ForCausalLM
    cfg = lm_config("Phi3Config", num_key_value_heads=4, pad_token_id=0)
    return export_hf(d, opset, "phi3", lambda: hf_model(Phi3ForCausalLM, cfg), "logits",
                     "Phi3ForCausalLM 2 layers, hidden 64, fused qkv and gate_up projections, vocab 1000")


def export_gemma2(d, opset):
    from transformers import Gemma2ForCausalLM
    cfg = lm_config("Gemma2Config", num_key_value_heads=2, head_dim=16, sliding_window=8,
                    attn_logit_softcapping=50.0, final_logit_softcapping=30.0)
    return export_hf(d, opset, "gemma2", lambda: hf_model(Gemma2ForCausalLM, cfg), "logits",
                     "Gemma2ForCausalLM 2 layers, hidden 64, tanh GELU, attention soft-cap 50, "
                     "sliding window 8 on alternate layers, final soft-cap 30, vocab 1000")


def export_gpt_neox(d, opset):
    from transformers import GPTNeoXForCausalLM
    cfg = lm_config("GPTNeoXConfig", rotary_pct=0.25)
    return export_hf(d, opset, "gpt_neox", lambda: hf_model(GPTNeoXForCausalLM, cfg), "logits",
                     "GPTNeoXForCausalLM 2 layers, hidden 64, partial rotary (25%), parallel residual")


def export_paddle_negdim(d, opset):
    m, feeds = build_dbnet()
    tmp = os.path.join(d, "model_dyn.onnx")
    exp = torch_export(m, feeds, tmp, opset, ["maps"],
                       dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"},
                                     "maps": {0: "batch", 2: "height", 3: "width"}})
    model = onnx.load(tmp)
    os.remove(tmp)
    n = 0
    for vi in list(model.graph.input) + list(model.graph.output):
        for i, dim in enumerate(vi.type.tensor_type.shape.dim):
            # dim 0 (batch) always, so that --static exports still have one.
            if i == 0 or dim.HasField("dim_param") or not dim.HasField("dim_value"):
                dim.Clear()
                dim.dim_value = -1
                n += 1
    del model.graph.value_info[:]
    model.producer_name = "PaddlePaddle"
    model.producer_version = ""
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    return path, {k: to_numpy(v) for k, v in feeds.items()}, exp, \
        "DBNet (as family dbnet) with its %d dynamic input/output dims written as dim_value -1 (old paddle2onnx)" % n


FAMILIES = collections.OrderedDict([
    ("yolov8", export_yolov8),
    ("dbnet", export_dbnet),
    ("mobilenetv3", export_mobilenetv3),
    ("pplcnet", export_pplcnet),
    ("mtcnn", export_mtcnn),
    ("mtcnn_pnet", export_mtcnn_pnet),
    ("silero_vad", export_silero_vad),
    ("silero_vad_core", export_silero_vad_core),
    ("crnn_int8", export_crnn_int8),
    ("crnn_int8_nolstm", export_crnn_int8_nolstm),
    ("bloom", export_bloom),
    ("opt", export_opt),
    ("deberta_v2", export_deberta_v2),
    ("paddle_negdim", export_paddle_negdim),
    ("efficientnet_b0", export_efficientnet_b0),
    ("resnet18", export_resnet18),
    ("convnext_tiny", export_convnext_tiny),
    ("llama", export_llama),
    ("mistral", export_mistral),
    ("qwen2", export_qwen2),
    ("phi3", export_phi3),
    ("gemma2", export_gemma2),
    ("gpt_neox", export_gpt_neox),
])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="families-out", help="output folder (default ./families-out)")
    ap.add_argument("--only", default="", help="comma-separated families (default: all): " +
                    ",".join(FAMILIES))
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17)")
    ap.add_argument("--static", action="store_true",
                    help="export every dim static (no dynamic_axes; paddle_negdim still writes -1)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failures")
    args = ap.parse_args()
    global STATIC
    STATIC = args.static
    only = [f for f in args.only.split(",") if f]
    bad = [f for f in only if f not in FAMILIES]
    if bad:
        ap.error("unknown families %s (known: %s)" % (bad, ", ".join(FAMILIES)))
    try:
        import torch
        torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
        log("torch %s, onnx %s" % (torch.__version__, onnx.__version__))
    except ImportError as e:
        log("torch is not importable (%s): every family fails" % e)
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for name, fn in FAMILIES.items():
        if only and name not in only:
            continue
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        t0 = time.time()
        try:
            if name == "pplcnet":
                try:
                    import timm  # noqa: F401
                except ImportError:
                    shutil.rmtree(d, ignore_errors=True)
                    log("%-16s skipped: timm is not importable" % name)
                    continue
            path, feeds, exp, note = fn(d, args.opset)
            summary = write_family(d, name, path, feeds, exp, note, args.opset)
            log("%-16s exported (%.1f s): %s" % (name, time.time() - t0, summary))
        except Exception as e:  # noqa: BLE001 - one family must not stop the others
            failed += 1
            msg = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            log("%-16s failed: %s: %s" % (name, type(e).__name__, msg))
            with open(os.path.join(d, "FAILED"), "w") as f:
                f.write(traceback.format_exc())
            if args.verbose:
                traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
