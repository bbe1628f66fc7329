"""Fragment: which thread holds which element of a register tile, and where in its registers.

A fragment layout splits every index of a tile into mixed-radix *digits* (most significant first).
Each digit goes either to the thread id or to the per-thread local index, with a stride. Extra
*replicate* digits add threads that hold copies (a row maximum shared by the 4 lanes of an mma row).
This is CuTe's shape/stride idea restricted to what register tiles need, and it makes the three
questions every lowering asks exact and cheap:

    forward:  indices -> (thread, local)                      (rewrite accesses)
    inverse:  (thread, local[, replica]) -> indices           (loop over my elements)
    reduce:   drop a dimension, its thread digits become replicas (row reductions)

Example::

    >>> f = Fragment.spread((4, 8), num_threads=8, vector=2)   # 8 threads, 2 x 2 elements each
    >>> f.num_threads, f.local_size
    (8, 4)
    >>> f.thread_of(1, 3), f.local_of(1, 3)      # flat 11 -> run 5 -> thread 5, 2nd of its pair
    (5, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from ..errors import LayoutError

THREAD = "thread"
LOCAL = "local"


@dataclass(frozen=True)
class Digit:
    """One mixed-radix digit of an index: ``extent`` values, sent to ``space`` with ``stride``."""

    extent: int
    space: str
    stride: int

    def __post_init__(self):
        if self.space not in (THREAD, LOCAL):
            raise ValueError(f"digit space must be {THREAD!r} or {LOCAL!r}, got {self.space!r}")
        if self.extent < 1 or self.stride < 0:
            raise ValueError(f"bad digit {self}")


@dataclass(frozen=True)
class Fragment:
    """A thread -> element mapping of a tile (see the module docstring).

    ``digits[d]`` lists the digits of dimension ``d``, most significant first; their extents
    multiply to ``shape[d]``. ``replica_digits`` are thread digits that no index selects (the
    copies' threads; ``replicate(n)`` is TileLang's method that adds ``n`` copies).
    """

    shape: tuple[int, ...]
    digits: tuple[tuple[Digit, ...], ...]
    replica_digits: tuple[Digit, ...] = ()
    name: str = field(default="", compare=False)

    def __post_init__(self):
        if len(self.shape) != len(self.digits):
            raise LayoutError(f"fragment {self.name or ''}: {len(self.shape)} dims but "
                              f"{len(self.digits)} digit lists")
        for d, (extent, digits) in enumerate(zip(self.shape, self.digits)):
            if math.prod(x.extent for x in digits) != extent:
                raise LayoutError(f"fragment {self.name or ''}: digits of dim {d} cover "
                                  f"{math.prod(x.extent for x in digits)} values, not {extent}")
        if any(r.space != THREAD for r in self.replica_digits):
            raise LayoutError("replicate digits must be thread digits")
        self._check_dense(THREAD)
        self._check_dense(LOCAL)

    # -- sizes ------------------------------------------------------------------------------------
    def _space_digits(self, space: str) -> list[Digit]:
        out = [x for dims in self.digits for x in dims if x.space == space]
        if space == THREAD:
            out += list(self.replica_digits)
        return out

    @property
    def num_threads(self) -> int:
        return math.prod(x.extent for x in self._space_digits(THREAD))

    @property
    def local_size(self) -> int:
        return math.prod(x.extent for x in self._space_digits(LOCAL))

    @property
    def replicas(self) -> int:
        return math.prod(x.extent for x in self.replica_digits)

    @property
    def register_run(self) -> int:
        """Consecutive registers that hold consecutive elements of the last dimension (the widest
        vector access a thread's elements allow along it)."""
        digits = [x for x in self.digits[-1] if x.extent > 1]
        return digits[-1].extent if digits and digits[-1].space == LOCAL and digits[-1].stride == 1 else 1

    @property
    def is_whole(self) -> bool:
        """Does every thread hold every element of the tile?"""
        return self.local_size == math.prod(self.shape)

    def _check_dense(self, space: str) -> None:
        """Strides of a space must form an exact mixed radix: every id in [0, size) is used once."""
        digits = sorted((x for x in self._space_digits(space) if x.extent > 1), key=lambda x: x.stride)
        expected = 1
        for x in digits:
            if x.stride != expected:
                raise LayoutError(
                    f"fragment {self.name or ''}: {space} digits are not a bijection onto "
                    f"[0, size): stride {x.stride} where {expected} was expected ({self.describe()})")
            expected *= x.extent

    # -- mapping ----------------------------------------------------------------------------------
    def _places(self, d: int) -> list[int]:
        places, p = [], 1
        for x in reversed(self.digits[d]):
            places.append(p)
            p *= x.extent
        return list(reversed(places))

    def _forward(self, space: str, indices: Sequence, replica=0):
        total = 0
        for d, index in enumerate(indices):
            for x, place in zip(self.digits[d], self._places(d)):
                if x.space == space and x.extent > 1:
                    total = total + ((index // place) % x.extent) * x.stride
        if space == THREAD and self.replica_digits:
            place = 1
            for x in reversed(self.replica_digits):
                total = total + ((replica // place) % x.extent) * x.stride
                place *= x.extent
        return total

    def thread_of(self, *indices, replica=0):
        """Thread holding element ``indices`` (ints or PrimExprs); ``replica`` picks a copy."""
        self._check_rank(indices)
        return self._forward(THREAD, indices, replica)

    def local_of(self, *indices):
        """Index of element ``indices`` in its thread's registers."""
        self._check_rank(indices)
        return self._forward(LOCAL, indices)

    def index_of(self, thread, local) -> list:
        """The element that ``thread`` holds at ``local`` (ints or PrimExprs), one per dim."""
        out = []
        for d in range(len(self.shape)):
            value = 0
            for x, place in zip(self.digits[d], self._places(d)):
                if x.extent == 1:
                    continue
                source = thread if x.space == THREAD else local
                value = value + ((source // x.stride) % x.extent) * place
            out.append(value)
        return out

    def replica_of(self, thread):
        """Which copy ``thread`` holds (0 when there is no replication)."""
        value, place = 0, 1
        for x in reversed(self.replica_digits):
            value = value + ((thread // x.stride) % x.extent) * place
            place *= x.extent
        return value

    def _check_rank(self, indices) -> None:
        if len(indices) != len(self.shape):
            raise LayoutError(f"fragment of shape {list(self.shape)} indexed with {len(indices)} indices")

    # -- derived layouts --------------------------------------------------------------------------
    def reduce(self, dim: int, keepdim: bool = False) -> Fragment:
        """The layout of a reduction of this tile along ``dim``: every thread that held part of a
        row holds the result, so the dimension's thread digits become replicate digits, and its
        local digits disappear (registers are renumbered densely, keeping their order)."""
        dim = dim % len(self.shape)
        dropped = self.digits[dim]
        replicate = tuple(self.replica_digits) + tuple(x for x in dropped if x.space == THREAD)
        kept = [list(ds) for i, ds in enumerate(self.digits) if i != dim]
        shape = [s for i, s in enumerate(self.shape) if i != dim]
        kept = _renumber_local(kept)
        if keepdim:
            kept.insert(dim, [Digit(1, LOCAL, 0)])
            shape.insert(dim, 1)
        return Fragment(tuple(shape), tuple(tuple(ds) for ds in kept), replicate,
                        name=f"{self.name}.reduce({dim})" if self.name else "")

    def reshape(self, shape: Sequence[int]) -> Fragment:
        """The layout of this tile seen with another ``shape`` of as many elements (``T.reshape``
        of a fragment): element ``k`` in row-major order stays in the same thread and register.
        The digits, read as one mixed-radix number over the flat index, are regrouped at the new
        dimensions' boundaries, splitting a digit where a boundary falls inside it; a boundary that
        cuts a digit into parts that do not divide it (6 threads on a dimension of 4) cannot be
        expressed and is refused."""
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != math.prod(self.shape):
            raise LayoutError(f"fragment {self.name or ''} of shape {list(self.shape)} cannot be "
                              f"reshaped to {list(shape)}: the element counts differ")
        flat = [x for dims in self.digits for x in dims if x.extent > 1]
        dims: list[tuple[Digit, ...]] = []
        for extent in reversed(shape):
            need, mine = extent, []
            while need > 1:
                x = flat.pop()
                take = math.gcd(x.extent, need)
                if take == 1:
                    raise LayoutError(
                        f"fragment {self.name or ''} ({self.describe()}) cannot be reshaped to "
                        f"{list(shape)}: a dimension of {extent} would cut a digit of {x.extent} "
                        f"{x.space} values unevenly; use a shape whose dimensions follow the layout")
                mine.insert(0, Digit(take, x.space, x.stride))
                if take < x.extent:
                    flat.append(Digit(x.extent // take, x.space, x.stride * take))
                need //= take
            dims.insert(0, tuple(mine) or (Digit(1, LOCAL, 0),))
        return Fragment(shape, tuple(dims), self.replica_digits, name=self.name)

    def permute(self, order: Sequence[int]) -> Fragment:
        """The same mapping with dimensions reordered: dimension ``k`` of the result is dimension
        ``order[k]`` of this one (a tile read transposed, ``f[j, i]`` in a loop over ``i, j``)."""
        order = [int(o) for o in order]
        if sorted(order) != list(range(len(self.shape))):
            raise LayoutError(f"fragment {self.name or ''}: {order} is not a permutation of its "
                              f"{len(self.shape)} dimensions")
        return Fragment(tuple(self.shape[o] for o in order), tuple(self.digits[o] for o in order),
                        self.replica_digits, name=self.name)

    def broadcast(self, dims: Sequence[int], extents: Sequence[int]) -> Fragment:
        """The layout of a loop over ``extents`` whose dimensions ``dims`` (in order) index this
        tile, every thread running the elements it holds (a row statistic ``m[i]`` read in a loop
        over ``i, j``). The loop's other dimensions are split among this tile's replicas where
        they divide the innermost such dimension (each replica holds the element too), else kept
        replicated; the rest of them run in registers."""
        dims, extents = [int(d) for d in dims], [int(e) for e in extents]
        if sorted(dims) != dims or len(set(dims)) != len(dims) or \
                [extents[d] for d in dims] != list(self.shape):
            raise LayoutError(f"fragment {self.name or ''} of shape {list(self.shape)} cannot be "
                              f"read as dims {dims} of a loop over {extents}")
        missing = [k for k in range(len(extents)) if k not in dims]
        replicas = [x for x in self.replica_digits if x.extent > 1]
        total = math.prod(x.extent for x in replicas)
        split = next((k for k in reversed(missing) if total > 1 and extents[k] % total == 0), None)
        # new registers take the low numbers, innermost loop dimension first: consecutive j
        # values land in consecutive registers (a vector store when the loop writes a row)
        new_local, stride = {}, 1
        for k in reversed(missing):
            extent = extents[k] // total if k == split else extents[k]
            new_local[k] = Digit(extent, LOCAL, stride if extent > 1 else 0)
            stride *= extent
        digits = []
        for k in range(len(extents)):
            if k in dims:
                digits.append(tuple(Digit(x.extent, LOCAL, x.stride * stride) if x.space == LOCAL
                                    and x.extent > 1 else x for x in self.digits[dims.index(k)]))
            elif k == split:
                digits.append(tuple(replicas) + (new_local[k],))
            else:
                digits.append((new_local[k],))
        return Fragment(tuple(extents), tuple(digits), () if split is not None else self.replica_digits,
                        name=self.name)

    def canonical(self) -> Fragment:
        """The same mapping with adjacent digits of a dimension merged where one continues the
        other (same space, the higher's stride = the lower's stride x extent): two layouts map
        alike exactly when their canonical forms are equal."""
        dims = []
        for ds in self.digits:
            merged: list[Digit] = []
            for x in ds:
                if x.extent == 1:
                    continue
                if merged and merged[-1].space == x.space and merged[-1].stride == x.stride * x.extent:
                    hi = merged.pop()
                    x = Digit(hi.extent * x.extent, x.space, x.stride)
                merged.append(x)
            dims.append(tuple(merged) or (Digit(1, LOCAL, 0),))
        # which copy is which does not change where the copies are: replicate digits by stride,
        # merged where one continues another (16t@1 x 8t@16 holds the copies 128t@1 does: a
        # reduction's replicas and a broadcast's, TileKernels' swiglu cast)
        replicate: list[Digit] = []
        for x in sorted((x for x in self.replica_digits if x.extent > 1), key=lambda x: x.stride):
            if replicate and replicate[-1].stride * replicate[-1].extent == x.stride:
                low = replicate.pop()
                x = Digit(low.extent * x.extent, THREAD, low.stride)
            replicate.append(x)
        replicate = tuple(reversed(replicate))
        return Fragment(self.shape, tuple(dims), replicate, name=self.name)

    # -- TileLang's layout algebra (tilelang.layout.Fragment's methods) ----------------------------
    def repeat(self, repeats: Sequence[int], repeat_on_thread: bool = False,
               lower_dim_first: bool = True) -> Fragment:
        """This layout tiled ``repeats[d]`` times along each dimension ``d``: element ``i`` of a
        dimension is element ``i % shape[d]`` of copy ``i // shape[d]``. The copies, numbered in
        mixed radix over the dimensions (the last one fastest with ``lower_dim_first``, else the
        first), go to new threads above the existing ones (``repeat_on_thread``) or to new
        registers above the existing ones. TileLang builds mma layouts this way (an 8x8 base,
        repeated over a warp's tiles, then over the block's warps on threads).

        Example::

            base = T.Fragment((8, 8), forward_fn=lambda i, j: (i * 4 + j // 2, j % 2))
            warp = base.repeat([2, 2], repeat_on_thread=False, lower_dim_first=False)  # 16 x 16
        """
        repeats = [int(r) for r in repeats]
        if len(repeats) != len(self.shape) or any(r < 1 for r in repeats):
            raise LayoutError(f"Fragment.repeat: repeats must be {len(self.shape)} positive integers (one per "
                              f"dimension of {list(self.shape)}), got {repeats}")
        space = THREAD if repeat_on_thread else LOCAL
        stride = self.num_threads if repeat_on_thread else self.local_size
        order = reversed(range(len(repeats))) if lower_dim_first else range(len(repeats))
        top = {}
        for d in order:
            top[d] = Digit(repeats[d], space, stride if repeats[d] > 1 else 0)
            stride *= repeats[d]
        digits = tuple((top[d],) + tuple(ds) for d, ds in enumerate(self.digits))
        shape = tuple(n * r for n, r in zip(self.shape, repeats))
        return Fragment(shape, digits, self.replica_digits, name=self.name).canonical()

    def replicate(self, count: int) -> Fragment:
        """This layout held by ``count`` times the threads: copy ``c`` on threads ``c *
        num_threads + t`` (TileLang's ``Fragment.replicate``)."""
        count = int(count)
        if count < 1:
            raise LayoutError(f"Fragment.replicate: the count must be a positive integer, got {count}")
        if count == 1:
            return self
        copies = (Digit(count, THREAD, self.num_threads),) + tuple(self.replica_digits)
        return Fragment(self.shape, self.digits, copies, name=self.name)

    def condense_rep_var(self) -> Fragment:
        """TileLang's normalization of the replica variable: the replicate digits here are already
        their own mixed radix, so this is the canonical form of the same mapping."""
        return self.canonical()

    def get_thread_size(self) -> int:
        """Threads the layout spans, replicas included (TileLang's ``get_thread_size``)."""
        return self.num_threads

    def map_forward_thread(self, indices: Sequence):
        """The thread of element ``indices`` (TileLang's spelling of ``thread_of``)."""
        return self.thread_of(*indices)

    def is_equal(self, other: Fragment) -> bool:
        """Whether both map every element to the same thread and register (and the same copies)."""
        return isinstance(other, Fragment) and self.canonical() == other.canonical()

    # -- constructors -----------------------------------------------------------------------------
    @staticmethod
    def replicated(shape: Sequence[int], num_threads: int, name: str = "") -> Fragment:
        """Every thread holds the whole tile, its registers in row-major order."""
        shape = tuple(int(s) for s in shape)
        digits, stride = [], 1
        for extent in reversed(shape):
            digits.insert(0, (Digit(extent, LOCAL, stride if extent > 1 else 0),))
            stride *= extent
        replicate = (Digit(num_threads, THREAD, 1),) if num_threads > 1 else ()
        return Fragment(shape, tuple(digits), replicate, name=name)

    @staticmethod
    def spread(shape: Sequence[int], num_threads: int, vector: int = 1, name: str = "") -> Fragment:
        """Threads dealt over the tile innermost dimension first, each holding runs of ``vector``
        consecutive elements of the last dimension (one 16-byte access when vector * size = 16).

        Dimension by dimension from the last: ``gcd(extent, threads left)`` threads split it, the
        rest of it stays in each thread's registers. Every tile shape works (no power-of-two or
        divisibility demands); threads left over at the end hold replicas. Registers are numbered
        vector first, then along the last dimension, then the earlier ones.
        """
        shape = tuple(int(s) for s in shape)
        if not shape:
            raise LayoutError("cannot spread a 0-d tile")
        if vector < 1 or shape[-1] % vector:
            vector = 1
        threads_left, thread_stride = num_threads, 1
        per_dim: list[tuple[int, int, int]] = []  # (outer registers, threads, vector) per dim
        for d in reversed(range(len(shape))):
            inner = vector if d == len(shape) - 1 else 1
            extent = shape[d] // inner
            used = math.gcd(extent, threads_left)
            per_dim.insert(0, (extent // used, used, inner))
            threads_left //= used
        digits: list[tuple[Digit, ...]] = [()] * len(shape)
        local_stride = vector
        for d in reversed(range(len(shape))):
            outer, used, inner = per_dim[d]
            ds = [Digit(outer, LOCAL, local_stride if outer > 1 else 0),
                  Digit(used, THREAD, thread_stride if used > 1 else 0)]
            if inner > 1:
                ds.append(Digit(inner, LOCAL, 1))
            local_stride *= outer
            thread_stride *= used
            digits[d] = tuple(x for x in ds if x.extent > 1) or (Digit(1, LOCAL, 0),)
        replicate = (Digit(threads_left, THREAD, thread_stride),) if threads_left > 1 else ()
        return Fragment(shape, tuple(digits), replicate, name=name)

    def describe(self) -> str:
        parts = []
        for d, ds in enumerate(self.digits):
            parts.append(f"i{d}:" + "x".join(f"{x.extent}{'t' if x.space == THREAD else 'l'}"
                                             f"@{x.stride}" for x in ds))
        if self.replica_digits:
            parts.append("rep:" + "x".join(f"{x.extent}t@{x.stride}" for x in self.replica_digits))
        return " ".join(parts)

    @staticmethod
    def from_description(text: str, name: str = "") -> Fragment:
        """The Fragment that ``describe()`` wrote as ``text`` (a layout carried in a tile op's
        config, where only plain values travel).

        >>> f = Fragment.spread((4, 8), num_threads=8, vector=2)
        >>> Fragment.from_description(f.describe()) == f
        True
        """
        def digit(word: str) -> Digit:
            extent, _, stride = word.partition("@")
            return Digit(int(extent[:-1]), THREAD if extent.endswith("t") else LOCAL, int(stride))

        dims, replicate = [], ()
        for part in text.split():
            label, _, body = part.partition(":")
            digits = tuple(digit(w) for w in body.split("x"))
            if label == "rep":
                replicate = digits
            else:
                dims.append(digits)
        shape = tuple(math.prod(x.extent for x in ds) for ds in dims)
        return Fragment(shape, tuple(dims), replicate, name=name)

    def __repr__(self) -> str:
        label = f"{self.name} " if self.name else ""
        return (f"Fragment({label}shape={list(self.shape)}, threads={self.num_threads}, "
                f"local={self.local_size}, replicas={self.replicas}; {self.describe()})")

    def table(self, max_cols: int = 16, max_rows: int = 16) -> str:
        """A text picture of a 2-D fragment: ``T<thread>:<local>`` per element (replica 0)."""
        if len(self.shape) != 2:
            raise LayoutError("table() draws 2-D fragments only")
        rows = []
        for i in range(min(self.shape[0], max_rows)):
            cells = [f"T{self.thread_of(i, j)}:{self.local_of(i, j)}"
                     for j in range(min(self.shape[1], max_cols))]
            rows.append(" ".join(f"{c:>8}" for c in cells))
        return "\n".join(rows)


def _renumber_local(dims: list[list[Digit]]) -> list[list[Digit]]:
    """Give the local digits of ``dims`` dense strides, keeping their relative order."""
    local = sorted(((x.stride, d, k) for d, ds in enumerate(dims) for k, x in enumerate(ds)
                    if x.space == LOCAL and x.extent > 1))
    stride = 1
    out = [list(ds) for ds in dims]
    for _, d, k in local:
        x = out[d][k]
        out[d][k] = Digit(x.extent, LOCAL, stride)
        stride *= x.extent
    for d, ds in enumerate(out):
        out[d] = [Digit(1, LOCAL, 0) if (x.space == LOCAL and x.extent == 1) else x for x in ds]
    return out
