"""The Ascend backend's stages: tile IR -> Ascend program -> Ascend C -> bisheng binary.

Lowering, in order (transform/):
1. LowerToIsa   tile ops and T.Parallel nests -> data movement, Cube and Vector instructions in
                one merged stream; buffers placed in L1/L0A/L0B/L0C/UB (classify_buffers.py)
2. InsertSync   paired set/wait flags between pipes, cross-core flags between Cube and Vector
3. SplitCores   one stream per core, control flow replicated
4. PlanStorage  addresses within each memory's capacity and alignment
5. check        the static checker (checker.py): flags balanced, dependencies covered, buffers fit

The "lowered" stage is the Ascend program (``Program.script()`` is its text). ``codegen`` emits
Ascend C; ``build`` runs bisheng (compiler.py; needs CANN; without it a CompileError says what to
install); ``load`` goes through torch_npu (runtime.py).

The target feature ``sim`` (``target="ascend+sim"``, ``"ascend:dav-c220+sim"``, or
``TILELANG_TARGET=ascend+sim`` for unmodified scripts) keeps every stage up to the Ascend C and
swaps the last two: ``build`` stores the checked program (sim_artifact.py) and ``load`` runs it on
the functional simulator (interpreter.SimulatedKernel), on torch CPU tensors. It is a target
feature rather than an option so that the target string alone says where a kernel runs, the
cache keeps the two builds apart, and ``device_type`` (the tensors the JIT accepts) follows it.
"""

from __future__ import annotations

from pathlib import Path

import tvm

from tilelang_core.backend import Backend, check_data_races
from tilelang_core.errors import LoweringError
from tilelang_core.ir.import_source import refuse_imported_sources

from . import isa
from .options import AscendOptions
from .target import DEFAULT_ARCH, SIM_FEATURE
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

    def __init__(self, target):
        super().__init__(target)
        self.simulate = SIM_FEATURE in getattr(target, "features", ())
        if self.simulate:  # the simulator takes CPU tensors, and the JIT checks for them
            self.device_type = "cpu"

    def _arch(self, options) -> str:
        if options is not None and options.arch:
            return options.arch
        return str(getattr(self.target, "arch", None) or DEFAULT_ARCH)

    def lower(self, func, options: AscendOptions | None = None) -> isa.Program:
        options = options or AscendOptions()
        refuse_imported_sources(func, "the ascend backend")
        check_data_races(func, options)
        return lower_program(func, self._arch(options), check=options.check)

    def codegen(self, prog: isa.Program, options: AscendOptions | None = None) -> str:
        from .codegen import emit_ascend_c
        return emit_ascend_c(prog)

    def build(self, prog, source: str, options: AscendOptions | None, workdir: Path) -> bytes:
        if self.simulate:
            from .sim_artifact import dump_program
            return dump_program(prog)
        from .compiler import compile_ascend_c
        options = options or AscendOptions()
        return compile_ascend_c(source, prog, self._arch(options), Path(workdir), options.opt_level)

    def load(self, path: Path):
        data = Path(path).read_bytes()
        from .sim_artifact import is_sim_artifact
        if is_sim_artifact(data):
            from .interpreter import SimulatedKernel
            from .sim_artifact import load_program
            return SimulatedKernel(load_program(data, str(path)))
        from .runtime import load_module
        return load_module(path)

    def toolchain_version(self) -> str:
        if self.simulate:
            from .sim_artifact import MAGIC
            return "simulator " + MAGIC.decode().strip()
        from .compiler import toolchain_version
        return toolchain_version()
