"""NkiTensor: a typed view of HBM, SBUF or PSUM storage (NKI.md section 2, "Allocation" and "Indexing").

A tensor is a NumPy view into its allocation's storage array, so slices, reshapes and permutes write through.
Views follow the documented NkiTensor rules: on-chip tensors keep axis 0 as the partition axis (an integer index
on it keeps a size-1 axis; reshape/permute may not move it), HBM tensors drop integer-indexed axes, slices must
lie inside the tensor, and nested dynamic/indirect access is not modelled (it raises).
"""

import numpy as np

from . import _dtypes
from ._errors import NkiModelError, check


class MemoryRegion:
    """A buffer kind: nl.sbuf, nl.psum, nl.private_hbm (alias nl.hbm) or nl.shared_hbm."""

    def __init__(self, name):
        self.name = name

    @property
    def is_hbm(self):
        return self.name in ("private_hbm", "shared_hbm")

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = MemoryRegion("sbuf")
psum = MemoryRegion("psum")
private_hbm = MemoryRegion("private_hbm")
shared_hbm = MemoryRegion("shared_hbm")
hbm = private_hbm


class _Storage:
    """One allocation: its array, buffer, dtype and (PSUM only) the matmul accumulation state per element."""

    def __init__(self, array, buffer, dtype, name):
        self.array = array
        self.buffer = buffer
        self.dtype = dtype
        self.name = name
        self.mm_valid = None  # PSUM: element last written by a matmul (accumulate=True is legal)
        self.mm_open = None   # PSUM: matmul accumulation group still open (accumulate=None adds)
        self.partition_base = 0  # first physical partition (ndarray(address=...))
        self.free_base = 0       # byte offset inside each partition (ndarray(address=...))
        if buffer is psum:
            state = np.dtype(f"u{array.dtype.itemsize}")
            self.mm_valid = np.zeros(array.shape, dtype=state)
            self.mm_open = np.zeros(array.shape, dtype=state)


def _byte_offset(view, base):
    return view.__array_interface__["data"][0] - base.__array_interface__["data"][0]


def _same_view(view, base, other):
    """The view of `other` (same shape and itemsize as `base`) that `view` is of `base`."""
    off = _byte_offset(view, base) // base.itemsize
    flat = other.reshape(-1)[off:]
    return np.lib.stride_tricks.as_strided(flat, shape=view.shape, strides=view.strides)


class DynSlice:
    """nl.ds(start, size): the slice start:start+size."""

    def __init__(self, start, size):
        self.start = start
        self.size = size


class NkiTensor:
    """A view of an NKI allocation. `shape`, `dtype`, `buffer`, `name`, `ndim`, `size` as documented."""

    def __init__(self, view, storage):
        self._view = view
        self._storage = storage

    # -- documented attributes ------------------------------------------------------------------------
    shape = property(lambda self: tuple(self._view.shape))
    dtype = property(lambda self: self._storage.dtype)
    buffer = property(lambda self: self._storage.buffer)
    name = property(lambda self: self._storage.name)
    ndim = property(lambda self: self._view.ndim)
    size = property(lambda self: int(self._view.size))
    strides = property(lambda self: tuple(s // self._view.itemsize for s in self._view.strides))
    offset = property(lambda self: _byte_offset(self._view, self._storage.array) // self._view.itemsize)

    @property
    def on_chip(self):
        return not self.buffer.is_hbm

    def __repr__(self):
        return f"NkiTensor(shape={self.shape}, dtype={self.dtype!r}, buffer={self.buffer!r}, name={self.name!r})"

    def _new(self, view):
        return NkiTensor(view, self._storage)

    # -- geometry used by the instruction checks ------------------------------------------------------
    def partition_start(self):
        """First physical partition of an on-chip view."""
        base = self._storage.array
        return self._storage.partition_base + _byte_offset(self._view, base) // base.strides[0]

    def free_bytes_range(self):
        """(lo, hi) physical byte range inside each partition that an on-chip view touches."""
        base = self._storage.array
        lo = self._storage.free_base + _byte_offset(self._view, base) % base.strides[0]
        span = sum((n - 1) * s for n, s in zip(self._view.shape[1:], self._view.strides[1:]) if n > 0)
        return lo, lo + span + self._view.itemsize

    def free_size(self):
        """Elements per partition (product of the free axes)."""
        return int(np.prod(self._view.shape[1:], dtype=np.int64)) if self._view.ndim > 1 else 1

    # -- data access for the instruction implementations ---------------------------------------------
    def _read(self, compute=np.float32):
        """The values, as `compute` (engines compute in fp32)."""
        return self._view.astype(compute)

    def _write(self, values):
        """Stores values into the view, converting (and rounding) to the tensor's dtype."""
        vals = np.broadcast_to(np.asarray(values), self._view.shape)
        self._view[...] = self._storage.dtype.convert(vals)

    def _psum_state(self):
        s = self._storage
        return (_same_view(self._view, s.array, s.mm_valid), _same_view(self._view, s.array, s.mm_open))

    # -- indexing -------------------------------------------------------------------------------------
    def __getitem__(self, key):
        call = "NkiTensor.__getitem__"
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            i = [k is Ellipsis for k in key].index(True)
            fill = self.ndim - (len(key) - 1)
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        check(len(key) <= self.ndim, call, f"too many indices ({len(key)}) for a {self.ndim}-D tensor")
        idx = []
        for axis, k in enumerate(key):
            n = self._view.shape[axis]
            if isinstance(k, DynSlice):
                k = slice(k.start, k.start + k.size)
            if isinstance(k, NkiTensor):
                raise NkiModelError(call, "dynamic (tensor-valued) indexing is not modelled")
            if isinstance(k, (int, np.integer)):
                k = int(k)
                kk = k + n if k < 0 else k
                check(0 <= kk < n, call, f"index {k} out of range for axis {axis} of size {n}")
                idx.append(slice(kk, kk + 1) if (axis == 0 and self.on_chip) else kk)
            elif isinstance(k, slice):
                for v in (k.start, k.stop, k.step):
                    check(v is None or isinstance(v, (int, np.integer)), call, "slice bounds must be integers")
                step = 1 if k.step is None else int(k.step)
                check(step >= 1, call, "slice step must be >= 1")
                start = 0 if k.start is None else int(k.start)
                stop = n if k.stop is None else int(k.stop)
                start = start + n if start < 0 else start
                stop = stop + n if stop < 0 else stop
                check(0 <= start < stop <= n, call,
                      f"slice {start}:{stop} is empty or outside axis {axis} of size {n}")
                idx.append(slice(start, stop, step))
            else:
                raise NkiModelError(call, f"unsupported index {k!r}")
        v = self._view[tuple(idx)]
        if v.ndim == 0:
            v = v.reshape(1)
        if self.on_chip and v.ndim == 1:
            v = v.reshape(v.shape[0], 1)
        return self._new(v)

    def __setitem__(self, key, value):
        """t[key] = value copies a tile (dma_copy for HBM, tensor_copy on chip) or fills a scalar (memset)."""
        from . import isa as nisa
        dst = self[key]
        if isinstance(value, NkiTensor):
            if dst.buffer.is_hbm or value.buffer.is_hbm:
                nisa.dma_copy(dst=dst, src=value)
            else:
                nisa.tensor_copy(dst=dst, src=value)
        else:
            nisa.memset(dst=dst, value=value)

    # -- view operations --------------------------------------------------------------------------------
    def reshape(self, shape):
        call = "NkiTensor.reshape"
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1]))
            check(known > 0 and self.size % known == 0, call, f"cannot infer -1 in {shape} from {self.shape}")
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        check(int(np.prod(shape)) == self.size, call, f"{self.shape} has {self.size} elements, {shape} does not")
        if self.on_chip:
            check(shape[0] == self.shape[0], call, "on-chip reshape must keep the partition axis (axis 0)")
        try:
            v = np.reshape(self._view, shape, copy=False)
        except ValueError:
            raise NkiModelError(call, f"layout of this view cannot be reshaped to {shape} without a copy")
        return self._new(v)

    def permute(self, dims):
        call = "NkiTensor.permute"
        dims = tuple(dims)
        check(sorted(dims) == list(range(self.ndim)), call, f"{dims} is not a permutation of {self.ndim} axes")
        check(not self.on_chip or dims[0] == 0, call, "on-chip permute must keep the partition axis first")
        return self._new(np.transpose(self._view, dims))

    def broadcast(self, dim, size):
        call = "NkiTensor.broadcast"
        check(self.shape[dim] == 1, call, f"axis {dim} has size {self.shape[dim]}, not 1")
        check(not (self.on_chip and dim == 0), call, "cannot broadcast the partition axis of an on-chip tensor")
        shape = list(self.shape)
        shape[dim] = size
        strides = list(self._view.strides)
        strides[dim] = 0
        return self._new(np.lib.stride_tricks.as_strided(self._view, tuple(shape), tuple(strides)))

    def expand_dim(self, dim):
        check(not (self.on_chip and dim == 0), "NkiTensor.expand_dim", "cannot insert before the partition axis")
        return self._new(np.expand_dims(self._view, dim))

    def squeeze_dim(self, dim):
        call = "NkiTensor.squeeze_dim"
        check(self.shape[dim] == 1, call, f"axis {dim} has size {self.shape[dim]}, not 1")
        check(not (self.on_chip and dim == 0), call, "cannot remove the partition axis of an on-chip tensor")
        return self._new(np.squeeze(self._view, dim))

    def reshape_dim(self, dim, shape):
        new = list(self.shape[:dim]) + list(shape) + list(self.shape[dim + 1:])
        if self.on_chip and dim == 0:
            check(len(shape) == 1, "NkiTensor.reshape_dim", "cannot split the partition axis of an on-chip tensor")
        return self._reshape_any(new)

    def flatten_dims(self, start_dim, end_dim):
        check(not (self.on_chip and start_dim == 0), "NkiTensor.flatten_dims",
              "cannot merge the partition axis of an on-chip tensor")
        n = int(np.prod(self.shape[start_dim:end_dim + 1]))
        return self._reshape_any(list(self.shape[:start_dim]) + [n] + list(self.shape[end_dim + 1:]))

    def _reshape_any(self, shape):
        try:
            return self._new(np.reshape(self._view, [self.size // max(1, int(np.prod([s for s in shape if s != -1])))
                                                     if s == -1 else s for s in shape], copy=False))
        except ValueError:
            raise NkiModelError("NkiTensor.reshape", f"cannot view {self.shape} as {tuple(shape)} without a copy")

    def slice(self, dim, start, end, step=1):
        call = "NkiTensor.slice"
        check(0 <= dim < self.ndim, call, f"dim {dim} outside the tensor's {self.ndim} axes")
        check(0 <= start < end <= self.shape[dim], call,
              f"need 0 <= start < end <= {self.shape[dim]}, got start {start}, end {end}")
        check(step >= 1, call, f"step must be >= 1, got {step}")
        key = [slice(None)] * self.ndim
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim, index):
        check(isinstance(index, (int, np.integer)), "NkiTensor.select", "dynamic select is not modelled")
        check(not (self.on_chip and dim == 0), "NkiTensor.select", "cannot select away the partition axis")
        key = [slice(None)] * self.ndim
        key[dim] = int(index)
        return self[tuple(key)]

    def is_contiguous(self):
        axes = range(1, self.ndim) if self.on_chip else range(self.ndim)
        expect = self._view.itemsize
        for a in reversed(list(axes)):
            if self._view.shape[a] != 1 and self._view.strides[a] != expect:
                return False
            expect *= self._view.shape[a]
        return True

    def is_indirect(self):
        return False

    def get_pattern(self):
        return [[s, n] for s, n in zip(self.strides, self.shape)]

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0, dtype=None):
        """Access pattern [[stride, count], ...] in elements, from the view's offset (+ offset).

        scalar_offset (a 1x1 on-chip tensor) adds its value times the stride of axis `indirect_dim` of this
        tensor; vector_offset (a [P, 1] SBUF tensor, HBM tensors only) replaces the first pattern entry: row p
        starts at its own index times that stride (a gather/scatter usable by dma_copy). Index values are read
        when .ap() is called (the model is eager); addresses outside the allocation are refused.
        """
        call = "NkiTensor.ap"
        check(scalar_offset is None or vector_offset is None, call, "scalar_offset and vector_offset exclude each other")
        check(dtype is None or _dtypes.as_dtype(dtype) == self.dtype, call, "dtype reinterpretation not modelled")
        base = self._storage.array
        start = self.offset + (0 if offset is None else int(offset))
        if scalar_offset is not None or vector_offset is not None:
            check(0 <= indirect_dim < self.ndim, call, f"indirect_dim {indirect_dim} outside the tensor's axes")
            scale = self.strides[indirect_dim]
        if scalar_offset is not None:
            check(isinstance(scalar_offset, NkiTensor) and scalar_offset.on_chip and scalar_offset.size == 1,
                  call, "scalar_offset must be a 1x1 SBUF/PSUM tensor (registers are not modelled)")
            start += int(scalar_offset._view.reshape(-1)[0]) * scale
        shape = tuple(int(n) for _, n in pattern)
        strides = tuple(int(sd) * base.itemsize for sd, _ in pattern)
        if vector_offset is not None:
            check(self.buffer.is_hbm, call, "vector_offset indexes HBM tensors only")
            check(isinstance(vector_offset, NkiTensor) and vector_offset.buffer is sbuf
                  and vector_offset.free_size() == 1, call, "vector_offset must be a [P, 1] SBUF tensor")
            rows = vector_offset._view.reshape(-1).astype(np.int64)
            check(rows.shape[0] == shape[0], call,
                  f"vector_offset has {rows.shape[0]} indices for a pattern of {shape[0]} rows")
            return _Indirect(self, start + rows * scale, shape[1:], strides[1:])
        lo = start + sum((n - 1) * sd for sd, n in pattern if sd < 0)
        hi = start + sum((n - 1) * sd for sd, n in pattern if sd > 0)
        check(lo >= 0 and hi < base.size, call, "access pattern reaches outside the tensor's allocation")
        if self.on_chip:
            check(len(pattern) >= 2 and pattern[0][0] == base.strides[0] // base.itemsize, call,
                  "an on-chip pattern's first entry must step one partition")
        flat = base.reshape(-1)[start:]
        return self._new(np.lib.stride_tricks.as_strided(flat, shape, strides))


class _Indirect(NkiTensor):
    """A gathered (vector_offset) view of an HBM tensor: row p starts at element row_starts[p]. Reading gathers,
    writing scatters; rows whose addresses fall outside the allocation are `oob_rows` (dma_copy's oob_mode)."""

    def __init__(self, tensor, row_starts, rest_shape, rest_strides):
        base = tensor._storage.array
        span_hi = sum((n - 1) * sd for sd, n in zip(rest_strides, rest_shape) if sd > 0) // base.itemsize
        span_lo = sum((n - 1) * sd for sd, n in zip(rest_strides, rest_shape) if sd < 0) // base.itemsize
        self.oob_rows = (row_starts + span_lo < 0) | (row_starts + span_hi >= base.size)
        flat = base.reshape(-1)
        rows = []
        for p, r in enumerate(row_starts):
            r = int(r) if not self.oob_rows[p] else 0
            rows.append(np.lib.stride_tricks.as_strided(flat[r:], tuple(rest_shape), tuple(rest_strides)))
        self._rows = rows
        super().__init__(np.stack(rows) if rows else np.zeros((0,) + tuple(rest_shape), base.dtype),
                         tensor._storage)

    def is_indirect(self):
        return True

    def _write(self, values, skip=None):
        vals = self._storage.dtype.convert(np.broadcast_to(np.asarray(values), self._view.shape))
        for p, row in enumerate(self._rows):
            if not self.oob_rows[p] and (skip is None or not skip[p]):
                row[...] = vals[p]
