"""ctest driver: run.py's torch-neuronx path, with fake torch / torch_xla / torch_neuronx modules.

    python3 run_torch_host.py FUSEC NKI_MODEL_DIR MODEL_DIR PRECISION OUT

Neither torch-neuronx nor the Neuron SDK is available here, so this checks what can be checked of
run.py's TorchHost (codegen/nki/RunPy.cpp) without them:
  - select_host picks TorchHost when `nki` is not the NumPy model and torch_neuronx + torch_xla import,
    NumpyHost when they do not or when `nki` is the NumPy model, and FUSEC_NKI_HOST forces one;
  - on the torch path every kernel, gemm and conv call gets fake torch tensors on the fake XLA device
    (recorded per call), weights and inputs are moved to the device once and reused;
  - the outputs equal those of the NumPy path bit for bit (each fake-device kernel call runs the same
    kernel on the NumPy model of NKI).
Prints PASS at the end.
"""
import importlib.util
import json
import os
import subprocess
import sys
import types

import numpy as np

DEVICE = "xla:0"


class FakeTensor:
    """The part of torch.Tensor that run.py uses: .to(device / dtype), .cpu(), .float(), .numpy(), .dtype."""

    def __init__(self, torch, array, dtype, device="cpu"):
        self.torch, self.array, self.dtype, self.device = torch, array, dtype, device

    def to(self, device=None, dtype=None):
        self.torch.calls.append(("to", device, dtype))
        if isinstance(device, str) and device != DEVICE and device != "cpu":
            raise AssertionError(f"moved to unknown device {device!r}")
        arr = self.array
        if dtype is self.torch.bfloat16:
            arr = arr.astype(np.float32)
        return FakeTensor(self.torch, arr, dtype or self.dtype, device or self.device)

    def cpu(self):
        return FakeTensor(self.torch, self.array, self.dtype, "cpu")

    def float(self):
        return FakeTensor(self.torch, self.array.astype(np.float32), self.torch.float32, self.device)

    def numpy(self):
        assert self.device == "cpu", "numpy() of a device tensor"
        return self.array


def fake_torch():
    torch = types.ModuleType("torch")
    torch.calls = []
    torch.bfloat16 = "torch.bfloat16"
    torch.float32 = "torch.float32"

    def from_numpy(a):
        torch.calls.append(("from_numpy", a.shape))
        return FakeTensor(torch, a, str(a.dtype), "cpu")

    torch.from_numpy = from_numpy
    return torch


def install_fakes(torch, with_neuronx=True):
    xla = types.ModuleType("torch_xla")
    core = types.ModuleType("torch_xla.core")
    xm = types.ModuleType("torch_xla.core.xla_model")
    xm.xla_device = lambda: DEVICE
    xla.core, core.xla_model = core, xm
    sys.modules.update({"torch": torch, "torch_xla": xla, "torch_xla.core": core, "torch_xla.core.xla_model": xm})
    sys.modules["torch_neuronx"] = types.ModuleType("torch_neuronx") if with_neuronx else None


def wrap_kernels(kernels, nki, nl, torch, log):
    """Each kernel: check that its arguments are device tensors, run it on the NumPy model, return device tensors."""

    def wrap(name, fn):
        def call(*args):
            for i, a in enumerate(args):
                if not isinstance(a, FakeTensor) or a.device != DEVICE:
                    raise AssertionError(f"{name}: argument {i} is {type(a).__name__}, not a tensor on {DEVICE}")
            np_args = [nki.model.typed(a.array, nl.bfloat16) if a.dtype is torch.bfloat16 else a.array
                       for a in args]
            res = fn(*np_args)
            log.append(name)
            wrap1 = lambda r: FakeTensor(torch, np.asarray(r), str(np.asarray(r).dtype), DEVICE)  # noqa: E731
            return tuple(wrap1(r) for r in res) if isinstance(res, tuple) else wrap1(res)
        return call

    for sym in kernels.KERNEL_OUTPUTS:
        setattr(kernels, sym, wrap(sym, getattr(kernels, sym)))
    for table in (kernels.GEMM_KERNELS, kernels.CONV_KERNELS):
        for step in table:
            table[step] = wrap(step, table[step])


def main(fusec, model_pkg, model_dir, precision, out):
    name = os.path.basename(os.path.normpath(model_dir))
    with open(os.path.join(model_dir, "..", "manifest.json")) as f:
        shapes = json.load(f)[name]["inputs"]
    cmd = [fusec, os.path.join(model_dir, "model.onnx"), "--target", "nki", "--precision", precision, "-o", out]
    for k, dims in shapes.items():
        cmd += ["--shape", f"{k}={'x'.join(str(d) for d in dims)}"]
    if subprocess.run(cmd).returncode != 0:
        print("FAIL: fusec failed")
        return 1
    sys.path.insert(0, model_pkg)
    spec = importlib.util.spec_from_file_location("fusec_run_py", os.path.join(out, "run.py"))
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    import nki
    import nki.language as nl
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    data = os.path.join(model_dir, "test_data_set_0")
    inputs = run.load_inputs(manifest, data)
    os.environ.pop("FUSEC_NKI_HOST", None)

    # Host selection.
    sdk_nki = types.ModuleType("nki")  # the Neuron SDK's package has no nki.model
    sys.modules["torch_neuronx"] = None  # import fails
    assert isinstance(run.select_host(sdk_nki), run.NumpyHost), "no torch-neuronx: NumPy arrays"
    torch = fake_torch()
    install_fakes(torch)
    assert isinstance(run.select_host(nki), run.NumpyHost), "the NumPy model of NKI takes NumPy arrays"
    host = run.select_host(sdk_nki)
    assert isinstance(host, run.TorchHost) and host.device == DEVICE, "torch-neuronx present: torch tensors"
    os.environ["FUSEC_NKI_HOST"] = "numpy"
    assert isinstance(run.select_host(sdk_nki), run.NumpyHost), "FUSEC_NKI_HOST=numpy"
    os.environ["FUSEC_NKI_HOST"] = "torch"
    assert isinstance(run.select_host(nki), run.TorchHost), "FUSEC_NKI_HOST=torch"
    install_fakes(torch, with_neuronx=False)
    try:
        run.select_host(nki)
        raise AssertionError("FUSEC_NKI_HOST=torch without torch-neuronx must fail")
    except SystemExit as e:
        assert "torch-neuronx" in str(e), e
    os.environ.pop("FUSEC_NKI_HOST")
    install_fakes(torch)

    # The NumPy path, then the torch path through the fakes.
    want = run.run(manifest, inputs, host=run.NumpyHost())
    log = []
    wrap_kernels(run.kernels, nki, nl, torch, log)
    torch.calls.clear()
    got = run.run(manifest, inputs, host=host)
    steps = [s for s in manifest["steps"] if s["kind"] != "copy"]
    assert len(log) == len(steps), f"{len(log)} device calls for {len(steps)} steps"
    constant = {b["id"] for b in manifest["buffers"] if b["storage"] in ("weight", "input")}
    used = set()
    for s in steps:
        used.update(s["buffers"] if s["kind"] == "kernel" else
                    [s[k] for k in ("a", "b", "c", "bias", "x", "w") if k in s])
    assert set(host.resident) == used & constant, "weights and inputs resident on the device"
    assert all(t.device == DEVICE for t in host.resident.values())
    moves = sum(1 for c in torch.calls if c[0] == "from_numpy")
    torch.calls.clear()
    run.run(manifest, inputs, host=host)
    moves2 = sum(1 for c in torch.calls if c[0] == "from_numpy")
    assert moves - moves2 == len(host.resident), f"weights/inputs moved again ({moves} then {moves2})"
    for i, (g, w) in enumerate(zip(got, want)):
        if not np.array_equal(g, w, equal_nan=True):
            print(f"FAIL: output {i} differs between the torch and NumPy paths")
            return 1
    print(f"{len(steps)} steps on the fake device, {len(host.resident)} weights/inputs resident")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
