"""A SIMT interpreter of lowered kernels, on the CPU with numpy: the kit's interpret mode.

It runs the thread-level TIRX that ``lower_simt`` produces (before TVM's passes), one block at a
time, all threads of a block in lockstep (numpy arrays over lanes, a mask for divergent ``if``s),
with the kit's device helpers implemented from their contract (tilelang_core/simt/__init__.py:
tl_copy_N, tl_store_N, tl_cp_async_*, tl_shfl_xor, tl_atomic_*). A backend subclasses
``Interpreter`` and implements its own helpers (matrix loads and instructions) in
``device_helper``, from the vendor's definition of each instruction; CI then checks the index
arithmetic of copies, swizzles, operand lane addresses, matrix fragments and reductions against
torch without a GPU.

Lockstep execution makes barriers no-ops, so it cannot find missing barriers or pipeline races;
the vendor's race checkers on the GPU do that. Async copies land when issued, unless
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

NP_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
             "bfloat16": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
             "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "bool": np.bool_}

_DEVICE_BYTES = {"bfloat16": 2}


@dataclass
class Pointer:
    """Per-lane addresses into one buffer: ``storage`` with a flat ``index`` for every lane."""

    storage: "Storage"
    index: np.ndarray


class Storage:
    """A buffer's memory: shared/global are one array; local has one row per lane."""

    def __init__(self, array: np.ndarray, per_lane: bool, shape=None, dtype: str = ""):
        self.array = array
        self.per_lane = per_lane
        self.shape = shape  # logical N-D shape (global buffers), for flattening indices
        # bytes of one element on the device: bfloat16 is held as float32 here but is 2 bytes
        # there, which is what byte-sized copies (tl_copy_16) count in
        self.elem_bytes = _DEVICE_BYTES.get(dtype, array.itemsize)

    def flat(self, indices, lanes):
        if len(indices) == 1:
            return np.broadcast_to(np.asarray(indices[0], dtype=np.int64), (lanes,)).copy()
        flat = np.zeros(lanes, dtype=np.int64)
        for i, s in zip(indices, self.shape):
            flat = flat * int(s) + np.asarray(i, dtype=np.int64)
        return flat

    def read(self, flat, mask):
        out = np.zeros(flat.shape, dtype=self.array.dtype)
        safe = np.where(mask, flat, 0)
        if self.per_lane:
            out = self.array[np.arange(flat.shape[0]), safe]
        else:
            out = self.array.reshape(-1)[safe]
        return np.where(mask, out, np.zeros((), dtype=self.array.dtype))

    def write(self, flat, value, mask):
        lanes = np.nonzero(mask)[0]
        value = np.broadcast_to(np.asarray(value), flat.shape)
        if self.per_lane:
            self.array[lanes, flat[lanes]] = value[lanes].astype(self.array.dtype)
        else:
            view = self.array.reshape(-1)
            if not np.shares_memory(view, self.array):
                raise RuntimeError("global buffers must be contiguous")
            view[flat[lanes]] = value[lanes].astype(self.array.dtype)


#: what ``Interpreter.device_helper`` returns for a helper name it does not implement
NOT_HANDLED = object()


class Interpreter:
    def __init__(self, func: tirx.PrimFunc, args: dict, *, cp_async_lands_at_wait: bool = False):
        self.func = func
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
                self.storage[param] = Storage(array, False, [int(s) for s in array.shape], str(param.ty.dtype))
                for dim, extent in zip(param.ty.shape, array.shape):
                    if isinstance(dim, tirx.Var):  # a T.dynamic size: bound by the argument
                        self.env[dim] = np.int64(extent)
            else:
                self.env[param] = np.int64(args[name])

    # -- driver ---------------------------------------------------------------------------------
    def run(self):
        launches = []
        body = self.func.body
        while isinstance(body, tirx.AttrStmt) and body.attr_key == "thread_extent":
            launches.append((str(body.node.thread_tag), body.node.var, int(self._scalar(body.value))))
            body = body.body
        blocks = [(v, n) for tag, v, n in launches if tag.startswith("blockIdx")]
        threads = [(v, n) for tag, v, n in launches if tag.startswith("threadIdx")]
        self.lanes = threads[0][1] if threads else 1
        self.read_mask = np.ones(self.lanes, dtype=bool)
        for v, n in threads:
            self.env[v] = np.arange(n, dtype=np.int64)
        for index in np.ndindex(*[n for _, n in blocks]):
            for (v, _), i in zip(blocks, index):
                self.env[v] = np.int64(i)
            self.local_allocs = {}
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
        elif kind == "IfThenElse":
            cond = np.broadcast_to(self.expr(s.condition), (self.lanes,)).astype(bool)
            self.stmt(s.then_case, mask & cond)
            self.read_mask = mask
            if s.else_case is not None:
                self.stmt(s.else_case, mask & ~cond)
        elif kind == "BufferStore":
            st = self.storage[s.buffer]
            flat = st.flat([self.expr(i) for i in s.indices], self.lanes)
            st.write(flat, self.expr(s.value), mask)
        elif kind == "Evaluate":
            self.call(s.value, mask)
        elif kind == "AttrStmt":
            self.stmt(s.body, mask)
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

    def _alloc(self, buffer):
        scope = str(buffer.ty.storage_scope)
        size = 1
        for s in buffer.ty.shape:
            size *= int(s)
        dt = NP_DTYPES[str(buffer.ty.dtype)]
        if scope.startswith("local"):
            # garbage-filled, like real registers: a read before a write shows up as NaN
            array = np.full((self.lanes, size), np.nan if np.issubdtype(dt, np.floating) else 0, dtype=dt)
            self.storage[buffer] = Storage(array, True, dtype=str(buffer.ty.dtype))
        else:
            array = np.full(size, np.nan if np.issubdtype(dt, np.floating) else 0, dtype=dt)
            self.storage[buffer] = Storage(array, False, [size], str(buffer.ty.dtype))

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, e):
        kind = type(e).__name__
        if kind == "IntImm":
            return np.int64(e.value) if str(e.ty) != "bool" else np.bool_(e.value)
        if kind == "FloatImm":
            return NP_DTYPES.get(str(e.ty), np.float32)(e.value)
        if kind == "Var":
            return self.env[e]
        if kind == "TensorLoad":
            st = self.storage[e.source]
            flat = st.flat([self.expr(i) for i in e.indices], self.lanes)
            return st.read(flat, self.read_mask)
        if kind in _BINARY:
            return _BINARY[kind](self.expr(e.a), self.expr(e.b))
        if kind == "Not":
            return np.logical_not(self.expr(e.a))
        if kind == "Select":
            return np.where(self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value))
        if kind == "Cast":
            return np.asarray(self.expr(e.value)).astype(NP_DTYPES[str(e.ty)])
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
            return None
        if op == "tirx.address_of":
            return self.pointer(e)
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
        if op != "tirx.call_extern":
            raise NotImplementedError(f"interpreter: call {op}")
        name = str(e.args[0].value)
        args = e.args[1:]
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
            ptr, value = self.pointer(args[0]), np.broadcast_to(self.expr(args[1]), (self.lanes,))
            lanes = np.nonzero(mask)[0]
            view = ptr.storage.array.reshape(-1)
            ufunc = {"tl_atomic_add": np.add, "tl_atomic_max": np.maximum, "tl_atomic_min": np.minimum}[name]
            ufunc.at(view, ptr.index[lanes], value[lanes].astype(view.dtype))  # repeated lanes all land
            return None
        if name == "tl_shfl_xor":
            value = np.broadcast_to(self.expr(args[0]), (self.lanes,))
            lane_mask = int(self.expr(args[1]))
            return value[np.arange(self.lanes) ^ lane_mask]
        handled = self.device_helper(name, args, mask)
        if handled is NOT_HANDLED:
            raise NotImplementedError(f"interpreter: device helper {name} (no rule in "
                                      f"{type(self).__name__}.device_helper)")
        return handled

    def device_helper(self, name: str, args, mask):
        """A backend's own helpers (matrix loads and instructions): subclasses override this and
        return NOT_HANDLED for names they do not know."""
        return NOT_HANDLED

    def whole_warps(self, mask, width: int, what: str):
        """Lane ranges of the warps (``width`` lanes) a warp-wide instruction runs on: every lane
        of each warp must be active, as the hardware requires."""
        for w in range(0, self.lanes, width):
            lanes = np.arange(w, w + width)
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
}


def _floordiv(a, b):
    return np.floor_divide(a, b)


_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": _floordiv,
    "FloorMod": np.mod, "Div": lambda a, b: np.true_divide(a, b) if np.issubdtype(np.asarray(a).dtype, np.floating)
    else np.trunc(np.true_divide(a, b)).astype(np.int64), "Mod": np.fmod,
    "Min": np.minimum, "Max": np.maximum, "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "And": np.logical_and,
    "Or": np.logical_or, "BitwiseXor": np.bitwise_xor, "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or,
}


def run_kernel(func: tirx.PrimFunc, args: dict) -> None:
    """Run a lowered kernel on numpy arrays (by parameter name); outputs are written in place."""
    Interpreter(func, args).run()


__all__ = ["NOT_HANDLED", "NP_DTYPES", "Interpreter", "Pointer", "Storage", "run_kernel"]
