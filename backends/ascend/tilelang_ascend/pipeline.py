"""The Ascend backend's stages: tile IR -> Ascend program -> Ascend C -> bisheng binary.

Lowering, in order (transform/):
1. LowerToIsa   tile ops and T.Parallel nests -> data movement, Cube and Vector instructions in
                one merged stream; buffers placed in L1/L0A/L0B/L0C/UB (classify_buffers.py)
2. InsertSync   paired set/wait flags between pipes, cross-core flags between Cube and Vector
3. SplitCores   one stream per core, control flow replicated
4. PlanStorage  addresses within each memory's capacity and alignment
5. check        the static checker (checker.py): flags balanced, dependencies covered, buffers fit

The "lowered" stage is the Ascend program (``Program.script()`` is its text). ``codegen`` emits
Ascend C; ``build`` runs bisheng (compiler.py; needs CANN); ``load`` goes through torch_npu
(runtime.py). None of the last three can run on a machine without CANN and an NPU: the tests
run the program on the simulator instead (interpreter.py).

Not registered in _plugin.py yet: the lead decides when ``target="ascend"`` gets this backend.
"""

from __future__ import annotations

from pathlib import Path

import tvm

from tilelang_core.backend import Backend
from tilelang_core.errors import LoweringError

from . import isa
from .options import AscendOptions
from .target import DEFAULT_ARCH
from .transform import insert_sync, lower_to_isa, plan_storage, split_cores


def _single_func(func):
    if isinstance(func, tvm.IRModule):
        funcs = list(func.functions.items())
        if len(funcs) != 1:
            raise LoweringError(f"the Ascend backend lowers one kernel per module, got "
                                f"{len(funcs)}")
        return funcs[0][1]
    return func


def kernel_name(func) -> str:
    attrs = func.attrs
    name = attrs.get("global_symbol") if attrs is not None else None
    return str(name) if name is not None else "main"


def lower_program(func, arch: str = DEFAULT_ARCH, check: bool = True) -> isa.Program:
    """A tile-IR PrimFunc -> the checked Ascend program for ``arch``."""
    func = _single_func(func)
    prog = lower_to_isa(func, kernel_name(func), arch)
    prog = insert_sync(prog)
    prog = split_cores(prog)
    prog = plan_storage(prog)
    if check:
        from .checker import check_program
        check_program(prog)
    return prog


class AscendBackend(Backend):
    """Huawei Ascend NPUs through Ascend C and bisheng.

    Example (what runs here without CANN)::

        backend = AscendBackend(target)
        prog = backend.lower(prim_func, backend.make_options())
        print(prog.script())                  # the Ascend program
        print(backend.codegen(prog, None))    # Ascend C source
    """

    kind = "ascend"
    device_type = "npu"
    options_class = AscendOptions
    binary_suffix = ".so"

    def _arch(self, options) -> str:
        if options is not None and options.arch:
            return options.arch
        return str(getattr(self.target, "arch", None) or DEFAULT_ARCH)

    def lower(self, func, options: AscendOptions | None = None) -> isa.Program:
        options = options or AscendOptions()
        return lower_program(func, self._arch(options), check=options.check)

    def codegen(self, prog: isa.Program, options: AscendOptions | None = None) -> str:
        from .codegen import emit_ascend_c
        return emit_ascend_c(prog)

    def build(self, prog, source: str, options: AscendOptions | None, workdir: Path) -> bytes:
        from .compiler import compile_ascend_c
        options = options or AscendOptions()
        return compile_ascend_c(source, prog, self._arch(options), Path(workdir), options.opt_level)

    def load(self, path: Path):
        from .runtime import load_module
        return load_module(path)

    def toolchain_version(self) -> str:
        from .compiler import toolchain_version
        return toolchain_version()
