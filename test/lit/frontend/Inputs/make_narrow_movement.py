#!/usr/bin/env python3
"""Writes node tests (model.onnx + test_data_set_0, expected outputs from
onnx.reference) of the data-movement and shape ops on the narrow dtypes to
argv[1]: Identity, Reshape, Transpose, Concat, Gather, Slice, Flatten,
Unsqueeze, Expand, Tile, Shape and Size, each on f8e4m3fn, f8e5m2fnuz, i4,
u4, f4e2m1, i2, u2 and f8e8m0 (96 tests; most inputs have an odd
element count, the 4- and 2-bit ones packed as ONNX packs them). narrow-dtypes.test runs them
through the importer and the reference interpreter.
"""
import numpy as np, onnx, os, ml_dtypes, sys
from onnx import helper, numpy_helper as nh, TensorProto as TP
from onnx.reference import ReferenceEvaluator
rng=np.random.default_rng(2)
root=sys.argv[1]
def tensor(name, arr, dt):
    if dt in (TP.INT4,TP.UINT4,TP.FLOAT4E2M1): return helper.make_tensor(name,dt,arr.shape,nh._pack_4bitx2(arr).tobytes(),raw=True)
    if dt in (TP.INT2,TP.UINT2): return helper.make_tensor(name,dt,arr.shape,nh._pack_2bitx4(arr).tobytes(),raw=True)
    if arr.dtype.itemsize==1 and dt>=17: return helper.make_tensor(name,dt,arr.shape,arr.view(np.uint8).tobytes(),raw=True)
    return nh.from_array(arr,name)
def sample(dt, shape):
    npt=helper.tensor_dtype_to_np_dtype(dt)
    if dt in (TP.INT4,): return rng.integers(-8,8,shape).astype(npt)
    if dt in (TP.UINT4,): return rng.integers(0,16,shape).astype(npt)
    if dt in (TP.INT2,): return rng.integers(-2,2,shape).astype(npt)
    if dt in (TP.UINT2,): return rng.integers(0,4,shape).astype(npt)
    return (rng.standard_normal(shape)*4).astype(np.float32).astype(npt)
def case(name, op, dt, shape, extra_inits=(), attrs={}, outshape=None, outdt=None, nin=1):
    d=f'{root}/test_{name}_{TP.DataType.Name(dt)}'; os.makedirs(d+'/test_data_set_0',exist_ok=True)
    xs=[sample(dt,shape) for _ in range(nin)]
    names=[f'x{i}' for i in range(nin)]
    node=helper.make_node(op,names+[n for n,_ in extra_inits],['y'],**attrs)
    g=helper.make_graph([node],'g',[helper.make_tensor_value_info(n,dt,shape) for n in names],[helper.make_tensor_value_info('y',outdt or dt,None)],initializer=[nh.from_array(v,n) for n,v in extra_inits])
    m=helper.make_model(g,opset_imports=[helper.make_opsetid('',23)]); m.ir_version=10
    onnx.save(m,d+'/model.onnx')
    y=ReferenceEvaluator(m).run(None,dict(zip(names,xs)))[0]
    for i,x in enumerate(xs): open(f'{d}/test_data_set_0/input_{i}.pb','wb').write(tensor(names[i],x,dt).SerializeToString())
    open(f'{d}/test_data_set_0/output_0.pb','wb').write(tensor('y',np.asarray(y),outdt or dt).SerializeToString())
for dt in [TP.FLOAT8E4M3FN, TP.FLOAT8E5M2FNUZ, TP.INT4, TP.UINT4, TP.FLOAT4E2M1, TP.INT2, TP.UINT2, TP.FLOAT8E8M0]:
    case('identity','Identity',dt,[3,5])
    case('reshape','Reshape',dt,[3,5],[('s',np.array([5,3],np.int64))])
    case('transpose','Transpose',dt,[2,3,5],attrs={'perm':[2,0,1]})
    case('concat','Concat',dt,[3,5],attrs={'axis':1},nin=2)
    case('gather','Gather',dt,[3,5],[('i',np.array([2,0,2],np.int64))],attrs={'axis':0})
    case('slice','Slice',dt,[3,5],[('st',np.array([1],np.int64)),('en',np.array([5],np.int64)),('ax',np.array([1],np.int64)),('sp',np.array([2],np.int64))])
    case('flatten','Flatten',dt,[2,3,5],attrs={'axis':2})
    case('unsqueeze','Unsqueeze',dt,[3,5],[('a',np.array([0],np.int64))])
    case('expand','Expand',dt,[3,1],[('s',np.array([3,4],np.int64))])
    case('tile','Tile',dt,[3,5],[('r',np.array([1,2],np.int64))])
    case('shape','Shape',dt,[3,5],outdt=TP.INT64)
    case('size','Size',dt,[3,5],outdt=TP.INT64)
print('ok')
