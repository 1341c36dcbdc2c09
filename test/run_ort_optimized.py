"""ctest driver: shared models rewritten by ONNX Runtime's transformer optimiser, through fusec.

    python3 run_ort_optimized.py FUSEC FUSEC_RUN SHARED_MODELS_DIR OUT_DIR

onnxruntime.transformers.optimizer fuses the PyTorch exports of bert_tiny (Attention, or
MultiHeadAttention with its QKV bias, with a key-length mask; SkipLayerNormalization, BiasGelu), gpt2_tiny
(SkipLayerNormalization, FastGelu) and llama_tiny_dynamo (SkipSimplifiedLayerNormalization)
into com.microsoft ops, as a model "already optimised for ONNX Runtime" arrives. Each is run
with the shared model's test data through fusec-run --reference (before and after the pass
pipeline) and as a --target cpu artifact. Exits 0 when all pass, 77 (skipped) without
onnxruntime or the shared models.
"""
import collections
import json
import os
import subprocess
import sys

# name, optimiser model_type, num_heads, hidden_size, MultiHeadAttention (else com.microsoft
# Attention, the optimiser's default)
MODELS = [("bert_tiny", "bert", 4, 128, True), ("bert_tiny", "bert", 4, 128, False),
          ("gpt2_tiny", "gpt2", 4, 128, False), ("llama_tiny_dynamo", "gpt2", 0, 0, False)]


def main(fusec, fusec_run, shared, out_dir):
    try:
        from onnxruntime.transformers import optimizer
        from onnxruntime.transformers.fusion_options import FusionOptions
    except ImportError as e:
        print(f"SKIPPED: {e}")
        return 77
    if not os.path.exists(os.path.join(shared, "manifest.json")):
        print(f"SKIPPED: no shared models at {shared}")
        return 77
    with open(os.path.join(shared, "manifest.json")) as f:
        manifest = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    failed = []
    for name, model_type, heads, hidden, mha in MODELS:
        src = os.path.join(shared, name, "model.onnx")
        if not os.path.exists(src):
            print(f"SKIPPED {name}: not in {shared}")
            continue
        opts = FusionOptions(model_type)
        opts.use_multi_head_attention = mha
        opts.enable_embed_layer_norm = False  # EmbedLayerNormalization is not mapped
        opt = optimizer.optimize_model(src, model_type=model_type, num_heads=heads, hidden_size=hidden,
                                       optimization_options=opts, opt_level=0)
        tag = f"{name}_mha" if mha else name
        model = os.path.join(out_dir, f"{tag}.onnx")
        opt.save_model_to_file(model)
        ops = collections.Counter(n.op_type for n in opt.model.graph.node if n.domain == "com.microsoft")
        print(f"{tag}: " + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
        data = os.path.join(shared, name, "test_data_set_0")
        shapes = []
        for k, dims in manifest[name]["inputs"].items():
            shapes += ["--shape", f"{k}={'x'.join(str(d) for d in dims)}"]
        art = os.path.join(out_dir, f"{tag}.cpu")
        for cmd in ([fusec_run, "--reference", model, "--data", data],
                    [fusec_run, "--reference", "--optimize", model, "--data", data],
                    [fusec, model, "--target", "cpu", "-o", art] + shapes,
                    [fusec_run, art, "--data", data]):
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                print(f"FAIL {tag}: {' '.join(cmd)}\n  " + r.stdout.strip().replace("\n", "\n  "))
                failed.append(tag)
                break
        else:
            print(f"ok   {tag}")
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
