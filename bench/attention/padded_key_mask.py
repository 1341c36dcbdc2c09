#!/usr/bin/env python3
"""A padded batch for the key-mask operand (FusedAttention key_mask): one
attention in plain ops, B=4, H=8, S=1024, D=64, causal And a run-time bool
padding input (HF eager mask, finfo.min fill), lengths 1024/512/256/128.
Writes /tmp/amasks_big/big.onnx and d/ (inputs and ONNX Runtime's output).
Then: fusec big.onnx --target cpu -o out && fusec-run out --data d --bench 10
(or without --target cpu on the GPU machine)."""
import numpy as np, onnx, os
from onnx import TensorProto as T, helper as h, numpy_helper
B,H,S,D=4,8,1024,64
FMIN=np.finfo(np.float32).min
def const(n,a): return h.make_node("Constant",[],[n],name=n+"_c",value=numpy_helper.from_array(np.asarray(a),n))
q=np.arange(S)[:,None]; k=np.arange(S)[None,:]
nodes=[h.make_node("Transpose",["k"],["kt"],perm=[0,1,3,2]),h.make_node("MatMul",["q","kt"],["s"]),
 const("scale",np.array(0.125,np.float32)),h.make_node("Mul",["s","scale"],["ss"]),
 const("shape4",np.array([B,1,1,S],np.int64)),h.make_node("Reshape",["attention_mask","shape4"],["pad4"]),
 const("causal",(k<=q)[None,None]),h.make_node("And",["causal","pad4"],["keep"]),
 const("zero",np.array(0.0,np.float32)),const("fmin",np.array(FMIN,np.float32)),
 h.make_node("Where",["keep","zero","fmin"],["m"]),h.make_node("Add",["ss","m"],["sm"]),
 h.make_node("Softmax",["sm"],["p"],axis=-1),h.make_node("MatMul",["p","v"],["y"])]
ins=[h.make_tensor_value_info(n,T.FLOAT,[B,H,S,D]) for n in "qkv"]+[h.make_tensor_value_info("attention_mask",T.BOOL,[B,S])]
g=h.make_graph(nodes,"big",ins,[h.make_tensor_value_info("y",T.FLOAT,[B,H,S,D])])
m=h.make_model(g,opset_imports=[h.make_opsetid("",17)]); m.ir_version=8
os.makedirs("/tmp/amasks_big/d",exist_ok=True); onnx.save(m,"/tmp/amasks_big/big.onnx")
rng=np.random.default_rng(1)
pad=np.zeros((B,S),bool)
for b,l in enumerate([1024,512,256,128]): pad[b,:l]=True  # right padding
feeds={"q":rng.standard_normal((B,H,S,D)).astype(np.float32),"k":rng.standard_normal((B,H,S,D)).astype(np.float32),"v":rng.standard_normal((B,H,S,D)).astype(np.float32),"attention_mask":pad}
for i,(n,v) in enumerate(feeds.items()): onnx.save_tensor(numpy_helper.from_array(v,n),f"/tmp/amasks_big/d/input_{i}.pb")

import onnxruntime as ort
y = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
onnx.save_tensor(numpy_helper.from_array(y, "y"), "/tmp/amasks_big/d/output_0.pb")
