"""One class per tile op: its operands, config and validity checks (see docs/tile-ir.md).

An op instance is plain data. ``to_stmt()`` builds the ``TilePrimitiveCall`` the frontend emits;
``TileOp.from_stmt(stmt)`` reads one back with typed fields, for passes and backend lowering.
Constructors check operands (shapes, scopes, dtypes, config values) and raise ``FrontendError``
without a location: the frontend adds the user's file and line.

Example::

    op = Gemm(A_shared_region, B_shared_region, C_frag_region, transpose_B=True)
    stmt = op.to_stmt()
    assert TileOp.from_stmt(stmt).transpose_B
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
from tvm.ir import TensorRegion

from ..errors import FrontendError, FrontendValueError
from . import region as R
from .registry import get_op, get_op_class, is_tile_op, register_tile_op

FRAGMENT_SCOPES = ("local.fragment",)
REGISTER_SCOPES = ("local.fragment", "local", "local.var")
SHARED_SCOPES = ("shared", "shared.dyn")

#: storage scopes a backend dialect allocates, mapped to the generic scope whose rules they follow
#: (e.g. tilelang_ascend's "ascend.l1" -> "shared.dyn"); lets a vendor scope pass the operand
#: checks below without the core naming any vendor.
SCOPE_ALIASES: dict[str, str] = {}


def register_scope_alias(scope: str, generic: str) -> None:
    """Make buffers in ``scope`` acceptable wherever ``generic`` is (``"shared.dyn"``,
    ``"local.fragment"``, ...). Registering the same pair again is a no-op."""
    if SCOPE_ALIASES.get(scope, generic) != generic:
        raise FrontendError(f"storage scope {scope!r} is already an alias of "
                            f"{SCOPE_ALIASES[scope]!r}, cannot make it one of {generic!r}")
    SCOPE_ALIASES[scope] = generic


class GemmWarpPolicy(enum.Enum):
    """How a gemm spreads its warps over the C tile (TileLang's ``T.GemmWarpPolicy``)."""

    Square = "square"
    FullRow = "full_row"
    FullCol = "full_col"

    @classmethod
    def parse(cls, value) -> GemmWarpPolicy:
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for member in cls:
                if value.lower() in (member.value, member.name.lower()):
                    return member
        raise FrontendError(f"unknown gemm policy {value!r}; use one of "
                            + ", ".join(f"T.GemmWarpPolicy.{m.name}" for m in cls))


@dataclass(eq=False)
class TileOp:
    """Base of every tile op. Subclasses set ``name`` and implement the operand mapping."""

    name: ClassVar[str] = ""

    # -- what subclasses provide -------------------------------------------------------------
    def args(self) -> list:
        """Positional operands of the TilePrimitiveCall, in the order of docs/tile-ir.md."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """Keyword options of the TilePrimitiveCall."""
        return {}

    @classmethod
    def _from_parts(cls, args: list, config: dict[str, Any]) -> TileOp:
        raise NotImplementedError

    @property
    def reads(self) -> tuple[TensorRegion, ...]:
        """Regions the op reads (for dependence and layout analysis)."""
        return ()

    @property
    def writes(self) -> tuple[TensorRegion, ...]:
        """Regions the op writes."""
        return ()

    # -- shared behaviour --------------------------------------------------------------------
    def to_stmt(self) -> tvm.tirx.TilePrimitiveCall:
        """The ``TilePrimitiveCall`` statement of this op."""
        return tvm.tirx.TilePrimitiveCall(*self.args(), op=get_op(self.name), config=self.config())

    @staticmethod
    def from_stmt(stmt) -> TileOp:
        """The typed op for a ``tl.tile.*`` TilePrimitiveCall (checked again like a new op)."""
        if not is_tile_op(stmt):
            raise TypeError(f"not a TileLang tile op: {type(stmt).__name__} "
                            f"{getattr(getattr(stmt, 'op', None), 'name', '')}")
        cls = get_op_class(str(stmt.op.name))
        config = {str(k): _from_ffi(v) for k, v in stmt.config.items()}
        return cls._from_parts(list(stmt.args), config)

    def replace(self, **changes) -> TileOp:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        parts = [R.fmt_region(a) if R.is_region(a) else str(a) for a in self.args()]
        parts += [f"{k}={v!r}" for k, v in self.config().items()]
        return f"{type(self).__name__}({', '.join(parts)})"


def _from_ffi(value):
    """Config values come back as ffi containers/strings; give plain Python values."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, tvm.tirx.IntImm):
        return int(value.value)
    return value


def _region(x, what: str) -> TensorRegion:
    region = R.to_region(x, what)
    # Global regions may run past the tensor (ragged tiles are predicated by the lowering);
    # on-chip buffers have no such slack.
    if R.scope_of(region) != "global":
        _check_in_bounds(region, what)
    return region


def _check_in_bounds(region: TensorRegion, what: str) -> None:
    shape = region.source.ty.shape
    for dim, (rng, size) in enumerate(zip(region.region, shape, strict=True)):
        lo, n, limit = R.as_int(rng.min), R.as_int(rng.extent), R.as_int(size)
        if lo is None or n is None or limit is None:
            continue
        if lo < 0 or lo + n > limit:
            ranges = ", ".join(_fmt_range(r) for r in region.region)
            raise FrontendError(
                f"{what}: the region {R.name_of(region)}[{ranges}] is out of bounds in dim "
                f"{dim} of {R.name_of(region)} with shape {R.fmt_extents(shape)}")


def _fmt_range(rng) -> str:
    lo, n = R.as_int(rng.min), R.as_int(rng.extent)
    if lo is not None and n is not None:
        return f"{lo}:{lo + n}"
    return f"{rng.min}:{rng.min} + {rng.extent}"


def _check_scope(region: TensorRegion, allowed: tuple[str, ...], what: str) -> None:
    scope = R.scope_of(region)
    if SCOPE_ALIASES.get(scope, scope) not in allowed:
        raise FrontendError(f"{what} ('{R.name_of(region)}') is in '{scope}' memory but must be in "
                            + " or ".join(f"'{s}'" for s in allowed)
                            + _scope_hint(allowed))


def _scope_hint(allowed: tuple[str, ...]) -> str:
    if allowed == FRAGMENT_SCOPES:
        return "; allocate it with T.alloc_fragment"
    return ""


def _const_int(value, what: str) -> int:
    v = R.as_int(value)
    if v is None or isinstance(value, bool):
        raise FrontendError(f"{what} must be a constant integer, got {value!r}")
    return v


def _scope_level(region) -> int:
    """TileLang's memory levels for a copy's iteration domain: global < shared < registers."""
    scope = SCOPE_ALIASES.get(R.scope_of(region), R.scope_of(region))
    return 2 if scope in ("local.fragment", "local") else 1 if scope.startswith("shared") else 0


def _narrow_to_domain(src, dst):
    """TileLang iterates a copy over the region of its lower-level side (the source when the two
    are at one level), and refuses a destination domain smaller than the source's region:
    ``T.copy(A[:, :2], B[:, :3])`` copies two columns. So when the source sets the domain and its
    region is no larger than the destination's in every non-unit dimension, the destination is
    narrowed to it from its start and (src, dst) returned; None otherwise (a destination domain
    larger than the source region would read past it, a smaller one TileLang refuses too)."""
    if _scope_level(src) < _scope_level(dst):
        return None
    src_ext = [e for e in R.extents_of(src) if R.as_int(e) != 1]
    dims = [d for d, e in enumerate(R.extents_of(dst)) if R.as_int(e) != 1]
    if len(src_ext) != len(dims):
        return None
    extents = list(R.extents_of(dst))
    for d, want in zip(dims, src_ext):
        have_i, want_i = R.as_int(extents[d]), R.as_int(want)
        if have_i is None or want_i is None or want_i > have_i:
            return None
        extents[d] = want
    return src, R.make_region(dst.source, R.mins_of(dst), extents)


@register_tile_op
@dataclass(eq=False)
class Copy(TileOp):
    """``dst = src`` over two regions with the same element count per non-unit dimension.

    Dtype conversion is implied when the dtypes differ. Extra TileLang options (e.g.
    ``disable_tma``, ``coalesced_width``) go to ``options`` and print as config.
    """

    src: TensorRegion
    dst: TensorRegion
    options: dict[str, Any] = field(default_factory=dict)
    name: ClassVar[str] = "copy"

    def __post_init__(self):
        self.src = _region(self.src, "T.copy source")
        self.dst = _region(self.dst, "T.copy destination")
        src_ext = R.squeeze(R.extents_of(self.src))
        dst_ext = R.squeeze(R.extents_of(self.dst))
        if not R.same_extents(src_ext, dst_ext):
            narrowed = _narrow_to_domain(self.src, self.dst)
            if narrowed is not None:
                self.src, self.dst = narrowed
                return
            raise FrontendError(
                f"T.copy shape mismatch: source {R.fmt_region(self.src)} has extents "
                f"{R.fmt_extents(R.extents_of(self.src))} but destination "
                f"{R.fmt_region(self.dst)} has {R.fmt_extents(R.extents_of(self.dst))} "
                "(they must agree after dropping dimensions of size 1; as in TileLang, a smaller source "
                "region may go to the start of a larger destination at the same or a higher memory level)")

    def args(self):
        return [self.src, self.dst]

    def config(self):
        return dict(self.options)

    @classmethod
    def _from_parts(cls, args, config):
        return cls(args[0], args[1], dict(config))

    @property
    def reads(self):
        return (self.src,)

    @property
    def writes(self):
        return (self.dst,)


@register_tile_op
@dataclass(eq=False)
class Fill(TileOp):
    """Set every element of ``dst`` to ``value`` (``T.clear`` is ``Fill(dst, 0)``)."""

    dst: TensorRegion
    value: Any
    name: ClassVar[str] = "fill"

    def __post_init__(self):
        self.dst = _region(self.dst, "T.fill destination")
        dtype = R.dtype_of(self.dst)
        value = self.value
        if isinstance(value, (bool, int, float)):
            value = tvm.tirx.const(value, dtype)
        elif isinstance(value, tvm.ir.Expr) and tvm.ir.is_prim_expr(value):
            if str(value.ty) != dtype:
                value = tvm.tirx.Cast(dtype, value)
        else:
            raise FrontendError(f"T.fill value must be a scalar expression, got {value!r}")
        self.value = value

    def args(self):
        return [self.dst, self.value]

    @classmethod
    def _from_parts(cls, args, config):
        return cls(args[0], args[1])

    @property
    def writes(self):
        return (self.dst,)


def _matrix_extents(region: TensorRegion, what: str) -> list:
    """The (rows, cols) of a gemm operand: leading dimensions of size 1 are dropped."""
    ext = R.extents_of(region)
    while len(ext) > 2 and R.as_int(ext[0]) == 1:
        ext = ext[1:]
    if len(ext) != 2:
        raise FrontendError(f"T.gemm operand {what} must be a 2-D tile, got {R.fmt_region(region)}")
    return ext


@register_tile_op
@dataclass(eq=False)
class Gemm(TileOp):
    """``C (+)= op(A) @ op(B)``; C is an accumulator fragment, A/B shared or fragment tiles."""

    A: TensorRegion
    B: TensorRegion
    C: TensorRegion
    transpose_A: bool = False
    transpose_B: bool = False
    policy: GemmWarpPolicy = GemmWarpPolicy.Square
    clear_accum: bool = False
    k_pack: int = 1
    wg_wait: int = 0
    #: marks a backend's passes leave for its gemm rule (cuda: warpgroups taking turns); printed
    #: as config like the fields
    options: dict[str, Any] = field(default_factory=dict)
    name: ClassVar[str] = "gemm"

    def __post_init__(self):
        self.A = _region(self.A, "T.gemm operand A")
        self.B = _region(self.B, "T.gemm operand B")
        self.C = _region(self.C, "T.gemm accumulator C")
        self.policy = GemmWarpPolicy.parse(self.policy)
        self.transpose_A = bool(self.transpose_A)
        self.transpose_B = bool(self.transpose_B)
        self.clear_accum = bool(self.clear_accum)
        self.k_pack = _const_int(self.k_pack, "T.gemm k_pack")
        self.wg_wait = _const_int(self.wg_wait, "T.gemm wg_wait")
        _check_scope(self.C, FRAGMENT_SCOPES, "T.gemm accumulator C")
        _check_scope(self.A, SHARED_SCOPES + REGISTER_SCOPES, "T.gemm operand A")
        _check_scope(self.B, SHARED_SCOPES + REGISTER_SCOPES, "T.gemm operand B")
        a = _matrix_extents(self.A, "A")
        b = _matrix_extents(self.B, "B")
        c = _matrix_extents(self.C, "C")
        m, ka = (a[1], a[0]) if self.transpose_A else (a[0], a[1])
        kb, n = (b[1], b[0]) if self.transpose_B else (b[0], b[1])
        problems = []
        if not R.same_extent(ka, kb):
            problems.append(f"K of A is {ka} but K of B is {kb}")
        if not R.same_extent(m, c[0]):
            problems.append(f"M of A is {m} but C has {c[0]} rows")
        if not R.same_extent(n, c[1]):
            problems.append(f"N of B is {n} but C has {c[1]} columns")
        if problems:
            raise FrontendError(
                "T.gemm shape mismatch: " + "; ".join(problems)
                + f" (A {R.fmt_extents(a)}{' transposed' if self.transpose_A else ''}, "
                f"B {R.fmt_extents(b)}{' transposed' if self.transpose_B else ''}, "
                f"C {R.fmt_extents(c)})")

    @property
    def mnk(self) -> tuple:
        """(M, N, K) of the product."""
        a = _matrix_extents(self.A, "A")
        b = _matrix_extents(self.B, "B")
        m, k = (a[1], a[0]) if self.transpose_A else (a[0], a[1])
        n = b[0] if self.transpose_B else b[1]
        return m, n, k

    def args(self):
        return [self.A, self.B, self.C]

    _FIELDS: ClassVar[tuple] = ("transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait")

    def config(self):
        return {"transpose_A": self.transpose_A, "transpose_B": self.transpose_B,
                "policy": self.policy.value, "clear_accum": self.clear_accum,
                "k_pack": self.k_pack, "wg_wait": self.wg_wait, **self.options}

    @classmethod
    def _from_parts(cls, args, config):
        fields = {k: v for k, v in config.items() if k in cls._FIELDS}
        return cls(*args, **fields, options={k: v for k, v in config.items() if k not in cls._FIELDS})

    @property
    def reads(self):
        return (self.A, self.B) if self.clear_accum else (self.A, self.B, self.C)

    @property
    def writes(self):
        return (self.C,)


#: bitand/bitor/bitxor take integer sources only (TileLang's T.reduce_bitand and kin)
BITWISE_REDUCE_KINDS = ("bitand", "bitor", "bitxor")
REDUCE_KINDS = ("max", "min", "sum", "abssum", "absmax") + BITWISE_REDUCE_KINDS


def bitwise_combine(kind: str, a, b):
    """``a`` combined with ``b`` by the bitwise reduction ``kind`` (every backend's and the reducers')."""
    return {"bitand": tvm.tirx.bitwise_and, "bitor": tvm.tirx.bitwise_or, "bitxor": tvm.tirx.bitwise_xor}[kind](a, b)


def bitwise_identity(kind: str, dtype: str):
    """The start value of the bitwise reduction ``kind``: every bit set for bitand, else 0."""
    if kind != "bitand":
        return tvm.tirx.const(0, dtype)
    return tvm.tirx.max_value(dtype) if dtype.startswith("uint") else tvm.tirx.const(-1, dtype)


def _normalize_dim(dim, rank: int, what: str) -> int:
    d = _const_int(dim, f"{what} dim")
    if not -rank <= d < rank:
        raise FrontendError(f"{what} dim={d} is out of range for a {rank}-D source")
    return d % rank


@register_tile_op
@dataclass(eq=False)
class Reduce(TileOp):
    """Reduce ``src`` along ``dim`` into ``dst`` (shape of src without dim, or with dim = 1).

    ``clear=False`` folds the result into dst's existing values.
    """

    src: TensorRegion
    dst: TensorRegion
    kind: str = "sum"
    dim: int = -1
    clear: bool = True
    #: max/min/absmax: a NaN element makes the result NaN (TileLang's nan_propagate=True)
    nan_propagate: bool = False
    name: ClassVar[str] = "reduce"

    def __post_init__(self):
        what = f"T.reduce_{self.kind}"
        if self.kind not in REDUCE_KINDS:
            raise FrontendError(f"unknown reduction kind {self.kind!r}; use one of {REDUCE_KINDS}")
        self.src = _region(self.src, f"{what} source")
        self.dst = _region(self.dst, f"{what} destination")
        allowed = SHARED_SCOPES + REGISTER_SCOPES
        _check_scope(self.src, allowed, f"{what} source")
        _check_scope(self.dst, allowed, f"{what} destination")
        src_ext = R.extents_of(self.src)
        self.dim = _normalize_dim(self.dim, len(src_ext), what)
        self.clear = bool(self.clear)
        self.nan_propagate = bool(self.nan_propagate)
        if self.kind in BITWISE_REDUCE_KINDS and not str(self.src.source.ty.dtype).startswith(("int", "uint")):
            raise FrontendError(f"{what} needs an integer source, got {self.src.source.ty.dtype} "
                                f"({self.src.source.name})")
        if self.nan_propagate and self.kind not in ("max", "min", "absmax"):
            raise FrontendError(f"{what}(nan_propagate=True): only max, min and absmax reductions "
                                f"propagate NaNs (a sum of a NaN is NaN already)")
        dst_ext = R.extents_of(self.dst)
        dropped = src_ext[:self.dim] + src_ext[self.dim + 1:]
        kept = src_ext[:self.dim] + [1] + src_ext[self.dim + 1:]
        if not (R.same_extents(R.squeeze(dst_ext), R.squeeze(dropped))
                or R.same_extents(dst_ext, kept)):
            raise FrontendError(
                f"{what} shape mismatch: reducing {R.fmt_region(self.src)} along dim {self.dim} "
                f"gives {R.fmt_extents(dropped)}, but destination {R.fmt_region(self.dst)} has "
                f"{R.fmt_extents(dst_ext)}")

    def args(self):
        return [self.src, self.dst]

    def config(self):
        return {"kind": self.kind, "dim": self.dim, "clear": self.clear, "nan_propagate": self.nan_propagate}

    @classmethod
    def _from_parts(cls, args, config):
        return cls(args[0], args[1], **config)

    @property
    def reads(self):
        return (self.src,) if self.clear else (self.src, self.dst)

    @property
    def writes(self):
        return (self.dst,)


#: what T.cum<kind> scans with
SCAN_KINDS = ("sum", "max")


@register_tile_op
@dataclass(eq=False)
class Cumsum(TileOp):
    """Inclusive scan of ``src`` along ``dim`` into ``dst`` (same shape; may be src): a prefix sum
    (``T.cumsum``, ``kind="sum"``) or a running maximum (``T.cummax``, ``kind="max"``)."""

    src: TensorRegion
    dst: TensorRegion
    dim: int = 0
    reverse: bool = False
    kind: str = "sum"
    name: ClassVar[str] = "cumsum"

    def __post_init__(self):
        if self.kind not in SCAN_KINDS:
            raise FrontendError(f"unknown scan kind {self.kind!r}; expected one of {', '.join(SCAN_KINDS)}")
        what = self.user_name
        self.src = _region(self.src, f"{what} source")
        self.dst = _region(self.dst, f"{what} destination")
        allowed = SHARED_SCOPES + REGISTER_SCOPES
        _check_scope(self.src, allowed, f"{what} source")
        _check_scope(self.dst, allowed, f"{what} destination")
        self.dim = _normalize_dim(self.dim, len(self.src.region), what)
        self.reverse = bool(self.reverse)
        if not R.same_extents(R.extents_of(self.src), R.extents_of(self.dst)):
            raise FrontendError(f"{what} shape mismatch: source {R.fmt_region(self.src)} and "
                                f"destination {R.fmt_region(self.dst)} must have the same extents")

    @property
    def user_name(self) -> str:
        return f"T.cum{self.kind}"

    def args(self):
        return [self.src, self.dst]

    def config(self):
        return {"dim": self.dim, "reverse": self.reverse, "kind": self.kind}

    @classmethod
    def _from_parts(cls, args, config):
        return cls(args[0], args[1], **config)

    @property
    def reads(self):
        return (self.src,)

    @property
    def writes(self):
        return (self.dst,)


#: read-modify-write kinds (``T.atomic_<kind>``); "store" is ``T.atomic_store`` (replace)
ATOMIC_KINDS = ("add", "max", "min", "or", "and", "xor", "store")
#: kinds defined on integers only
INTEGER_ATOMIC_KINDS = ("or", "and", "xor")
#: C++/CUDA memory orders, in the order of their ids (cuda::memory_order, TileLang's ids)
MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
#: the orders each access accepts (a load cannot release, a store cannot acquire)
LOAD_ORDERS = ("relaxed", "consume", "acquire", "seq_cst")
STORE_ORDERS = ("relaxed", "release", "seq_cst")


def check_memory_order(order, what: str, allowed: tuple[str, ...] = MEMORY_ORDERS) -> str:
    """``order`` (None means relaxed) as one of ``allowed``, or a FrontendError naming them."""
    if order is None:
        return "relaxed"
    if not isinstance(order, str) or order not in allowed:
        raise FrontendValueError(f"{what} does not support memory_order={order!r}; expected one of "
                            f"{', '.join(repr(o) for o in allowed)}")
    return str(order)


@register_tile_op
@dataclass(eq=False)
class Atomic(TileOp):
    """Atomically combine ``src`` (a region, or a scalar expression) into the region ``dst``.

    ``per_thread``: TileLang's thread-level atomic (an element destination and a scalar value):
    every thread that executes the statement performs it, as any other per-thread statement. A
    tile atomic (``per_thread=False``) combines each element of the tile once per block. Inside a
    T.Parallel body both mean one atomic per element of the loop.
    ``memory_order``: how the atomic orders this thread's other memory accesses (MEMORY_ORDERS).
    """

    dst: TensorRegion
    src: Any
    kind: str = "add"
    memory_order: str = "relaxed"
    per_thread: bool = False
    name: ClassVar[str] = "atomic"

    def __post_init__(self):
        what = f"T.atomic_{self.kind}"
        if self.kind not in ATOMIC_KINDS:
            raise FrontendError(f"unknown atomic kind {self.kind!r}; use one of {ATOMIC_KINDS}")
        allowed = STORE_ORDERS if self.kind == "store" else MEMORY_ORDERS
        self.memory_order = check_memory_order(self.memory_order, what, allowed)
        self.per_thread = bool(self.per_thread)
        self.dst = _region(self.dst, f"{what} destination")
        if self.kind in INTEGER_ATOMIC_KINDS and not R.dtype_of(self.dst).startswith(("int", "uint")):
            raise FrontendError(f"{what} is a bitwise atomic: its destination "
                                f"'{R.name_of(self.dst)}' must have an integer type, not "
                                f"{R.dtype_of(self.dst)}")
        src = self.src
        if R.is_region(src) or tvm.tirx.is_buffer_var(src):
            src = _region(src, f"{what} source")
            if not R.same_extents(R.squeeze(R.extents_of(src)),
                                  R.squeeze(R.extents_of(self.dst))):
                raise FrontendError(
                    f"{what} shape mismatch: source {R.fmt_region(src)} and destination "
                    f"{R.fmt_region(self.dst)} must agree after dropping dimensions of size 1")
        elif isinstance(src, (bool, int, float)):
            src = tvm.tirx.const(src, R.dtype_of(self.dst))
        elif not (isinstance(src, tvm.ir.Expr) and tvm.ir.is_prim_expr(src)):
            raise FrontendError(f"{what} value must be a buffer region or a scalar expression, "
                                f"got {src!r}")
        self.src = src

    @property
    def src_is_region(self) -> bool:
        return R.is_region(self.src)

    def args(self):
        return [self.dst, self.src]

    def config(self):
        config = {"kind": self.kind}
        # only the non-default options print: IR of relaxed tile atomics reads as before
        if self.memory_order != "relaxed":
            config["memory_order"] = self.memory_order
        if self.per_thread:
            config["per_thread"] = True
        return config

    @classmethod
    def _from_parts(cls, args, config):
        return cls(args[0], args[1], **config)

    @property
    def reads(self):
        return (self.src, self.dst) if self.src_is_region else (self.dst,)

    @property
    def writes(self):
        return (self.dst,)
