"""The hip backend's stages: tile-level TIRX -> thread-level TIRX -> HIP C++ -> code object + .so.

Lowering is the SIMT kit's (tilelang_core.simt.pipeline.lower_simt) with AMD's declarations: the
knobs ``lowering.dialect_for`` (wave64 on CDNA, wave32 on RDNA3; LDS stages for T.Pipelined), the
MFMA/WMMA gemm rule and layouts (lower_gemm.py, layouts.py) and the prelude (intrinsics.py).
Around it: the arch's element types before, its LDS limit after.

Codegen: TVM 0.27 has no HIP C++ printer, and its ``rocm`` target (LLVM) would bypass the kit's
helpers and the tvm-ffi wrapper; HIP C++ and CUDA C++ agree on kernels, so the kernels come from
TVM's CUDA printer (tilelang_core.simt.c_source) and only the declarations differ (codegen.py).
Build: clang++ (19+) compiles the device part to a code object with no HIP headers; the host
wrapper (tvm-ffi ABI, launches through the HIP module API) is compiled with the host C++ compiler
against a declaration-only HIP header (compiler.py).

Example::

    backend = HipBackend(target)             # target.arch == "gfx942"
    options = backend.make_options({})
    mod = backend.lower(prim_func, options)
    source = backend.codegen(mod, options)   # device HIP C++ + host wrapper, one text
    data = backend.build(mod, source, options, workdir)   # kernel.so embedding kernel.hsaco
"""

from __future__ import annotations

import time
from pathlib import Path

import tvm
from tvm import tirx

from tilelang_core.backend import Backend, checked_arch, lower_each
from tilelang_core.errors import LayoutError
from tilelang_core.ir.import_source import refuse_imported_sources
from tilelang_core.simt.lower_gemm_fma import fma_accumulator_layout, gemm_shape
from tilelang_core.simt.checks import check_dtypes, check_shared_memory, check_threads
from tilelang_core.simt.pipeline import lower_simt

from . import codegen, compiler
from .layouts import MatrixCore, accumulator_layout
from .lower_gemm import gemm_waves, matrix_core, uses_matrix_core
from .lowering import dialect_for
from .options import HipOptions
from .target import ARCHS, CAPABILITIES, DEFAULT_ARCH


def capability(arch: str, key: str):
    return CAPABILITIES.get(arch, {}).get(key, CAPABILITIES["*"].get(key))


class GemmLayouts:
    """The two layout functions lower_simt takes, for one matrix core (MFMA or WMMA)."""

    def __init__(self, core: MatrixCore):
        self.core = core

    def accumulator(self, op, num_threads: int):
        if not uses_matrix_core(op, self.core):
            return fma_accumulator_layout(op, num_threads)
        m, n, _ = gemm_shape(op)
        m_warp, n_warp = gemm_waves(op, self.core, num_threads)
        return accumulator_layout(self.core, m, n, m_warp, n_warp, name=str(op.C.source.name))

    def operand(self, op, name: str, num_threads: int):
        """A gemm's A from registers: the accumulator layout with whole rows per wave (the swapped
        instruction makes them the same, layouts.py), so P = softmax(S) feeds P @ V directly."""
        m, n, k = gemm_shape(op)
        if not uses_matrix_core(op, self.core):
            raise LayoutError(f"gemm {op!r} takes {name} from registers, which needs the matrix-core "
                              f"path (fp16/bf16 operands, fp32 accumulator); copy it to shared memory")
        if name != "A" or op.transpose_A:
            raise LayoutError(f"gemm operand {name} of {op!r} is in registers: only a non-transposed A "
                              f"can be; copy it to a T.alloc_shared buffer")
        m_warp, n_warp = gemm_waves(op, self.core, num_threads)
        if n_warp != 1:
            raise LayoutError(f"gemm {op!r} takes A from registers, so every wave must own whole rows "
                              f"of C: use policy=T.GemmWarpPolicy.FullRow (this split is "
                              f"{m_warp}x{n_warp} waves)")
        return accumulator_layout(self.core, m, k, m_warp, 1, name=str(op.A.source.name))


def lower_function(func: tirx.PrimFunc, arch: str, options: HipOptions) -> tirx.PrimFunc:
    refuse_imported_sources(func, "the hip backend")  # (TileLang's sources are CUDA's)
    check_dtypes(func, arch, "hip", ARCHS, capability)
    check_threads(func, arch, capability(arch, "max_threads_per_block"))
    user_func = func
    wave = capability(arch, "wave_size")
    layouts = GemmLayouts(matrix_core(wave, options.mfma))
    limit = capability(arch, "lds_bytes")
    func = lower_simt(func, dialect_for(wave, not options.disable_pipelining), options,
                      accumulator_layout=layouts.accumulator, operand_layout=layouts.operand,
                      shared_limit=limit)
    check_shared_memory(func, arch, limit, what="LDS (shared memory)", source=user_func)
    return func


class HipBackend(Backend):
    """AMD GPUs through TVM's C printer, clang and tvm-ffi (see the module docstring)."""

    kind = "hip"
    device_type = "cuda"  # torch on ROCm names its GPUs "cuda"
    entry_checks_arguments = True  # TVM's cuda_host wrapper, its device type rewritten to ROCm
    on_demand_stages = ("asm",)
    options_class = HipOptions
    binary_suffix = ".so"

    def __init__(self, target):
        super().__init__(target)
        self.timings: dict = {}
        self.last_build: compiler.BuildResult | None = None

    @property
    def arch(self) -> str:
        return checked_arch(self.target, "hip", ARCHS, DEFAULT_ARCH)

    def lower(self, func, options: HipOptions | None = None) -> tvm.IRModule:
        options = options or HipOptions()
        start = time.perf_counter()
        arch = self.arch
        mod = lower_each("hip", func, lambda f: lower_function(f, arch, options), options)
        self.timings["lower"] = time.perf_counter() - start
        return mod

    def codegen(self, mod, options: HipOptions | None = None) -> str:
        start = time.perf_counter()
        source = codegen.hip_source(mod, capability(self.arch, "matrix_unit"))
        self.timings["codegen"] = time.perf_counter() - start
        return source

    def build(self, mod, source: str, options: HipOptions | None, workdir: Path) -> bytes:
        result = compiler.build_shared_library(source, self.arch, Path(workdir), options or HipOptions())
        self.last_build = result
        self.timings.update({f"build_{k}": v for k, v in result.timings.items()})
        return result.path.read_bytes()

    def load(self, path: Path):
        from .runtime import load_module

        return load_module(path)

    def emit(self, stage: str, source: str, options: HipOptions | None, workdir: Path) -> str:
        """The code object's disassembly (llvm-objdump), for `compile --emit asm`."""
        if stage != "asm":
            return super().emit(stage, source, options, workdir)
        device = codegen.split(source).device
        code_object = compiler.compile_device(device, self.arch, Path(workdir), options or HipOptions())
        return compiler.disassemble(code_object, self.arch)

    def toolchain_version(self) -> str:
        return f"tvm-{tvm.__version__} {compiler.clang_version()} arch-{self.arch}"
