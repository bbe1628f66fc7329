"""The artifact of a simulated build (target ``ascend+sim``): the lowered Ascend program as bytes.

Without CANN and an NPU, ``target="ascend+sim"`` still runs every stage (lowering, checker, Ascend
C); ``build`` then stores the checked program instead of a bisheng binary, and ``load`` runs it on
the functional simulator. The bytes go through the JIT driver's disk cache like any binary, so a
later process must be able to rebuild the program from them alone.

Why a pickle with our own expression encoding: the program is plain dataclasses except for the
scalar expressions (TIRX PrimExprs over block indices, loop variables and lets). TVM's
``save_json`` crashes in this TVM build, and pickling each expression on its own would turn one
loop variable into many unrelated ones. So expressions are written as small tuples with every
Var numbered once per artifact, and rebuilt with TVM's constructors on load; the program's
identity of variables is preserved.

The bytes are only ever read from the user's own kernel cache (as trusted as the shared
libraries other backends load from it).
"""

from __future__ import annotations

import io
import pickle

import tvm_ffi
from tvm import tirx

from tilelang_core.errors import CompileError

from . import isa

MAGIC = b"TILELANG-ASCEND-SIM/1\n"

_BINARY = ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "LT", "LE",
           "GT", "GE", "EQ", "NE", "And", "Or")


class _Encoder:
    def __init__(self, kernel: str):
        self.kernel = kernel
        self.vars: dict = {}

    def expr(self, e):
        kind = type(e).__name__
        if kind == "Var":
            uid = self.vars.setdefault(e, len(self.vars))
            return ("Var", uid, str(e.name), str(e.ty.dtype))
        if kind in ("IntImm", "FloatImm"):
            return (kind, str(e.ty.dtype), e.value)
        if kind in _BINARY:
            return (kind, self.expr(e.a), self.expr(e.b))
        if kind == "Not":
            return ("Not", self.expr(e.a))
        if kind == "Select":
            return ("Select", self.expr(e.condition), self.expr(e.true_value),
                    self.expr(e.false_value))
        if kind == "Cast":
            return ("Cast", str(e.ty.dtype), self.expr(e.value))
        if kind == "Call":
            return ("Call", str(e.ty.dtype), str(e.op.name), tuple(self.expr(a) for a in e.args))
        raise CompileError(f"kernel '{self.kernel}': the simulator artifact cannot store the "
                           f"scalar expression {e} ({kind}); please report this to "
                           f"tilelang-ascend with the kernel")


def _decode(tree, variables: dict):
    kind = tree[0]
    if kind == "Var":
        _, uid, name, dtype = tree
        if uid not in variables:
            variables[uid] = tirx.Var(name, dtype)
        return variables[uid]
    if kind == "IntImm":
        return tirx.IntImm(tree[1], tree[2])
    if kind == "FloatImm":
        return tirx.FloatImm(tree[1], tree[2])
    if kind in _BINARY:
        return getattr(tirx, kind)(_decode(tree[1], variables), _decode(tree[2], variables))
    if kind == "Not":
        return tirx.Not(_decode(tree[1], variables))
    if kind == "Select":
        return tirx.Select(*(_decode(t, variables) for t in tree[1:]))
    if kind == "Cast":
        return tirx.Cast(tree[1], _decode(tree[2], variables))
    if kind == "Call":
        return tirx.call_intrin(tree[1], tree[2], *(_decode(t, variables) for t in tree[3]))
    raise CompileError(f"unknown expression node {kind!r} in an Ascend simulator artifact; "
                       f"it was written by another version of tilelang-ascend: compile again")


class _Pickler(pickle.Pickler):
    def __init__(self, file, encoder: _Encoder):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.encoder = encoder

    def persistent_id(self, obj):
        if isinstance(obj, tvm_ffi.Object):
            return self.encoder.expr(obj)
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file):
        super().__init__(file)
        self.variables: dict = {}

    def persistent_load(self, pid):
        return _decode(pid, self.variables)


def dump_program(prog: isa.Program) -> bytes:
    """The checked program as artifact bytes (``load_program`` reverses it)."""
    out = io.BytesIO()
    out.write(MAGIC)
    _Pickler(out, _Encoder(prog.name)).dump(prog)
    return out.getvalue()


def is_sim_artifact(data: bytes) -> bool:
    return data.startswith(MAGIC)


def load_program(data: bytes, origin: str = "") -> isa.Program:
    if not is_sim_artifact(data):
        raise CompileError(f"{origin or 'the artifact'} is not an Ascend simulator artifact "
                           f"(it does not start with {MAGIC!r})")
    try:
        prog = _Unpickler(io.BytesIO(data[len(MAGIC):])).load()
    except Exception as exc:  # truncated or from an incompatible version: the driver rebuilds
        raise CompileError(f"cannot read the Ascend simulator artifact {origin}: "
                           f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(prog, isa.Program):
        raise CompileError(f"the Ascend simulator artifact {origin} holds a "
                           f"{type(prog).__name__}, not a program")
    return prog


__all__ = ["MAGIC", "dump_program", "load_program", "is_sim_artifact"]
