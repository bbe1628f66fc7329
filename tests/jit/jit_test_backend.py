"""A small Backend of the tests' own: plain TVM PrimFuncs built with tvm.tirx.build for llvm.

It lets the JIT tests run without the real frontend, target resolution or cpu backend. Imported by
conftest.py and by the spawned worker processes of the concurrency test.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tilelang_core.backend import Backend, BackendOptions
from tilelang_core.errors import CompileError


@dataclass(frozen=True)
class FakeTarget:
    kind: str = "llvm-test"
    arch: str = "generic"

    def __str__(self):
        return f"{self.kind}:{self.arch}"


@dataclass(frozen=True)
class FakeOptions(BackendOptions):
    opt_level: int = 3


class LlvmTestBackend(Backend):
    """Stages: lower = wrap in an IRModule; codegen = LLVM IR text; build = exported .so."""

    kind = "llvm-test"
    options_class = FakeOptions
    device_type = "cpu"
    entry_checks_arguments = True  # tvm.tirx.build's llvm wrapper; see ChecklessBackend

    def __init__(self, target=None, build_log: Path | None = None, toolchain: str = "tvm-llvm"):
        super().__init__(target or FakeTarget())
        self.build_log = build_log
        self.toolchain = toolchain
        self.builds = 0
        self.loads = 0

    def _tvm_target(self):
        import tvm

        return tvm.target.Target({"kind": "llvm"})

    def lower(self, func, options):
        import tvm

        return tvm.IRModule({str(func.attrs["global_symbol"]): func})

    def codegen(self, mod, options):
        import tvm

        return tvm.tirx.build(mod, target=self._tvm_target()).inspect_source()

    def build(self, mod, source, options, workdir):
        import tvm

        self.builds += 1
        if self.build_log is not None:
            with open(self.build_log, "a") as f:
                f.write("build\n")
        path = Path(workdir) / "k.so"
        tvm.tirx.build(mod, target=self._tvm_target()).export_library(str(path))
        return path.read_bytes()

    def load(self, path):
        import tvm_ffi

        self.loads += 1
        return tvm_ffi.load_module(str(path))

    def toolchain_version(self):
        return self.toolchain


class PythonChecksBackend(LlvmTestBackend):
    """Declares an entry function that checks nothing, so the launcher emits every check in Python
    (the path of a backend whose ``load`` returns a callable of its own); the llvm wrapper below
    still checks, but only after the Python checks passed."""

    entry_checks_arguments = False


class AlignmentCheckingBackend(LlvmTestBackend):
    """Like the cuda backend: the entry function also refuses a data pointer that is not 64-byte
    aligned (here a wrapper around the llvm one), so the launcher leaves that test to it."""

    entry_checks_alignment = True

    def lower(self, func, options):
        self.symbol = str(func.attrs["global_symbol"])
        return super().lower(func, options)

    def load(self, path):
        entry = super().load(path).get_function(self.symbol)

        def checked(*args):
            for arg in args:
                ptr = arg.data_ptr() if hasattr(arg, "data_ptr") else getattr(getattr(arg, "ctypes", None), "data", 0)
                if ptr % 64:
                    raise ValueError("data pointer is not 64-byte aligned")
            return entry(*args)

        return checked


class FailingBackend(LlvmTestBackend):
    def build(self, mod, source, options, workdir):
        raise CompileError("toolchain exploded", log="line 1: error: bad thing\nline 2: note: here",
                           command=["fakecc", "-O3", "k.c"])
