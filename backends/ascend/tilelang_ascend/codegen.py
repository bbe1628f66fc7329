"""Ascend C source for bisheng, from an Ascend program (one mixed Cube+Vector kernel).

Written against the public Ascend C API (kernel_operator.h, CANN 8.x): GlobalTensor/LocalTensor
over TBuf regions at the planner's offsets, DataCopy (Nd2NzParams) GM->L1, LoadData L1->L0A/L0B,
Mmad, Fixpipe, DataCopyPad GM<->UB, level-2 Vector calls with element counts, SetFlag/WaitFlag
<HardEvent>, CrossCoreSetFlag/CrossCoreWaitFlag. The Cube stream sits under ``if ASCEND_IS_AIC``
and the Vector stream under ``if ASCEND_IS_AIV`` of one ``KERNEL_TYPE_MIX_AIC_1_1`` kernel.

NOT COMPILED HERE: no CANN on this machine. Tests check its structure (entry point, both core
sections, every set paired with its wait); API details (parameter structs, Compare's bit masks,
Broadcast/ReduceSum signatures) need a bisheng run to confirm — see README.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import isa, simt_vf
from .scalar import C_TYPES, to_c

_TPOS = {"L1": "TPosition::A1", "L0A": "TPosition::A2", "L0B": "TPosition::B2",
         "L0C": "TPosition::CO1", "UB": "TPosition::VECCALC"}
_UNARY = {"exp": "Exp", "log": "Ln", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "abs": "Abs",
          "recip": "Reciprocal", "relu": "Relu", "not": "Not"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min",
           "and": "And", "or": "Or"}
_SCALAR_FORM = {"add": "Adds", "mul": "Muls", "max": "Maxs", "min": "Mins"}
_CMP = {"lt": "LT", "le": "LE", "gt": "GT", "ge": "GE", "eq": "EQ", "ne": "NE"}


def ctype(dtype: str) -> str:
    return C_TYPES[dtype]


class _Emitter:
    def __init__(self, prog: isa.Program):
        self.prog = prog
        self.lines: list[str] = []
        self.depth = 0
        self.ws_offset = {}
        off = 0
        for ws in prog.workspaces:
            self.ws_offset[ws.name] = off
            off = isa.round_up(off + _numel(ws.shape) * isa.dtype_bytes(ws.dtype), 512)
        self.ws_bytes = off
        # one __simt_vf__ function per SIMT loop of the Vector stream, defined before the kernel
        self.simt = {id(s): f"{prog.name}_simt_vf{k}" for k, s in enumerate(
            i for i in isa.instructions(prog.vec) if isinstance(i, simt_vf.SimtLoop))}

    def line(self, text: str = "") -> None:
        self.lines.append("  " * self.depth + text if text else "")

    # -- operands -----------------------------------------------------------------------------
    def local(self, op) -> str:
        buf = op.buf
        slot = f" + ({to_c(op.slot)}) * {buf.stage_bytes // isa.dtype_bytes(buf.dtype)}" \
            if getattr(op, "slot", None) is not None else ""
        if isinstance(op, isa.Tile):
            off = f"({to_c(op.row)}) * {buf.row_stride} + {op.col}"
            return f"{buf.name}[{off}{slot}]"
        return f"{buf.name}[0{slot}]"

    def gm(self, g: isa.GmTile) -> str:
        if g.tensor.workspace:
            return f"{g.tensor.name}_gm"
        strides = g.tensor.strides
        terms = [f"({to_c(m)}) * {s}" for m, s in zip(g.mins, strides)]
        return f"{g.tensor.name}_gm[{' + '.join(terms)}]"

    def valid(self, g: isa.GmTile, dim: int | None, full: int) -> str:
        """Elements of the tile inside the tensor along ``dim`` (ragged edge), as C."""
        if dim is None or g.tensor.workspace:
            return str(full)
        return f"tl_clip({to_c(g.mins[dim])}, {full}, {g.tensor.shape[dim]})"

    def scalar(self, x, dtype: str) -> str:
        return f"({ctype(dtype)})({to_c(x.expr)})"

    # -- statements ---------------------------------------------------------------------------
    def stream(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, isa.Loop):
                v = s.var
                self.line(f"for (int32_t {v} = {to_c(s.start)}; {v} < {to_c(s.start)} + "
                          f"{to_c(s.extent)}; ++{v}) {{" + (f"  // {s.stages} stages" if s.stages > 1 else ""))
                self.depth += 1
                self.stream(s.body)
                self.depth -= 1
                self.line("}")
            elif isinstance(s, isa.If):
                self.line(f"if ({to_c(s.cond)}) {{")
                self.depth += 1
                self.stream(s.then)
                self.depth -= 1
                if s.orelse:
                    self.line("} else {")
                    self.depth += 1
                    self.stream(s.orelse)
                    self.depth -= 1
                self.line("}")
            elif isinstance(s, isa.Let):
                self.line(f"const {ctype(str(s.var.ty.dtype))} {s.var} = {to_c(s.value)};")
            else:
                getattr(self, "i_" + type(s).__name__)(s)

    def i_SimtLoop(self, s):
        def offset(buf, slot):
            return "0" if slot is None else f"({to_c(slot)}) * {buf.stage_bytes // isa.dtype_bytes(buf.dtype)}"
        self.line(simt_vf.launch_c(s, self.simt[id(s)], offset))

    @staticmethod
    def _event(s) -> str:
        return f"EVENT_ID{s.event}" if isinstance(s.event, int) else f"(event_t)({to_c(s.event)})"

    def i_SetFlag(self, s):
        self.line(f"SetFlag<HardEvent::{s.src}_{s.dst}>({self._event(s)});")

    def i_WaitFlag(self, s):
        self.line(f"WaitFlag<HardEvent::{s.src}_{s.dst}>({self._event(s)});")

    def i_CrossSet(self, s):
        self.line(f"CrossCoreSetFlag<0x2, PIPE_{s.set_pipe}>({s.flag});")

    def i_CrossWait(self, s):
        self.line(f"CrossCoreWaitFlag({s.flag});")

    def i_CopyGmToL1(self, s):
        g = s.src
        rp, _ = s.dst.buf.padded
        rows, cols = self.valid(g, g.row_dim, g.rows), self.valid(g, g.col_dim, g.cols)
        stride = g.tensor.strides[g.row_dim] if g.row_dim is not None else g.cols
        self.line(f"DataCopy({self.local(s.dst)}, {self.gm(g)}, Nd2NzParams{{1, (uint16_t){rows}, "
                  f"(uint16_t){cols}, 0, {stride}, {rp}, 1, 0}});")

    def i_InitL1(self, s):
        blocks = s.dst.buf.stage_bytes // 512
        self.line(f"InitConstValue({self.local(s.dst)}, InitConstValueParams<{ctype(s.dst.dtype)}>"
                  f"{{1, {blocks}, 0, ({ctype(s.dst.dtype)})0}});  // ragged tile: zero first")

    def i_LoadL1ToL0(self, s):
        p = load2d_params(s)
        dst = self.local(s.dst)[:-1] + f" + i * {p.dst_cols * p.fractal_elems}]"
        start = f"{p.start} + i * {p.start_step}"
        self.line(f"for (int32_t i = 0; i < {p.dst_rows}; ++i) {{ LoadData({dst}, "
                  f"{self.local(s.src)}, LoadData2DParams{{(uint16_t)({start}), {p.dst_cols}, "
                  f"{p.src_stride}, 0, 0, {'true' if p.transpose else 'false'}, 0}}); }}")

    def i_Mmad(self, s):
        init = "true" if s.init is True else ("false" if s.init is False else f"({to_c(s.init)})")
        self.line(f"Mmad({self.local(s.c)}, {self.local(s.a)}, {self.local(s.b)}, MmadParams{{"
                  f"{s.m}, {s.n}, {s.k}, 0, false, {init}}});")

    def i_Fixpipe(self, s):
        g = s.dst
        rows, cols = self.valid(g, g.row_dim, g.rows), self.valid(g, g.col_dim, g.cols)
        stride = g.tensor.strides[g.row_dim] if g.row_dim is not None else g.cols
        quant = "QuantMode_t::F322F16" if g.dtype == "float16" else (
            "QuantMode_t::F322BF16" if g.dtype == "bfloat16" else "QuantMode_t::NoQuant")
        if s.atomic:
            self.line(f"SetAtomic{s.atomic.capitalize()}<{ctype(g.dtype)}>();")
        self.line(f"{{ FixpipeParamsV220 fp{{(uint16_t){cols}, (uint16_t){rows}, "
                  f"{s.src.buf.padded[0]}, {stride}, false}}; fp.quantPre = {quant};")
        self.line(f"  Fixpipe<{ctype(g.dtype)}, float, CFG_ROW_MAJOR>({self.gm(g)}, "
                  f"{self.local(s.src)}, fp); }}")
        if s.atomic:
            self.line("SetAtomicNone();")

    def _pad_params(self, g: isa.GmTile, tile: isa.Tile, to_ub: bool) -> str:
        rows, cols = self.valid(g, g.row_dim, g.rows), self.valid(g, g.col_dim, g.cols)
        es = isa.dtype_bytes(g.dtype)
        gm_gap = (g.tensor.strides[g.row_dim] if g.row_dim is not None else g.cols)
        ub_gap = tile.buf.row_stride * es // 32
        if to_ub:
            return (f"DataCopyExtParams{{(uint16_t){rows}, (uint32_t)({cols} * {es}), "
                    f"(uint32_t)(({gm_gap} - {cols}) * {es}), (uint32_t)({ub_gap} - "
                    f"({cols} * {es} + 31) / 32), 0}}")
        return (f"DataCopyExtParams{{(uint16_t){rows}, (uint32_t)({cols} * {es}), "
                f"(uint32_t)({ub_gap} - ({cols} * {es} + 31) / 32), "
                f"(uint32_t)(({gm_gap} - {cols}) * {es}), 0}}")

    def i_CopyGmToUb(self, s):
        g = s.src
        self.line(f"DataCopyPad({self.local(s.dst)}, {self.gm(g)}, {self._pad_params(g, s.dst, True)}, "
                  f"DataCopyPadExtParams<{ctype(g.dtype)}>{{true, 0, 0, 0}});")

    def i_CopyUbToGm(self, s):
        g = s.dst
        if s.atomic:
            self.line(f"SetAtomic{s.atomic.capitalize()}<{ctype(g.dtype)}>();")
        self.line(f"DataCopyPad({self.gm(g)}, {self.local(s.src)}, "
                  f"{self._pad_params(g, s.src, False)});")
        if s.atomic:
            self.line("SetAtomicNone();")

    def _rows(self, s, call):
        """A Vector call per destination row; ``call(row_expr)`` gives the statement."""
        rows, repeats, mask = s.vector_shape()
        note = f"  // repeat {repeats} x {rows} rows, last mask {mask}"
        if rows == 1:
            self.line(call("0") + note)
        else:
            self.line(f"for (int32_t r = 0; r < {rows}; ++r) {{ {call('r')} }}{note}")

    def _at(self, x, r):
        if isinstance(x, isa.Scalar):
            return None
        buf = x.buf
        slot = f" + ({to_c(x.slot)}) * {buf.stage_bytes // isa.dtype_bytes(buf.dtype)}" \
            if x.slot is not None else ""
        row = f"(({to_c(x.row)}) + {r})" if x.rows > 1 else f"({to_c(x.row)})"
        return f"{buf.name}[{row} * {buf.row_stride} + {x.col}{slot}]"

    def i_VUnary(self, s):
        n = s.dst.cols
        if s.op == "copy":
            self._rows(s, lambda r: f"Adds({self._at(s.dst, r)}, {self._at(s.src, r)}, "
                                    f"({ctype(s.dst.dtype)})0, {n});")
        elif s.op == "exp2":
            self._rows(s, lambda r: f"Muls({self._at(s.dst, r)}, {self._at(s.src, r)}, "
                                    f"({ctype(s.dst.dtype)})0.6931471805599453, {n}); "
                                    f"PipeBarrier<PIPE_V>(); Exp({self._at(s.dst, r)}, "
                                    f"{self._at(s.dst, r)}, {n});")
        elif s.op == "neg":
            self._rows(s, lambda r: f"Muls({self._at(s.dst, r)}, {self._at(s.src, r)}, "
                                    f"({ctype(s.dst.dtype)})-1, {n});")
        else:
            self._rows(s, lambda r: f"{_UNARY[s.op]}({self._at(s.dst, r)}, {self._at(s.src, r)}, {n});")

    def i_VBinary(self, s):
        n, t = s.dst.cols, ctype(s.dst.dtype)
        a, b = s.a, s.b
        if s.op in _CMP:
            ta = a if isinstance(a, isa.Tile) else b
            other = b if ta is a else a
            mode = _CMP[s.op] if ta is a else {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}.get(
                _CMP[s.op], _CMP[s.op])
            if isinstance(other, isa.Scalar):
                self._rows(s, lambda r: f"CompareScalar({self._at(s.dst, r)}, {self._at(ta, r)}, "
                                        f"{self.scalar(other, ta.dtype)}, CMPMODE::{mode}, {n});")
            else:
                self._rows(s, lambda r: f"Compare({self._at(s.dst, r)}, {self._at(a, r)}, "
                                        f"{self._at(b, r)}, CMPMODE::{mode}, {n});")
            return
        if isinstance(a, isa.Tile) and isinstance(b, isa.Tile):
            self._rows(s, lambda r: f"{_BINARY[s.op]}({self._at(s.dst, r)}, {self._at(a, r)}, "
                                    f"{self._at(b, r)}, {n});")
            return
        tile, sc = (a, b) if isinstance(a, isa.Tile) else (b, a)
        value = self.scalar(sc, s.dst.dtype)
        if s.op in _SCALAR_FORM:
            self._rows(s, lambda r: f"{_SCALAR_FORM[s.op]}({self._at(s.dst, r)}, "
                                    f"{self._at(tile, r)}, {value}, {n});")
        elif s.op in ("sub", "div") and tile is a:
            form, v = ("Adds", f"-{value}") if s.op == "sub" else ("Muls", f"({t})1 / {value}")
            self._rows(s, lambda r: f"{form}({self._at(s.dst, r)}, {self._at(a, r)}, {v}, {n});")
        elif s.op == "sub":  # scalar - tile
            self._rows(s, lambda r: f"Muls({self._at(s.dst, r)}, {self._at(b, r)}, ({t})-1, {n}); "
                                    f"PipeBarrier<PIPE_V>(); Adds({self._at(s.dst, r)}, "
                                    f"{self._at(s.dst, r)}, {value}, {n});")
        else:  # scalar / tile
            self._rows(s, lambda r: f"Reciprocal({self._at(s.dst, r)}, {self._at(b, r)}, {n}); "
                                    f"PipeBarrier<PIPE_V>(); Muls({self._at(s.dst, r)}, "
                                    f"{self._at(s.dst, r)}, {value}, {n});")

    def i_VSelect(self, s):
        n = s.dst.cols
        a = self._at(s.a, "r") if isinstance(s.a, isa.Tile) else None
        if isinstance(s.b, isa.Tile) and a is not None:
            self._rows(s, lambda r: f"Select({self._at(s.dst, r)}, {self._at(s.mask, r)}, "
                                    f"{self._at(s.a, r)}, {self._at(s.b, r)}, "
                                    f"SELMODE::VSEL_TENSOR_TENSOR_MODE, {n});")
        else:
            # both scalar or one: duplicate the false value, then select the true one over it
            fill = (f"Duplicate({{d}}, {self.scalar(s.b, s.dst.dtype)}, {n});"
                    if isinstance(s.b, isa.Scalar) else f"Adds({{d}}, {{b}}, ({ctype(s.dst.dtype)})0, {n});")
            tv = self.scalar(s.a, s.dst.dtype) if isinstance(s.a, isa.Scalar) else "{a}"

            def call(r):
                d = self._at(s.dst, r)
                text = fill.format(d=d, b=self._at(s.b, r) if isinstance(s.b, isa.Tile) else "")
                return (text + f" PipeBarrier<PIPE_V>(); Select({d}, {self._at(s.mask, r)}, "
                        f"{tv.format(a=self._at(s.a, r)) if '{a}' in tv else tv}, {d}, "
                        f"SELMODE::VSEL_TENSOR_SCALAR_MODE, {n});")
            self._rows(s, call)

    def i_VCast(self, s):
        mode = "RoundMode::CAST_ROUND" if isa.dtype_bytes(s.dst.dtype) < isa.dtype_bytes(s.src.dtype) \
            else "RoundMode::CAST_NONE"
        self._rows(s, lambda r: f"Cast({self._at(s.dst, r)}, {self._at(s.src, r)}, {mode}, "
                                f"{s.dst.cols});")

    def i_VDup(self, s):
        self._rows(s, lambda r: f"Duplicate({self._at(s.dst, r)}, "
                                f"{self.scalar(s.value, s.dst.dtype)}, {s.dst.cols});")

    def i_VBroadcast(self, s):
        t = ctype(s.dst.dtype)
        shape = f"{{{s.dst.rows}, {s.dst.buf.row_stride}}}"
        src_shape = f"{{{s.dst.rows}, 1}}" if s.axis == 1 else f"{{1, {s.dst.buf.row_stride}}}"
        self.line(f"{{ const uint32_t ds[2] = {shape}, ss[2] = {src_shape}; "
                  f"Broadcast<{t}, 2, {s.axis}>({self.local(s.dst)}, {self.local(s.src)}, ds, ss); }}")

    def i_VReduce(self, s):
        t = ctype(s.src.dtype)
        pattern = "AR" if s.axis == 1 else "RA"
        self.line(f"{{ uint32_t shape[2] = {{{s.src.rows}, {s.src.buf.row_stride}}}; "
                  f"Reduce{s.op.capitalize()}<{t}, Pattern::Reduce::{pattern}, true>("
                  f"{self.local(s.dst)}, {self.local(s.src)}, tl_tmp, shape, true); }}")

    def i_VScan(self, s):
        t, n, rows = ctype(s.dst.dtype), s.dst.cols, s.dst.rows
        if s.axis == 1:
            self.line(f"{{ CumSumInfo info{{{rows}, {s.dst.buf.row_stride}}}; "
                      f"CumSum<{t}, TL_CUMSUM_LAST_AXIS>({self.local(s.dst)}, {self.local(s.dst)}, "
                      f"{self.local(s.src)}, tl_tmp, info); }}")
            return
        if s.src is not s.dst:
            self._rows(s, lambda r: f"Adds({self._at(s.dst, r)}, {self._at(s.src, r)}, ({t})0, {n});")
        if rows == 1:
            return
        # one Add per row: row r += row r-1 (reverse: row r += row r+1), each after the last
        loop, prev = (f"int32_t r = {rows - 2}; r >= 0; --r", "r + 1") if s.reverse else \
            (f"int32_t r = 1; r < {rows}; ++r", "r - 1")
        self.line(f"for ({loop}) {{ PipeBarrier<PIPE_V>(); Add({self._at(s.dst, 'r')}, "
                  f"{self._at(s.dst, 'r')}, {self._at(s.dst, prev)}, {n}); }}"
                  f"  // scan down {rows} rows")

    def i_VArange(self, s):
        t, n = ctype(s.dst.dtype), s.dst.cols

        def call(r):
            d = self._at(s.dst, r)
            base = f"({t})({to_c(s.base.expr)} + {r} * {s.row_step})"
            if s.col_step == 0:
                return f"Duplicate({d}, {base}, {n});"
            text = f"CreateVecIndex({d}, ({t})0, {n}); PipeBarrier<PIPE_V>();"
            if s.col_step != 1:
                text += f" Muls({d}, {d}, ({t}){s.col_step}, {n}); PipeBarrier<PIPE_V>();"
            return text + f" Adds({d}, {d}, {base}, {n});"
        self._rows(s, call)


@dataclass(frozen=True)
class Load2D:
    """LoadData2D calls for one LoadL1ToL0: for dst fractal row i, ``dst_cols`` fractals from
    src fractal ``start + i * start_step``, stepping ``src_stride``, each transposed if
    ``transpose``; written back to back into the destination."""

    dst_rows: int
    dst_cols: int
    start: int
    start_step: int
    src_stride: int
    transpose: bool
    fractal_elems: int


def load2d_params(s: isa.LoadL1ToL0) -> Load2D:
    """L1 holds NZ (fractal (r, c) at index c * row_blocks + r); L0A wants ZZ, L0B ZN (each
    fractal transposed): the hardware transpose is on for L0B unless the source is stored
    transposed, and on for a transposed A. tests/test_ascend_codegen.py replays these
    parameters on the simulator's fractal layouts."""
    fr, fc = isa.fractal(s.src.dtype)
    src_rb = s.src.buf.padded[0] // fr
    out_rows, out_cols = (s.cols, s.rows) if s.transpose else (s.rows, s.cols)
    r0, c0 = s.row0 // fr, s.col0 // fc
    if s.transpose:  # dst block (i, t) <- src block (r0 + t, c0 + i)
        start, step, stride = c0 * src_rb + r0, src_rb, 1
    else:            # dst block (i, t) <- src block (r0 + i, c0 + t)
        start, step, stride = c0 * src_rb + r0, 1, src_rb
    return Load2D(isa.round_up(out_rows, fr) // fr, isa.round_up(out_cols, fc) // fc, start, step,
                  stride, (s.dst.buf.mem == "L0B") != s.transpose, fr * fc)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _section(em: _Emitter, core: str, stream) -> None:
    prog = em.prog
    mems = isa.CORE_MEMORIES[core]
    macro = "ASCEND_IS_AIC" if core == isa.CUBE else "ASCEND_IS_AIV"
    em.line(f"if {macro} {{")
    em.depth += 1
    for mem in mems:
        used = prog.memory_use.get(mem)
        if not used:
            continue
        em.line(f"TBuf<{_TPOS[mem]}> {mem.lower()}_buf;")
        em.line(f"pipe.InitBuffer({mem.lower()}_buf, {used});")
        em.line(f"LocalTensor<uint8_t> {mem.lower()} = {mem.lower()}_buf.Get<uint8_t>();")
    for buf in prog.buffers:
        if buf.mem in mems:
            em.line(f"LocalTensor<{ctype(buf.dtype)}> {buf.name} = {buf.mem.lower()}[{buf.offset}]"
                    f".ReinterpretCast<{ctype(buf.dtype)}>();  // {buf!r}")
    if core == isa.VEC:
        em.line("LocalTensor<uint8_t> tl_tmp;  // scratch for ReduceSum/ReduceMax/CumSum (sized by the API)")
    em.stream(stream)
    em.depth -= 1
    em.line("}")


def emit_ascend_c(prog: isa.Program) -> str:
    em = _Emitter(prog)
    name = prog.name
    em.line(f"// Generated by tilelang-ascend for {prog.arch}: kernel '{name}'.")
    em.line("// Cube stream under ASCEND_IS_AIC, Vector stream under ASCEND_IS_AIV; one block per AI core.")
    em.line('#include "kernel_operator.h"')
    em.line("using namespace AscendC;")
    em.line("")
    em.line("__aicore__ inline int32_t tl_clip(int32_t lo, int32_t n, int32_t size) {")
    em.line("  return lo >= size ? 0 : (lo + n > size ? size - lo : n);")
    em.line("}")
    em.line("")
    if any(isinstance(i, isa.VScan) and i.axis == 1 for i in isa.instructions(prog.vec)):
        em.line("constexpr CumSumConfig TL_CUMSUM_LAST_AXIS{true, false, false};  // row scans")
        em.line("")
    for instr in isa.instructions(prog.vec):
        if isinstance(instr, simt_vf.SimtLoop):
            em.lines.extend(simt_vf.function_c(instr, em.simt[id(instr)]))
    args = ", ".join([f"GM_ADDR {p.name}" for p in prog.params] + ["GM_ADDR workspace"])
    em.line(f'extern "C" __global__ __aicore__ void {name}_kernel({args}) {{')
    em.depth += 1
    em.line("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);")
    em.line("const int32_t tl_block = GetBlockIdx();")
    rest = "tl_block"
    for var, extent in prog.grid:
        em.line(f"const int32_t {var} = {rest} % {extent};")
        rest = f"({rest} / {extent})"
    for p in prog.params:
        t = ctype(p.dtype)
        em.line(f"GlobalTensor<{t}> {p.name}_gm; {p.name}_gm.SetGlobalBuffer((__gm__ {t} *){p.name});")
    for ws in prog.workspaces:
        t = ctype(ws.dtype)
        em.line(f"GlobalTensor<{t}> {ws.name}_gm; {ws.name}_gm.SetGlobalBuffer((__gm__ {t} *)"
                f"(workspace + tl_block * {em.ws_bytes} + {em.ws_offset[ws.name]}));")
    em.line("TPipe pipe;")
    _section(em, isa.CUBE, prog.cube)
    _section(em, isa.VEC, prog.vec)
    em.depth -= 1
    em.line("}")
    em.line("")
    host_args = ", ".join([f"uint8_t *{p.name}" for p in prog.params] + ["uint8_t *workspace"])
    call_args = ", ".join([p.name for p in prog.params] + ["workspace"])
    em.line("#ifndef __CCE_KT_TEST__")
    em.line(f"// Host entry the runtime calls through ctypes: {prog.num_blocks} blocks, "
            f"workspace {em.ws_bytes * prog.num_blocks} bytes.")
    em.line(f'extern "C" uint32_t {name}_workspace_bytes() {{ return {em.ws_bytes * prog.num_blocks}; }}')
    em.line(f'extern "C" uint32_t {name}_num_blocks() {{ return {prog.num_blocks}; }}')
    em.line(f'extern "C" void {name}_launch(void *stream, {host_args}) {{')
    em.line(f"  {name}_kernel<<<{prog.num_blocks}, nullptr, stream>>>({call_args});")
    em.line("}")
    em.line("#endif")
    return "\n".join(em.lines) + "\n"
