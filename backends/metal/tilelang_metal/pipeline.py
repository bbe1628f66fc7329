"""The metal backend's stages: tile-level TIRX -> thread-level TIRX -> MSL -> artifact -> kernel.

Lowering is the SIMT kit's (tilelang_core.simt.pipeline.lower_simt) with Metal's declarations:
the knobs ``lowering.METAL`` (32-lane simdgroups, synchronous copies, ``simd_shuffle_xor`` and
``simd_sum``/``simd_max``), the simdgroup_matrix gemm rule and layouts (lower_gemm.py,
layouts.py; shared operands of those gemms made row-major first), and the prelude of helpers
(intrinsics.py). Around it: dtype checks before (no float64 on Apple GPUs), the threadgroup
memory limit after, then transform.static_threadgroup (the kit's dynamic pool becomes a static
``threadgroup`` array).

Codegen is TVM's Metal codegen (codegen.py says why). ``build`` packs the MSL and its launch
parameters (kernel name, argument order, threadgroup grid) into a JSON artifact (compiler.py);
``load`` compiles it on the device through ``torch.mps.compile_shader`` (runtime.py).

Example::

    backend = MetalBackend(target)
    options = backend.make_options({})
    mod = backend.lower(prim_func, options)
    source = backend.codegen(mod, options)      # MSL
    check_msl(source)                           # clang-19 syntax/type check (check.py), no Mac
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.backend import Backend, checked_arch, lower_each
from tilelang_core.errors import LoweringError
from tilelang_core.ir.import_source import refuse_imported_sources
from tilelang_core.simt.checks import check_shared_memory, check_threads
from tilelang_core.simt.pipeline import lower_simt
from tilelang_core.simt.transform.state import thread_binding
from tilelang_core.transform.lower_tile_ops import kernel_name

from . import codegen, compiler, lower_gemm
from .lowering import METAL
from .options import MetalOptions
from .target import ARCHS, DEFAULT_ARCH, capability
from .transform import static_threadgroup


def check_dtypes(func: tirx.PrimFunc, arch: str) -> None:
    """Element types the family lacks: float64 anywhere (Apple GPUs have no double), bfloat16
    before apple9. A clear error before MSL compilation says something obscure."""
    supported = set(capability(arch, "dtypes"))
    seen = {}  # dtype -> the first parameter or buffer that has it
    for p in func.params:
        seen.setdefault(str(p.ty.dtype) if tirx.is_buffer_var(p) else str(p.ty), str(p.name))

    def on_alloc(alloc):
        seen.setdefault(str(alloc.buffer.ty.dtype), str(alloc.buffer.name))

    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, on_alloc)])
    for dt in sorted(set(seen) - supported):
        having = [a for a in ARCHS if dt in capability(a, "dtypes")]
        fix = f"target {' or '.join(having)}, or use another dtype" if having else \
            "no Apple GPU has it; use float32"
        raise LoweringError(f"kernel '{kernel_name(func)}' uses {dt} (in '{seen[dt]}'), which Metal on "
                            f"{arch} does not support: {fix}")


def lower_function(func: tirx.PrimFunc, arch: str, options: MetalOptions) -> tirx.PrimFunc:
    refuse_imported_sources(func, "the metal backend")
    check_dtypes(func, arch)
    check_threads(func, f"Metal on {arch}", capability(arch, "max_threads_per_threadgroup"), "threadgroup")
    _, num_threads = thread_binding(func, "metal")
    user_func = func
    func = lower_gemm.row_major_operands(func, int(num_threads), options)
    func = lower_simt(func, METAL, options,
                      accumulator_layout=partial(lower_gemm.accumulator_layout, options=options),
                      operand_layout=partial(lower_gemm.operand_layout, options=options))
    check_shared_memory(func, arch, capability(arch, "threadgroup_memory_bytes"), what="threadgroup memory",
                        source=user_func)
    return static_threadgroup(func)


class MetalBackend(Backend):
    """Apple GPUs through TVM's Metal codegen and torch.mps.compile_shader (module docstring)."""

    kind = "metal"
    device_type = "mps"
    options_class = MetalOptions
    binary_suffix = ".json"

    def __init__(self, target):
        super().__init__(target)
        self.timings: dict = {}

    @property
    def arch(self) -> str:
        return checked_arch(self.target, "metal", ARCHS, DEFAULT_ARCH)

    def lower(self, func, options: MetalOptions | None = None) -> tvm.IRModule:
        options = options or MetalOptions()
        start = time.perf_counter()
        arch = self.arch
        mod = lower_each("metal", func, lambda f: lower_function(f, arch, options), options)
        self.timings["lower"] = time.perf_counter() - start
        return mod

    def codegen(self, mod, options: MetalOptions | None = None) -> str:
        start = time.perf_counter()
        source = codegen.generate(mod)
        self.timings["codegen"] = time.perf_counter() - start
        return source

    def build(self, mod, source: str, options: MetalOptions | None, workdir: Path) -> bytes:
        return compiler.build_artifact(mod, source, options or MetalOptions())

    def load(self, path: Path):
        from .runtime import load_kernel

        return load_kernel(path)

    def toolchain_version(self) -> str:
        return f"tvm-{tvm.__version__} msl arch-{self.arch}"
