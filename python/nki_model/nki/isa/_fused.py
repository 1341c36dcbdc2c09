"""Fused Vector Engine instructions: scalar_tensor_tensor and tensor_scalar_reduce (with the Vector Engine's
per-lane accumulator registers). Semantics from the SDK's nki.isa docstrings (NKI.md section 4 lists the
Vector Engine family)."""

import numpy as np

from .. import _ops, _runtime
from .._errors import check
from .._tensor import psum
from . import _checks as C
from ._checks import ON_CHIP

_REDUCE_IDENTITY = {"add": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None):
    """dst = (data <op0> operand0) <op1> operand1: operand0 a number or [P, 1] tile, operand1 a tile with data's
    layout; arithmetic ops only, fp32 math; data and operand1 cannot both be in PSUM."""
    call = "nisa.scalar_tensor_tensor"
    for role, t in (("data", data), ("operand1", operand1), ("dst", dst)):
        C.tensor(call, role, t, ON_CHIP, "Vector")
    C.same_layout(call, "data", data, "operand1", operand1)
    C.same_layout(call, "data", data, "dst", dst)
    check(not (data.buffer is psum and operand1.buffer is psum), call, "data and operand1 cannot both be in PSUM")
    n0, n1 = _ops.op_name(op0), _ops.op_name(op1)
    check(n0 in _ops.ARITH and n1 in _ops.ARITH, call, "op0 and op1 must be arithmetic operators")
    _ops.check_available(call, n0)
    _ops.check_available(call, n1)
    p = data.shape[0]
    s0 = C.vector_operand(call, "operand0", operand0, p)
    x = C.per_partition(data._read(np.float32), p)
    t = (_ops.binary(n0, s0, x) if reverse0 else _ops.binary(n0, x, s0)).astype(np.float32)
    b = C.per_partition(operand1._read(np.float32), p)
    out = _ops.binary(n1, b, t) if reverse1 else _ops.binary(n1, t, b)
    for x_ in (data, operand0, operand1):
        if hasattr(x_, "_psum_state"):
            C.psum_read(x_)
    dst._write(np.asarray(out).reshape(dst.shape))
    C.psum_write(dst, False, False)


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False,
                         reduce_cmd=None, reduce_init=None, reduce_res_negate=False, name=None):
    """dst = data <op0> operand0 (fp32), and reduce_op (add, multiply, max, min) of each row of dst into the
    Vector Engine accumulator registers: reset_reduce (default) starts from reduce_op's identity, reduce
    continues, load_reduce starts from reduce_init; reduce_res ([P, 1]) reads them out, negated if asked."""
    from . import reduce_cmd as cmds
    call = "nisa.tensor_scalar_reduce"
    reduce_cmd = cmds.reset_reduce if reduce_cmd is None else reduce_cmd
    C.tensor(call, "data", data, ON_CHIP, "Vector")
    C.tensor(call, "dst", dst, ON_CHIP, "Vector")
    C.same_layout(call, "data", data, "dst", dst)
    n0, rn = _ops.op_name(op0), _ops.op_name(reduce_op)
    check(n0 in _ops.ARITH or n0 in _ops.UNARY_ALU, call, "op0 must be an arithmetic operator")
    _ops.check_available(call, n0)
    check(rn in _REDUCE_IDENTITY, call, "reduce_op must be nl.add, nl.multiply, nl.max or nl.min")
    check(reduce_cmd in (cmds.reset_reduce, cmds.reduce, cmds.load_reduce), call,
          "reduce_cmd must be reset_reduce, reduce or load_reduce")
    check((reduce_init is not None) == (reduce_cmd is cmds.load_reduce), call,
          "reduce_init is given exactly when reduce_cmd is load_reduce")
    p = data.shape[0]
    x = C.per_partition(data._read(np.float32), p)
    if n0 in _ops.UNARY_ALU:
        out = _ops.UNARY_ALU[n0](x).astype(np.float32)
    else:
        s0 = C.vector_operand(call, "operand0", operand0, p)
        out = (_ops.binary(n0, s0, x) if reverse0 else _ops.binary(n0, x, s0)).astype(np.float32)
    inv = _runtime.current(call)
    if inv.vec_reduce_regs is None:
        inv.vec_reduce_regs = np.full(128, np.nan, dtype=np.float32)
    lanes = slice(data.partition_start(), data.partition_start() + p)
    if reduce_cmd is cmds.reset_reduce:
        inv.vec_reduce_regs[lanes] = _REDUCE_IDENTITY[rn]
    elif reduce_cmd is cmds.load_reduce:
        inv.vec_reduce_regs[lanes] = C.vector_operand(call, "reduce_init", reduce_init, p).reshape(-1)
    row = _ops.reduce(rn, out, (1,))
    inv.vec_reduce_regs[lanes] = _ops.binary(rn, inv.vec_reduce_regs[lanes], row.astype(np.float32))
    C.psum_read(data)
    dst._write(out.reshape(dst.shape))
    C.psum_write(dst, False, False)
    if reduce_res is not None:
        C.tensor(call, "reduce_res", reduce_res, ON_CHIP, "Vector")
        check(reduce_res.shape[0] == p and reduce_res.free_size() == 1, call,
              f"reduce_res must be a [{p}, 1] tile, got {list(reduce_res.shape)}")
        regs = inv.vec_reduce_regs[lanes]
        reduce_res._write((-regs if reduce_res_negate else regs).reshape(reduce_res.shape))
        C.psum_write(reduce_res, False, False)
