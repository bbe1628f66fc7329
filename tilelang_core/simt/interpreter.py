"""A SIMT interpreter of lowered kernels, on the CPU with numpy: the kit's interpret mode.

It runs the thread-level TIRX that ``lower_simt`` produces (before TVM's passes), one block at a
time, all threads of a block in lockstep (numpy arrays over lanes, a mask for divergent ``if``s),
with the kit's device helpers implemented from their contract (tilelang_core/simt/__init__.py:
tl_copy_N, tl_store_N, tl_cp_async_*, tl_shfl_xor, tl_atomic_*). A backend subclasses
``Interpreter`` and implements its own helpers (matrix loads and instructions) in
``device_helper``, from the vendor's definition of each instruction; CI then checks the index
arithmetic of copies, swizzles, operand lane addresses, matrix fragments and reductions against
torch without a GPU.

The mbarrier helpers (T.alloc_barrier) are modelled in interpreter_mbarrier.py, the warp helpers
(tl_ballot_sync, tl_shfl_sync, tl_warp_reduce_*, ...) in interpreter_warp.py, over warps of the kernel's ``tl.warp_size``. A vector value (a ``Ramp``
index, ``T.ldg128``'s ``uint32x4``) is an array with the vector lanes on a leading axis,
``(lanes, threads)``; ``T.reinterpret`` reads the bytes as the device holds them.

Lockstep execution makes barriers no-ops, so a missing one would not change the numbers here;
instead each shared access is checked against the other warps' since the last barrier
(interpreter_races.py: a race raises; ``check_races=False`` turns it off). Async copies land when issued, unless
``cp_async_lands_at_wait=True``: then each ``tl_cp_async_N`` reads its source when issued but
writes shared memory only at the ``tl_cp_async_wait<K>`` that covers its group (the latest the
contract allows), so a pipeline that reads a stage before waiting for it computes wrong numbers.

Example::

    class MyInterpreter(Interpreter):
        def device_helper(self, name, args, mask):
            if name == "tl_my_mma":
                ...                      # read operands through self.pointer(args[i])
                return None
            return NOT_HANDLED

    MyInterpreter(lowered_func, {"A": a, "B": b, "C": c}).run()   # numpy arrays, written in place
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from tvm import tirx

from ..ir.import_source import refuse_imported_sources
from ..ir.numpy_ops import BINARY_UFUNCS
from .interpreter_races import BARRIER_HELPERS, SharedRaces

NP_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
             "bfloat16": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
             "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "bool": np.bool_,
             "uint16": np.uint16, "uint64": np.uint64}

_DEVICE_BYTES = {"bfloat16": 2}


@dataclass
class Pointer:
    """Per-lane addresses into one buffer: ``storage`` with a flat ``index`` for every lane."""

    storage: "Storage"
    index: np.ndarray


class Storage:
    """A buffer's memory: shared/global are one array; local has one row per lane."""

    def __init__(self, array: np.ndarray, per_lane: bool, shape=None, dtype: str = "",
                 bf16_bits: bool = False, vector_lanes: int = 1, strides=None, tracker=None, name: str = ""):
        self.array = array
        self.tracker = tracker  # shared memory: the interpreter's race check (interpreter_races.py)
        self.race_record = None  # (the tracker's bookkeeping of the allocation, cached)
        self.name = name
        self.per_lane = per_lane
        self.shape = shape  # logical N-D shape (global buffers), for flattening indices
        # a T.StridedTensor's element strides: indices address the flat array through them (the
        # array is then the memory the view lives in, e.g. the base of A[:, 0, :, 0])
        self.strides = strides
        # bytes of one element on the device: bfloat16 is held as float32 here but is 2 bytes
        # there, which is what byte-sized copies (tl_copy_16) count in
        self.dtype = dtype
        self.elem_bytes = _DEVICE_BYTES.get(dtype, array.itemsize)
        # the shared pool's bfloat16 view holds the device's bit patterns (uint16 over the pool's
        # bytes, so that other dtypes' views of the same bytes see them): read as float32,
        # written rounded to nearest even
        self.bf16_bits = bf16_bits
        self.vector_lanes = vector_lanes  # a register of vectors (T.alloc_var(T.float16x2)): lanes per element

    def vector_elements(self, flat):
        """``flat`` element indices of a vector buffer as its scalars' indices, shaped
        (vector lanes, threads) like a Ramp's."""
        if self.vector_lanes == 1:
            return flat
        return flat[None, ...] * self.vector_lanes + np.arange(self.vector_lanes)[:, None]

    def values(self) -> np.ndarray:
        """The elements as numbers, flat (bfloat16 bit patterns decoded)."""
        flat = self.array.reshape(-1)
        return _from_bf16_bits(flat) if self.bf16_bits else flat

    def flat(self, indices, lanes):
        # a vector access (a Ramp index) has shape (vector lanes, threads); a scalar one (threads,)
        shape = np.broadcast_shapes((lanes,), *(np.shape(i) for i in indices))
        if len(indices) == 1:
            return np.broadcast_to(np.asarray(indices[0], dtype=np.int64), shape).copy()
        flat = np.zeros(shape, dtype=np.int64)
        if self.strides is not None:
            for i, s in zip(indices, self.strides):
                flat = flat + np.asarray(i, dtype=np.int64) * s
            return flat
        for i, s in zip(indices, self.shape):
            flat = flat * int(s) + np.asarray(i, dtype=np.int64)
        return flat

    def read(self, flat, mask):
        if self.tracker is not None:
            self.tracker.read(self, flat, mask)
        out = np.zeros(flat.shape, dtype=self.array.dtype)
        safe = np.where(mask, flat, 0)
        if self.per_lane:
            out = self.array[np.arange(flat.shape[-1]), safe]
        else:
            out = self.array.reshape(-1)[safe]
        if self.bf16_bits:
            out = _from_bf16_bits(out)
        return np.where(mask, out, np.zeros((), dtype=out.dtype))

    def write(self, flat, value, mask):
        if self.tracker is not None:
            self.tracker.write(self, flat, mask)
        lanes = np.nonzero(mask)[0]
        value = np.broadcast_to(np.asarray(value), flat.shape)
        if self.bf16_bits:
            value = _to_bf16_bits(value)
        if self.per_lane:
            self.array[lanes, flat[..., lanes]] = value[..., lanes].astype(self.array.dtype)
        else:
            view = self.array.reshape(-1)
            if not np.shares_memory(view, self.array):
                raise RuntimeError("global buffers must be contiguous")
            view[flat[..., lanes]] = value[..., lanes].astype(self.array.dtype)


def _from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _to_bf16_bits(value: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(value, dtype=np.float32).view(np.uint32)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(np.isnan(value), 0x7FC0, rounded).astype(np.uint16)


#: trips after which a while loop counts as a hang
_MAX_WHILE_TRIPS = 1 << 20

#: what ``Interpreter.device_helper`` returns for a helper name it does not implement
NOT_HANDLED = object()


class Interpreter:
    def __init__(self, func: tirx.PrimFunc, args: dict, *, cp_async_lands_at_wait: bool = False,
                 check_races: bool = True):
        refuse_imported_sources(func, "the SIMT interpreter")  # (it cannot run their device code)
        self.func = func
        warp_size = func.attrs.get("tl.warp_size") if func.attrs is not None else None
        self.warp_size = int(warp_size) if warp_size is not None else 32  # (simt/pipeline.py records it)
        self.races = SharedRaces(self.warp_size) if check_races else None
        self.args = args
        self.defer_async = cp_async_lands_at_wait
        self.open_group: list = []  # deferred writes of async copies since the last commit
        self.groups: list = []  # committed groups not yet waited for, oldest first
        self.env: dict = {}
        self.storage: dict = {}
        self.lanes = 1
        self.read_mask = np.ones(1, dtype=bool)
        for param in func.params:
            name = str(param.name)
            if tirx.is_buffer_var(param):
                array = args[name]
                strides = list(param.ty.strides or [])
                if strides and not all(isinstance(s, tirx.IntImm) for s in strides):
                    raise NotImplementedError(f"interpreter: '{name}' has strides {strides} known only at run "
                                              f"time; give the T.StridedTensor constant strides")
                self.storage[param] = Storage(array, False, [int(s) for s in array.shape], str(param.ty.dtype),
                                              strides=[int(s.value) for s in strides] if strides else None)
                for dim, extent in zip(param.ty.shape, array.shape):
                    if isinstance(dim, tirx.Var):  # a T.dynamic size: bound by the argument
                        self.env[dim] = np.int64(extent)
            else:  # a scalar parameter, as its dtype (a float one is not an integer)
                self.env[param] = NP_DTYPES.get(str(param.ty), np.int64)(args[name])

    # -- driver ---------------------------------------------------------------------------------
    def run(self):
        launches = []
        body = self.func.body
        while isinstance(body, tirx.AttrStmt) and body.attr_key == "thread_extent":
            launches.append((str(body.node.thread_tag), body.node.var, int(self._scalar(body.value))))
            body = body.body
        blocks = [(v, n) for tag, v, n in launches if tag.startswith("blockIdx")]
        tags = [tag for tag, _, _ in launches if tag.startswith("blockIdx")]
        threads = [(v, n) for tag, v, n in launches if tag.startswith("threadIdx")]
        self.lanes = threads[0][1] if threads else 1
        self.read_mask = np.ones(self.lanes, dtype=bool)
        for v, n in threads:
            self.env[v] = np.arange(n, dtype=np.int64)
        for index in np.ndindex(*[n for _, n in blocks]):
            for (v, _), i in zip(blocks, index):
                self.env[v] = np.int64(i)
            #: this block's index by axis ("x", "y", "z"; the cluster helpers read it)
            self.block_index = {tag[-1]: i for tag, i in zip(tags, index)}
            self.local_allocs = {}
            if self.races is not None:
                self.races.new_block()
            self.stmt(body, np.ones(self.lanes, dtype=bool))

    def _scalar(self, expr):
        return self.expr(expr) if not isinstance(expr, int) else expr

    # -- statements -----------------------------------------------------------------------------
    def stmt(self, s, mask):
        kind = type(s).__name__
        if not mask.any() and kind != "AllocBuffer":
            return
        self.read_mask = mask  # inactive lanes read nothing (an out-of-bounds read would raise)
        if kind == "SeqStmt":
            for x in s.seq:
                self.stmt(x, mask)
        elif kind == "AllocBuffer":
            self._alloc(s.buffer)
        elif kind == "For":
            lo, ext = self._uniform(s.min, mask), self._uniform(s.extent, mask)
            for i in range(lo, lo + ext):
                self.env[s.loop_var] = np.int64(i)
                self.stmt(s.body, mask)
                self.read_mask = mask
        elif kind == "While":  # each lane leaves when its own condition fails (divergence)
            active = mask
            for _ in range(_MAX_WHILE_TRIPS):
                active = active & np.broadcast_to(self.expr(s.condition), (self.lanes,)).astype(bool)
                if not active.any():
                    break
                self.stmt(s.body, active)
                self.read_mask = mask
            else:
                raise RuntimeError(f"interpreter: while loop still running after {_MAX_WHILE_TRIPS} trips "
                                   f"(condition {s.condition}); the kernel would hang on the device")
        elif kind == "IfThenElse":
            cond = np.broadcast_to(self.expr(s.condition), (self.lanes,)).astype(bool)
            self.stmt(s.then_case, mask & cond)
            self.read_mask = mask
            if s.else_case is not None:
                self.stmt(s.else_case, mask & ~cond)
        elif kind == "BufferStore":
            if self.races is not None:
                self.races.where = s
            st = self.storage[s.buffer]
            flat = st.vector_elements(st.flat([self.expr(i) for i in s.indices], self.lanes))
            st.write(flat, self.expr(s.value), mask)
        elif kind == "Evaluate":
            if self.races is not None:
                self.races.where = s
            self.call(s.value, mask)
        elif kind == "AttrStmt":
            self.stmt(s.body, mask)
        elif kind == "DeclBuffer":
            self._declare_view(s)
        elif kind == "AssertStmt":  # host checks of the arguments (language/shape_vars.py)
            cond = np.broadcast_to(self.expr(s.condition), (self.lanes,)).astype(bool)
            if not cond[mask].all():
                raise ValueError("".join(str(p.value) for p in s.message_parts))
        elif kind in ("LetStmt", "Bind"):
            self.env[s.var] = self.expr(s.value)
            if hasattr(s, "body") and s.body is not None:
                self.stmt(s.body, mask)
        else:
            raise NotImplementedError(f"interpreter: statement {kind}")

    def _uniform(self, expr, mask) -> int:
        value = np.broadcast_to(self.expr(expr), (self.lanes,))
        values = set(value[mask].tolist())
        if len(values) != 1:
            raise RuntimeError(f"loop bound {expr} differs across threads")
        return int(values.pop())

    def _declare_view(self, decl):
        """A view of a global tensor or of a thread's registers (T.reshape / T.view): the same
        array, reshaped, its bytes reinterpreted where the dtype changes."""
        data = decl.data
        source = data.args[0] if isinstance(data, tirx.Call) and data.op.name == "tirx.buffer_data" else None
        if source is None or source not in self.storage:
            raise NotImplementedError(f"interpreter: a buffer declared over {data} (only views of "
                                      f"tensors, registers and the shared pool are modelled)")
        base = self.storage[source]
        if base.per_lane:  # registers: one row per lane, viewed along it
            scalar, _, vector = str(decl.buffer.ty.dtype).partition("x")
            if "bfloat16" in (scalar, base.dtype) and scalar != base.dtype:
                raise NotImplementedError("interpreter: a view changing bfloat16 to another dtype "
                                          "(bfloat16 is held as float32 here)")
            array = base.array if base.array.dtype == NP_DTYPES[scalar] else base.array.view(NP_DTYPES[scalar])
            self.storage[decl.buffer] = Storage(array, True, [int(s) for s in decl.buffer.ty.shape],
                                                dtype=scalar, vector_lanes=int(vector or 1))
            return
        dtype = str(decl.buffer.ty.dtype)
        shape = [int(s) for s in decl.buffer.ty.shape]
        tracked = {"tracker": base.tracker, "name": str(decl.buffer.name)}
        if dtype == "bfloat16" and base.array.dtype == np.uint8:  # the shared pool's
            self.storage[decl.buffer] = Storage(base.array.reshape(-1).view(np.uint16), False, shape,
                                                dtype, bf16_bits=True, **tracked)
            return
        if "bfloat16" in (dtype, str(source.ty.dtype)) and dtype != str(source.ty.dtype):
            raise NotImplementedError("interpreter: a view changing bfloat16 to another dtype "
                                      "(bfloat16 is held as float32 here)")
        array = base.array.reshape(-1)
        if array.dtype != NP_DTYPES[dtype]:
            array = array.view(NP_DTYPES[dtype])
        self.storage[decl.buffer] = Storage(array, False, shape, dtype, **tracked)

    def _alloc(self, buffer):
        scope = str(buffer.ty.storage_scope)
        size = 1
        for s in buffer.ty.shape:
            size *= int(s)
        dtype, _, vector = str(buffer.ty.dtype).partition("x")
        dt = NP_DTYPES[dtype if vector and scope.startswith("local") else str(buffer.ty.dtype)]
        if scope.startswith("local"):
            # garbage-filled, like real registers: a read before a write shows up as NaN
            size *= int(vector or 1)
            array = np.full((self.lanes, size), np.nan if np.issubdtype(dt, np.floating) else 0, dtype=dt)
            # (the shape flattens a multi-dimensional register array's indices, as codegen does)
            self.storage[buffer] = Storage(array, True, [int(s) for s in buffer.ty.shape], dtype=dtype,
                                           vector_lanes=int(vector or 1))
        else:
            # the shared byte pool starts as 0xff bytes: NaN in every float view (a read before a
            # write shows up), -1 in the integer ones
            fill = np.nan if np.issubdtype(dt, np.floating) else (255 if dt == np.uint8 and "shared" in scope else 0)
            array = np.full(size, fill, dtype=dt)
            shared = "shared" in scope
            self.storage[buffer] = Storage(array, False, [size], str(buffer.ty.dtype),
                                           tracker=self.races if shared else None, name=str(buffer.name))

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, e):
        kind = type(e).__name__
        if kind == "IntImm":
            if str(e.ty) == "uint64":  # lane masks: all 64 bits
                return np.uint64(int(e.value) & (2**64 - 1))
            return np.int64(e.value) if str(e.ty) != "bool" else np.bool_(e.value)
        if kind == "FloatImm":
            return NP_DTYPES.get(str(e.ty), np.float32)(e.value)
        if kind == "Var":
            return self.env[e]
        if kind == "TensorLoad":
            st = self.storage[e.source]
            flat = st.vector_elements(st.flat([self.expr(i) for i in e.indices], self.lanes))
            return st.read(flat, self.read_mask)
        if kind in ("And", "Or"):
            # short-circuit like C's && and ||: the right side reads memory only where it counts
            # (``i < n && x[i] > 0`` reads no x[i] past the end)
            left = np.broadcast_to(self.expr(e.a), (self.lanes,)).astype(bool)
            outer = self.read_mask
            self.read_mask = outer & (left if kind == "And" else ~left)
            right = np.broadcast_to(self.expr(e.b), (self.lanes,)).astype(bool)
            self.read_mask = outer
            return left & right if kind == "And" else left | right
        if kind in BINARY_UFUNCS:
            return BINARY_UFUNCS[kind](self.expr(e.a), self.expr(e.b))
        if kind == "Not":
            return np.logical_not(self.expr(e.a))
        if kind == "Select":
            return np.where(self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value))
        if kind == "Cast":
            return np.asarray(self.expr(e.value)).astype(np_dtype(str(e.ty)))
        if kind == "Ramp":  # vector lanes along a leading axis: shape (lanes, threads)
            base = np.broadcast_to(np.asarray(self.expr(e.base), dtype=np.int64), (self.lanes,))
            steps = np.arange(int(e.lanes), dtype=np.int64)[:, None] * np.asarray(self.expr(e.stride))
            return base[None, :] + steps
        if kind == "Broadcast":
            value = np.broadcast_to(np.asarray(self.expr(e.value)), (self.lanes,))
            return np.broadcast_to(value, (int(e.lanes), self.lanes)).copy()
        if kind == "Shuffle":  # concatenated vectors (T.atomic_addx2/x4's previous values): lanes first
            parts = [np.asarray(self.expr(v)) for v in e.vectors]
            lanes = np.concatenate([p.reshape(-1, self.lanes) if p.ndim == 2 else
                                    np.broadcast_to(p, (self.lanes,))[None, :] for p in parts])
            if len(e.indices) == 1:  # one lane (T.extract_lane): a scalar per thread
                return lanes[int(e.indices[0])]
            return lanes[[int(i) for i in e.indices]]
        if kind == "Call":
            return self.call(e, np.ones(self.lanes, dtype=bool))
        raise NotImplementedError(f"interpreter: expression {kind}: {e}")

    def pointer(self, e) -> Pointer:
        load = e.args[0]
        st = self.storage[load.source]
        return Pointer(st, st.flat([self.expr(i) for i in load.indices], self.lanes))

    # -- calls ----------------------------------------------------------------------------------
    def call(self, e, mask):
        op = str(e.op.name)
        if op == "tirx.tvm_storage_sync":
            if self.races is not None:
                self.races.barrier()
            return None
        if op == "tirx.address_of":
            return self.pointer(e)
        if op == "tirx.reinterpret":
            return reinterpret(self.expr(e.args[0]), str(e.args[0].ty), str(e.ty), self.lanes)
        if op in ("tirx.if_then_else", "prim.if_then_else"):
            # lazy like the C ternary: each branch reads memory only where it is taken
            cond = np.broadcast_to(self.expr(e.args[0]), (self.lanes,)).astype(bool)
            outer = self.read_mask
            self.read_mask = outer & cond
            then = self.expr(e.args[1])
            self.read_mask = outer & ~cond
            other = self.expr(e.args[2])
            self.read_mask = outer
            return np.where(cond, then, other)
        if op in _MATH:
            value = np.asarray(self.expr(e.args[0]))
            return _MATH[op](value.astype(np.float64)).astype(NP_DTYPES.get(str(e.ty), value.dtype))
        if op in _MATH2:
            a, b = (np.asarray(self.expr(x)) for x in e.args)
            return _MATH2[op](a.astype(np.float64), b).astype(NP_DTYPES.get(str(e.ty), a.dtype))
        if op != "tirx.call_extern":
            raise NotImplementedError(f"interpreter: call {op}")
        name = str(e.args[0].value)
        args = e.args[1:]
        if self.races is not None and name in BARRIER_HELPERS:
            self.races.barrier()
        m = re.match(r"tl_(copy|cp_async|store)_(\d+)$", name)
        if m:
            return self._copy(self.pointer(args[0]), self.pointer(args[1]), int(m.group(2)),
                              np.broadcast_to(self.expr(args[2]), (self.lanes,)).astype(bool),
                              mask, zero_fill=m.group(1) != "store",
                              deferred=self.defer_async and m.group(1) == "cp_async")
        if name == "tl_cp_async_commit":
            self.groups.append(self.open_group)
            self.open_group = []
            return None
        m = re.match(r"tl_cp_async_wait<(\d+)>$", name)
        if m:
            keep = int(m.group(1))
            while len(self.groups) > keep:
                for dst, index, value, write in self.groups.pop(0):
                    dst.write(index, value, write)
            return None
        if name.startswith("tl_atomic_"):
            return self._atomic(name, args, mask)
        if name in ("AtomicAddx2", "AtomicAddx4"):  # vector_atomic_adds.py: lane by lane, element by element
            return self._atomic_vector(int(name[-1]), args, mask)
        if name == "tl_device_assert":  # T.device_assert: the kernel stops where a lane's check fails
            ok = np.broadcast_to(self.expr(args[0]), (self.lanes,)).astype(bool)
            if not ok[mask].all():
                raise RuntimeError(f"T.device_assert failed in lanes {np.nonzero(mask & ~ok)[0].tolist()[:8]}: "
                                   f"{args[1].value}")
            return None
        if name == "tl_shfl_xor":
            value = np.broadcast_to(self.expr(args[0]), (self.lanes,))
            lane_mask = int(self.expr(args[1]))
            return value[np.arange(self.lanes) ^ lane_mask]
        from .interpreter_mbarrier import mbarrier_helper  # T.alloc_barrier's waits and arrivals
        from .interpreter_print import print_helper  # T.print
        from .interpreter_warp import warp_helper  # votes, shuffles, warp reductions, bit scans

        for model in (warp_helper, mbarrier_helper, print_helper):
            handled = model(self, name, args, mask)
            if handled is not NOT_HANDLED:
                return handled
        handled = self.device_helper(name, args, mask)
        if handled is NOT_HANDLED:
            raise NotImplementedError(f"interpreter: device helper {name} (no rule in "
                                      f"{type(self).__name__}.device_helper)")
        return handled

    def _atomic(self, name: str, args, mask):
        """``tl_atomic_<kind>`` (nothing returned), ``tl_atomic_<kind>_ret`` (the previous values)
        and ``tl_atomic_load``. Lanes go one after another, in lane order: every lane's update
        lands and each ``_ret`` lane sees the ones before it, one of the orders the hardware may
        pick. A trailing memory-order argument changes nothing here: lockstep execution is
        sequentially consistent. Expression forms take the lanes the enclosing statement and
        branches leave active (``read_mask``), not ``mask``, which expressions get all-true."""
        ptr = self.pointer(args[0])
        if ptr.storage.bf16_bits:
            raise NotImplementedError("interpreter: atomics on bfloat16 in shared memory")
        view = ptr.storage.array.reshape(-1)
        returns = name.endswith("_ret") or name == "tl_atomic_load"
        active = self.read_mask & mask if returns else mask
        lanes = np.nonzero(active)[0]
        out = np.zeros(self.lanes, dtype=view.dtype)
        if name == "tl_atomic_load":
            out[lanes] = view[ptr.index[lanes]]
            return out
        kind = name[len("tl_atomic_"):].removesuffix("_ret")
        combine = _ATOMIC_COMBINE.get(kind)
        if combine is None:
            raise NotImplementedError(f"interpreter: atomic helper {name}")
        value = np.broadcast_to(self.expr(args[1]), (self.lanes,)).astype(view.dtype)
        for lane in lanes:
            at = ptr.index[lane]
            out[lane] = view[at]
            view[at] = combine(view[at], value[lane])
        return out if returns else None

    def _atomic_vector(self, n: int, args, mask):
        """``AtomicAddx<n>(&dst[i], v0, .., v<n-1>[, order])``: dst[i + k] += vk, every lane's in
        lane order (the adds are atomic per element, as ``tl_atomic_add``'s)."""
        ptr = self.pointer(args[0])
        view = ptr.storage.array.reshape(-1)
        values = [np.broadcast_to(self.expr(a), (self.lanes,)).astype(view.dtype) for a in args[1:n + 1]]
        for lane in np.nonzero(mask)[0]:
            for k in range(n):
                view[ptr.index[lane] + k] = view[ptr.index[lane] + k] + values[k][lane]
        return None

    def device_helper(self, name: str, args, mask):
        """A backend's own helpers (matrix loads and instructions): subclasses override this and
        return NOT_HANDLED for names they do not know."""
        return NOT_HANDLED

    def whole_warps(self, mask, width: int, what: str):
        """Lane ranges of the warps (``width`` lanes) a warp-wide instruction runs on: the warps
        with an active lane (a thread group's branch leaves the others out), every lane of each
        active, as the hardware requires."""
        for w in range(0, self.lanes, width):
            lanes = np.arange(w, w + width)
            if not mask[lanes].any():
                continue
            if not mask[lanes].all():
                raise RuntimeError(f"{what} needs the whole warp of {width} lanes")
            yield lanes

    def _copy(self, dst: Pointer, src: Pointer, nbytes: int, pred, mask, zero_fill: bool,
              deferred: bool = False):
        n = nbytes // dst.storage.elem_bytes
        for k in range(n):
            value = src.storage.read(src.index + k, mask & pred)
            write = mask if zero_fill else mask & pred
            if deferred:
                self.open_group.append((dst.storage, dst.index + k, value, write))
            else:
                dst.storage.write(dst.index + k, value, write)


_MATH = {
    "tirx.exp": np.exp, "tirx.exp2": np.exp2, "tirx.log": np.log, "tirx.log2": np.log2,
    "tirx.sqrt": np.sqrt, "tirx.rsqrt": lambda x: 1 / np.sqrt(x), "tirx.tanh": np.tanh,
    "tirx.fabs": np.abs, "tirx.abs": np.abs, "tirx.sin": np.sin, "tirx.cos": np.cos,
    "tirx.sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tirx.floor": np.floor, "tirx.ceil": np.ceil,
    "tirx.isnan": np.isnan, "tirx.isinf": np.isinf, "tirx.isfinite": np.isfinite,
}
#: two-argument math, computed in float64 from the first argument (the second as it comes: ldexp's
#: exponent is an integer)
_MATH2 = {
    "tirx.copysign": lambda a, b: np.copysign(a, b.astype(np.float64)),
    "tirx.hypot": lambda a, b: np.hypot(a, b.astype(np.float64)),
    "tirx.nextafter": lambda a, b: np.nextafter(a.astype(b.dtype), b).astype(np.float64),
    "tirx.ldexp": lambda a, b: np.ldexp(a, b.astype(np.int64)),
}
# TVM names some of them prim.* where a backend's legalization rebuilt the call
_MATH.update({"prim." + name.split(".", 1)[1]: fn for name, fn in list(_MATH.items())})
_MATH2.update({"prim." + name.split(".", 1)[1]: fn for name, fn in list(_MATH2.items())})


#: tl_atomic_<kind>: the new value from the old one and the operand (numpy scalars)
_ATOMIC_COMBINE = {
    "add": lambda old, v: old + v, "max": np.maximum, "min": np.minimum, "or": np.bitwise_or,
    "and": np.bitwise_and, "xor": np.bitwise_xor, "store": lambda old, v: v,
}


def np_dtype(dtype: str):
    """The numpy type holding elements of a TVM dtype (vector dtypes: of one lane)."""
    found = NP_DTYPES.get(dtype.split("x")[0])
    if found is None:  # (float8 values the lowering left as such: the interpreter has no type)
        raise NotImplementedError(f"interpreter: no numpy type for {dtype} values")
    return found


def _device_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """Elements as the device stores them (bfloat16, held as float32 here, as its 16 bits)."""
    if dtype.startswith("bfloat16"):
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(np_dtype(dtype))


def reinterpret(value, src: str, dst: str, threads: int):
    """``T.reinterpret``: the bytes of each thread's (vector) value read as ``dst``. Vectors are
    (vector lanes, threads) arrays, scalars (threads,)."""
    value = np.asarray(value)
    vector = "x" in src
    rows = value if vector else np.broadcast_to(value, (threads,))[None, :]
    rows = np.broadcast_to(rows, (rows.shape[0], threads))
    raw = np.ascontiguousarray(_device_bits(rows, src).T)  # (threads, vector lanes): each row a value's bytes
    if dst.startswith("bfloat16"):
        out = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    else:
        out = raw.view(np_dtype(dst))
    out = out.T
    return out if "x" in dst else out[0]


def run_kernel(func: tirx.PrimFunc, args: dict) -> None:
    """Run a lowered kernel on numpy arrays (by parameter name); outputs are written in place."""
    Interpreter(func, args).run()


__all__ = ["NOT_HANDLED", "NP_DTYPES", "Interpreter", "Pointer", "Storage", "run_kernel"]
