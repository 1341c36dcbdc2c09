"""Targets (trn1/trn2/trn3 limits) and the per-invocation state of a running kernel.

Limits are NKI.md section 3 ("Hardware limits per NeuronCore", "nl.tile_size constants", "Matmul tile limits").
One `Invocation` exists per kernel instance being run: it owns the SBUF/PSUM allocation budget, the PSUM bank
map, the Scalar Engine reduce registers and the SPMD program id.
"""

import os
import threading
import weakref

from ._errors import NkiModelError


class Target:
    """Per-NeuronCore limits of one chip generation. Byte sizes are per partition."""

    def __init__(self, name, gen, sbuf_usable_bytes, sbuf_physical_bytes, moving_fmax_fp32, bias_scalar_ok):
        self.name = name
        self.gen = gen
        self.pmax = 128
        self.sbuf_usable_bytes = sbuf_usable_bytes  # nl.tile_size.total_available_sbuf_size (KLR values)
        self.sbuf_physical_bytes = sbuf_physical_bytes
        self.psum_bank_bytes = 2048
        self.psum_num_banks = 8
        self.gemm_stationary_fmax = 128
        self.moving_fmax_fp32 = moving_fmax_fp32
        self.bias_scalar_ok = bias_scalar_ok  # activation bias may be a scalar from v3 on

    def __repr__(self):
        return f"Target({self.name})"


TRN1 = Target("trn1", 2, 180224, 192 * 1024, 512, False)
TRN2 = Target("trn2", 3, 212984, 224 * 1024, 512, True)
TRN3 = Target("trn3", 4, 245752, 256 * 1024, 4096, True)
_TARGETS = {"trn1": TRN1, "inf2": TRN1, "gen2": TRN1, "trn2": TRN2, "gen3": TRN2, "trn3": TRN3, "gen4": TRN3}
_default_target = None


def resolve_target(name=None):
    """Returns the Target for `name`, else the one set by set_target(), else NEURON_PLATFORM_TARGET_OVERRIDE,
    else trn2."""
    key = name or _default_target or os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE") or "trn2"
    if isinstance(key, Target):
        return key
    if key not in _TARGETS:
        raise ValueError(f"unknown NKI target {key!r}; expected one of {sorted(_TARGETS)}")
    return _TARGETS[key]


def set_default_target(name):
    """Selects the target used by later kernel calls (None: back to the environment / trn2)."""
    global _default_target
    if name is not None:
        resolve_target(name)
    _default_target = name


class Invocation:
    """State of one kernel instance: budgets, PSUM banks, ScalarE reduce registers, program id."""

    def __init__(self, target, program_id=(), grid=(), shared_hbm=None):
        self.target = target
        self.program_id = tuple(program_id)
        self.grid = tuple(grid)
        self.sbuf_live = 0
        self.sbuf_peak = 0
        self.psum_banks = [False] * target.psum_num_banks
        self.psum_peak_banks = 0
        self.act_reduce_regs = None  # ScalarE: lazily a float32 array of 128 (one register per lane)
        self.vec_reduce_regs = None  # VectorE accumulator registers, likewise
        self.shared_hbm = shared_hbm if shared_hbm is not None else []
        self.shared_hbm_index = 0
        self.active = True

    # SBUF: a byte budget per partition; every live SBUF tensor costs its free size (shape[1:]) * itemsize.
    def alloc_sbuf(self, call, nbytes):
        if self.sbuf_live + nbytes > self.target.sbuf_usable_bytes:
            raise NkiModelError(call, (
                f"SBUF capacity exceeded on {self.target.name}: {self.sbuf_live} bytes per partition live + "
                f"{nbytes} requested > {self.target.sbuf_usable_bytes} usable"))
        self.sbuf_live += nbytes
        self.sbuf_peak = max(self.sbuf_peak, self.sbuf_live)
        return ("sbuf", nbytes)

    # PSUM: a tensor starts on a bank boundary and occupies whole 2 KiB banks.
    def alloc_psum(self, call, nbytes):
        bank = self.target.psum_bank_bytes
        need = max(1, -(-nbytes // bank))
        free_run = 0
        for i, used in enumerate(self.psum_banks):
            free_run = 0 if used else free_run + 1
            if free_run == need:
                first = i - need + 1
                for b in range(first, i + 1):
                    self.psum_banks[b] = True
                self.psum_peak_banks = max(self.psum_peak_banks, sum(self.psum_banks))
                return ("psum", first, need)
        raise NkiModelError(call, (
            f"PSUM capacity exceeded: {nbytes} bytes per partition need {need} contiguous free bank(s) of "
            f"{bank} bytes; {sum(self.psum_banks)} of {len(self.psum_banks)} banks are live"))

    def release(self, record):
        if record[0] == "sbuf":
            self.sbuf_live -= record[1]
        elif record[0] == "psum":
            for b in range(record[1], record[1] + record[2]):
                self.psum_banks[b] = False


_local = threading.local()


def current(call):
    """The running Invocation; raises NkiModelError naming `call` when no kernel is running."""
    inv = getattr(_local, "inv", None)
    if inv is None or not inv.active:
        raise NkiModelError(call, "called outside a running kernel (use @nki.jit, or nki.model.invocation())")
    return inv


def current_or_none():
    return getattr(_local, "inv", None)


def push(inv):
    prev = getattr(_local, "inv", None)
    _local.inv = inv
    return prev


def pop(inv, prev):
    inv.active = False
    _local.inv = prev


def track(owner, inv, record):
    """Frees `record` from `inv`'s budget once `owner` (the storage of a tensor) is garbage."""
    weakref.finalize(owner, inv.release, record)
