"""The Ascend-level program: instructions of the Da Vinci core, as the lowering emits them.

One AI core = one Cube core (L1, L0A, L0B, L0C; pipes MTE2, MTE1, M, FIX) plus a Vector core
(UB; pipes MTE2, V, MTE3), each issuing from its own scalar unit (pipe S). A kernel block runs on
one AI core; the program holds one instruction stream per core (``cube``, ``vec``) with the same
control flow (loops, ifs, scalar lets), since both are derived from the same tile IR.

Operands:
- ``Tile``: a 2-D window ``rows x cols`` of a UB buffer, row-major with the buffer's padded row
  stride (every row starts on a 32-byte block, so any whole-row window is Vector-aligned).
- ``Mat``: a whole Cube-side buffer in its fractal format (L1/L0C: NZ, L0A: ZZ, L0B: ZN).
- ``GmTile``: a box of a global tensor (mins, extents); the part outside the tensor is clipped
  (ragged tiles): reads give 0, writes are dropped.
- ``Scalar``: a scalar expression (TIRX PrimExpr over block indices, loop variables and lets).

Vector instructions keep the hardware's repeat/mask model explicit but simplified: an
instruction runs ``repeat`` iterations of 256 bytes per row of its destination, the last one
masked to the valid elements (``vector_shape``); the codegen emits one count-based (level-2)
Ascend C call per row, which derives the same repeat/mask, and notes them in a comment.

Synchronization: ``SetFlag/WaitFlag(src_pipe, dst_pipe, event)`` order two pipes of one core;
``CrossSet(pipe, flag)/CrossWait(flag)`` order the Cube and Vector cores through counting flags.
The sync pass (transform/insert_sync.py) inserts them; the checker verifies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .target import VECTOR_REPEAT_BYTES

CUBE, VEC = "cube", "vec"
#: how the MTE3 / FIX write units can combine a tile into GM (SetAtomicAdd / Max / Min)
GM_ATOMICS = ("add", "max", "min")
PIPES = ("MTE1", "MTE2", "MTE3", "M", "V", "FIX", "S")
#: which memories live on which core
CORE_MEMORIES = {CUBE: ("L1", "L0A", "L0B", "L0C"), VEC: ("UB",)}
#: storage format of Cube-side matrices per memory (fractal layouts, see simulator.py)
CUBE_FORMAT = {"L1": "NZ", "L0A": "ZZ", "L0B": "ZN", "L0C": "NZ"}

_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int32": 4, "int16": 2, "int8": 1,
                "uint8": 1, "bool": 1, "float8_e4m3": 1, "float8_e5m2": 1}


def dtype_bytes(dtype: str) -> int:
    return _DTYPE_BYTES[str(dtype)]


def fractal(dtype: str) -> tuple[int, int]:
    """(rows, cols) of one fractal: 16 rows of 32 bytes (16x16 half, 16x8 float)."""
    return 16, 32 // dtype_bytes(dtype)


def fractal_of(mem: str, dtype: str) -> tuple[int, int]:
    """The fractal of a Cube-side memory: L0C always holds 16x16 accumulators (1 KiB in float32)."""
    return (16, 16) if mem == "L0C" else fractal(dtype)


def round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


@dataclass(eq=False)
class Buffer:
    """An on-chip buffer: logical ``rows x cols`` matrix of ``dtype`` in memory ``mem``.

    ``stages`` > 1 gives one copy per pipeline stage (double buffering); ``offset`` is set by
    the storage planner. UB buffers are ND with rows padded to 32 bytes; Cube-side buffers are
    fractal (``fmt``) with both dims padded to whole fractals.
    """

    name: str
    mem: str
    dtype: str
    rows: int
    cols: int
    stages: int = 1
    offset: int | None = None
    origin: str = ""  # the tile-IR buffer (or "temp"/"staging") it came from, for messages
    capacity: int | None = None  # L0A/L0B operand slots: elements, whatever matrix they hold

    @property
    def fmt(self) -> str:
        return CUBE_FORMAT.get(self.mem, "ND")

    @property
    def row_stride(self) -> int:
        """Elements between row starts (UB: padded to a 32-byte block)."""
        return round_up(self.cols, 32 // dtype_bytes(self.dtype))

    @property
    def padded(self) -> tuple[int, int]:
        """Physical (rows, cols) of one stage."""
        if self.fmt == "ND":
            return self.rows, self.row_stride
        fr, fc = fractal_of(self.mem, self.dtype)
        return round_up(self.rows, fr), round_up(self.cols, fc)

    @property
    def stage_bytes(self) -> int:
        if self.capacity is not None:
            return round_up(self.capacity * dtype_bytes(self.dtype), 512)
        r, c = self.padded
        return r * c * dtype_bytes(self.dtype)

    @property
    def nbytes(self) -> int:
        return self.stage_bytes * self.stages

    @property
    def core(self) -> str:
        return CUBE if self.mem in CORE_MEMORIES[CUBE] else VEC

    def __repr__(self) -> str:
        at = f"@{self.mem}+{self.offset}" if self.offset is not None else f"@{self.mem}"
        st = f" x{self.stages}" if self.stages > 1 else ""
        return f"{self.name}[{self.rows}x{self.cols} {self.dtype} {self.fmt}{st}]{at}"


@dataclass(eq=False)
class GmTensor:
    """A global-memory tensor: a kernel parameter, or a workspace the backend allocates.

    A workspace holds one ``per_block`` slice per block (indexed by the linear block id), since
    blocks run concurrently on different AI cores.
    """

    name: str
    shape: tuple
    dtype: str
    workspace: bool = False

    @property
    def strides(self) -> tuple:
        out, acc = [], 1
        for s in reversed(self.shape):
            out.append(acc)
            acc = acc * s
        return tuple(reversed(out))


@dataclass(eq=False)
class Scalar:
    expr: Any
    dtype: str

    def __repr__(self):
        return f"{self.expr}"


@dataclass(eq=False)
class Tile:
    """``buf[row:row+rows, col:col+cols]`` of a UB buffer, in stage ``slot`` (an expression)."""

    buf: Buffer
    rows: int
    cols: int
    row: Any = 0
    col: int = 0
    slot: Any = None

    @property
    def dtype(self) -> str:
        return self.buf.dtype

    def __repr__(self):
        s = f"[{self.slot}]" if self.slot is not None else ""
        return f"{self.buf.name}{s}[{self.row}:+{self.rows}, {self.col}:+{self.cols}]"


@dataclass(eq=False)
class Mat:
    """A whole Cube-side matrix buffer, in stage ``slot``."""

    buf: Buffer
    slot: Any = None
    rows: int | None = None  # the matrix held, when not the buffer's own shape (L0 slots)
    cols: int | None = None

    def __post_init__(self):
        if self.rows is None:
            self.rows, self.cols = self.buf.rows, self.buf.cols

    @property
    def dtype(self) -> str:
        return self.buf.dtype

    def __repr__(self):
        s = f"[{self.slot}]" if self.slot is not None else ""
        return f"{self.buf.name}{s}<{self.buf.fmt} {self.rows}x{self.cols}>"


@dataclass(eq=False)
class GmTile:
    """The box ``tensor[mins[d] : mins[d] + extents[d]]``; its non-unit dims ``row_dim`` (or
    None for a single row) and ``col_dim`` (contiguous) form the 2-D tile moved."""

    tensor: GmTensor
    mins: list
    extents: list
    row_dim: int | None
    col_dim: int
    block_slice: bool = False  # workspace: offset by the block's own slice

    @property
    def rows(self) -> int:
        return 1 if self.row_dim is None else int(self.extents[self.row_dim])

    @property
    def cols(self) -> int:
        return int(self.extents[self.col_dim])

    @property
    def dtype(self) -> str:
        return self.tensor.dtype

    def __repr__(self):
        box = ", ".join(f"{m}:+{e}" for m, e in zip(self.mins, self.extents))
        return f"{self.tensor.name}[{box}]"


# -- instructions -------------------------------------------------------------------------------
@dataclass(eq=False)
class Instr:
    """Base: an instruction of one pipe of one core. ``line`` is the user's source line."""

    def __post_init__(self):
        self.line = getattr(self, "line", None)

    pipe = "S"
    core = VEC

    def reads(self) -> list:
        return []

    def writes(self) -> list:
        return []

    def operands(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k != "line")

    def __repr__(self):
        return f"{type(self).__name__}({self.operands()})"


def _operand_list(*xs):
    return [x for x in xs if isinstance(x, (Tile, Mat, GmTile))]


@dataclass(eq=False, repr=False)
class CopyGmToL1(Instr):
    """MTE2 DataCopy with ND->NZ conversion: the part of the GM tile inside the tensor lands in
    the L1 matrix at (0, 0); the rest of the matrix is left as it was (the lowering zeroes it
    first with InitL1 when the tile may be ragged)."""

    src: GmTile
    dst: Mat
    pipe = "MTE2"
    core = CUBE

    def reads(self):
        return [self.src]

    def writes(self):
        return [self.dst]


@dataclass(eq=False, repr=False)
class InitL1(Instr):
    """MTE2 InitConstValue: zero an L1 matrix (before a ragged GM tile only partly refills it)."""

    dst: Mat
    pipe = "MTE2"
    core = CUBE

    def writes(self):
        return [self.dst]


@dataclass(eq=False, repr=False)
class LoadL1ToL0(Instr):
    """MTE1 LoadData: block ``[row0:+rows, col0:+cols]`` of an L1 NZ matrix into L0A (ZZ) or
    L0B (ZN), optionally transposed on the way (so L0 always holds A as MxK and B as KxN)."""

    src: Mat
    dst: Mat
    row0: int
    col0: int
    rows: int
    cols: int
    transpose: bool = False
    pipe = "MTE1"
    core = CUBE

    def reads(self):
        return [self.src]

    def writes(self):
        return [self.dst]


@dataclass(eq=False, repr=False)
class Mmad(Instr):
    """Cube: C[m, n] (+)= A[m, k] @ B[k, n]; ``init`` (an expression) true: C is overwritten."""

    a: Mat
    b: Mat
    c: Mat
    m: int
    n: int
    k: int
    init: Any = True
    pipe = "M"
    core = CUBE

    def reads(self):
        return [self.a, self.b, self.c]

    def writes(self):
        return [self.c]


@dataclass(eq=False, repr=False)
class Fixpipe(Instr):
    """FIX: L0C NZ -> GM ND, converting to the GM dtype, clipped to the tensor (ragged);
    ``atomic="add"|"max"|"min"`` combines into GM (split-K partial sums from several blocks)."""

    src: Mat
    dst: GmTile
    atomic: str | None = None  # GM_ATOMICS: combine into GM (SetAtomicAdd/Max/Min), not store
    pipe = "FIX"
    core = CUBE

    def reads(self):
        return [self.src]

    def writes(self):
        return [self.dst]


@dataclass(eq=False, repr=False)
class CopyGmToUb(Instr):
    """MTE2 DataCopyPad: GM tile -> UB tile (same dtype); only the part inside the tensor is
    written (the lowering zeroes the tile first with VDup when it may be ragged)."""

    src: GmTile
    dst: Tile
    pipe = "MTE2"
    core = VEC

    def reads(self):
        return [self.src]

    def writes(self):
        return [self.dst]


@dataclass(eq=False, repr=False)
class CopyUbToGm(Instr):
    """MTE3 DataCopyPad: UB tile -> GM tile (same dtype); the part past the tensor is dropped."""

    src: Tile
    dst: GmTile
    atomic: str | None = None
    pipe = "MTE3"
    core = VEC

    def reads(self):
        return [self.src]

    def writes(self):
        return [self.dst]


class VectorInstr(Instr):
    pipe = "V"
    core = VEC

    def vector_shape(self) -> tuple[int, int, int]:
        """(rows, repeats per row, mask of the last repeat) of the destination."""
        dst = self.dst
        per_repeat = VECTOR_REPEAT_BYTES // _DTYPE_BYTES[dst.dtype]
        repeats = math.ceil(dst.cols / per_repeat)
        mask = dst.cols - (repeats - 1) * per_repeat
        return dst.rows, repeats, mask

    def reads(self):
        return _operand_list(*[v for k, v in vars(self).items() if k not in ("dst", "line")])

    def writes(self):
        return [self.dst]


VECTOR_UNARY = ("copy", "exp", "exp2", "log", "sqrt", "rsqrt", "abs", "neg", "recip", "relu",
                "not")
VECTOR_BINARY = ("add", "sub", "mul", "div", "max", "min", "lt", "le", "gt", "ge", "eq", "ne",
                 "and", "or")
VECTOR_REDUCE = ("sum", "max", "min")


@dataclass(eq=False, repr=False)
class VUnary(VectorInstr):
    op: str
    dst: Tile
    src: Tile


@dataclass(eq=False, repr=False)
class VBinary(VectorInstr):
    """dst = a <op> b; either operand may be a Scalar (Adds/Muls/Maxs/... forms)."""

    op: str
    dst: Tile
    a: Any
    b: Any


@dataclass(eq=False, repr=False)
class VSelect(VectorInstr):
    """dst = mask ? a : b (mask a bool/uint8 tile; a, b tiles or scalars)."""

    dst: Tile
    mask: Tile
    a: Any
    b: Any


@dataclass(eq=False, repr=False)
class VCast(VectorInstr):
    dst: Tile
    src: Tile


@dataclass(eq=False, repr=False)
class VDup(VectorInstr):
    """Duplicate: every element of dst = value."""

    dst: Tile
    value: Scalar


@dataclass(eq=False, repr=False)
class VBroadcast(VectorInstr):
    """axis=1: dst[r, c] = src[0, r] (Brcb: a column of per-row values); axis=0: dst[r, c] =
    src[0, c] (one row repeated)."""

    dst: Tile
    src: Tile
    axis: int


@dataclass(eq=False, repr=False)
class VReduce(VectorInstr):
    """axis=1: dst[0, r] = op_c src[r, c] (WholeReduce per row); axis=0: dst[0, c] = op_r."""

    op: str
    dst: Tile
    src: Tile
    axis: int


@dataclass(eq=False, repr=False)
class VScan(VectorInstr):
    """Inclusive prefix sum. axis=1: along each row, dst[r, c] = sum(src[r, :c+1]) (the CumSum
    API on the last axis; forward only: the lowering composes a reversed row scan from a forward
    one). axis=0: down each column, dst[r, c] = sum(src[:r+1, c]), a chain of row Adds, so
    ``reverse`` (dst[r, c] = sum(src[r:, c])) is the same chain run upwards."""

    dst: Tile
    src: Tile
    axis: int
    reverse: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.axis not in (0, 1) or (self.axis == 1 and self.reverse):
            raise ValueError(f"VScan axis={self.axis} reverse={self.reverse}: the Vector unit "
                             f"scans rows forward (axis 1) or columns either way (axis 0)")


@dataclass(eq=False, repr=False)
class VArange(VectorInstr):
    """dst[r, c] = base + r * row_step + c * col_step (CreateVecIndex + Adds/Muls)."""

    dst: Tile
    base: Scalar
    row_step: int
    col_step: int


# -- synchronization ----------------------------------------------------------------------------
@dataclass(eq=False, repr=False)
class SetFlag(Instr):
    """Issued on ``src`` pipe: fires once every earlier ``src`` instruction has completed."""

    src: str
    dst: str
    event: int
    core: str = VEC

    @property
    def pipe(self):
        return self.src


@dataclass(eq=False, repr=False)
class WaitFlag(Instr):
    """Issued on ``dst`` pipe: ``dst`` waits for the matching SetFlag."""

    src: str
    dst: str
    event: int
    core: str = VEC

    @property
    def pipe(self):
        return self.dst


@dataclass(eq=False, repr=False)
class CrossSet(Instr):
    """CrossCoreSetFlag issued on ``pipe`` of ``core``: increments ``flag`` of the other core
    once every earlier instruction of that pipe has completed."""

    flag: int
    set_pipe: str
    core: str = CUBE

    @property
    def pipe(self):
        return self.set_pipe


@dataclass(eq=False, repr=False)
class CrossWait(Instr):
    """CrossCoreWaitFlag: the core stops issuing until ``flag`` is positive, then decrements."""

    flag: int
    core: str = VEC
    pipe = "S"


# -- control flow -------------------------------------------------------------------------------
@dataclass(eq=False)
class Loop:
    var: Any
    start: Any
    extent: Any
    body: list
    stages: int = 1


@dataclass(eq=False)
class If:
    cond: Any
    then: list
    orelse: list = field(default_factory=list)


@dataclass(eq=False)
class Let:
    var: Any
    value: Any


@dataclass(eq=False)
class Program:
    """A lowered kernel: per-block instruction streams plus everything they refer to."""

    name: str
    arch: str
    params: list
    workspaces: list
    grid: list  # [(block var, extent)], extents constant
    buffers: list
    body: list  # merged stream (both cores, in tile-IR order) until split_cores
    cube: list = field(default_factory=list)
    vec: list = field(default_factory=list)
    memory_use: dict = field(default_factory=dict)

    @property
    def num_blocks(self) -> int:
        return math.prod(int(e) for _, e in self.grid)

    def script(self) -> str:
        from .printer import print_program
        return print_program(self)

    def __str__(self):
        return self.script()


def walk(stmts, fn_instr, depth: int = 0):
    """Call ``fn_instr(instr, depth)`` for every instruction under ``stmts`` (program order)."""
    for s in stmts:
        if isinstance(s, Loop):
            walk(s.body, fn_instr, depth + 1)
        elif isinstance(s, If):
            walk(s.then, fn_instr, depth + 1)
            walk(s.orelse, fn_instr, depth + 1)
        elif isinstance(s, Instr):
            fn_instr(s, depth)


def instructions(stmts) -> list:
    out = []
    walk(stmts, lambda i, _d: out.append(i))
    return out
