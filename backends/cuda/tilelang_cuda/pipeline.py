"""The cuda backend's stages: tile-level TIRX -> thread-level TIRX -> CUDA C++ -> .so -> module.

Lowering, in order (transform/ and tilelang_core/transform/):

1. infer_layouts       fragment layouts (gemm accumulators from mma.sync, then propagation)
   block_swizzle       T.use_swizzle -> panel-ordered block indices
2. software_pipeline   T.Pipelined -> multi-stage cp.async pipeline (staged shared buffers)
3. insert_barriers     __syncthreads where shared accesses of different threads conflict
4. LowerTileOps        tile ops -> per-thread code (rules in lowering.py, lower_gemm.py, ...)
5. lower_parallel      T.Parallel nests -> per-thread register loops
6. apply_layouts       fragments -> registers, shared -> flat swizzled arrays, scratch allocated
7. VerifyNoTileOps, shared memory limit check

Codegen is TVM's CUDA codegen (cuda_host route), build is compiler.build_shared_library.

Example::

    backend = CudaBackend(target)            # target.arch == "sm_90a"
    options = backend.make_options({})
    mod = backend.lower(prim_func, options)
    source = backend.codegen(mod, options)   # one .cu: kernels + tvm-ffi wrapper
    data = backend.build(mod, source, options, workdir)
    kernel = backend.load(workdir / "kernel.so")
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from pathlib import Path

import tvm
from tvm import tirx

from tilelang_core.backend import Backend, as_ir_module
from tilelang_core.errors import CompileError, LayoutError, LoweringError
from tilelang_core.layout import Fragment
from tilelang_core.lowering import LoweringContext
from tilelang_core.transform.layout_inference import infer_layouts
from tilelang_core.transform.lower_tile_ops import kernel_name, lower_tile_ops
from tilelang_core.transform.instrumented import run_pass
from tilelang_core.transform.verify_no_tile_ops import verify_no_tile_ops

from tilelang_core.simt import lowering as _rules  # noqa: F401  (registers the rules)
from tilelang_core.simt.transform.apply_layouts import annotated_layouts
from tilelang_core.simt.transform import (KernelState, apply_layouts, block_swizzle, insert_barriers,
                                          lower_parallel, software_pipeline, thread_binding)

from . import codegen, compiler
from .layouts import mma_accumulator_layout
from .lower_gemm import gemm_shape, gemm_warps, uses_mma
from .options import CudaOptions
from .runtime import load_module
from .target import ARCHS, CAPABILITIES, DEFAULT_ARCH

@dataclass
class CudaLoweringContext(LoweringContext):
    """The core context plus this kernel's KernelState (threads, layouts, register buffers)."""

    state: Any = None


def capability(arch: str, key: str):
    return CAPABILITIES.get(arch, {}).get(key, CAPABILITIES["*"].get(key))


def accumulator_layout(op, num_threads: int):
    """mma.sync's accumulator layout on the tensor-core path; a spread layout for the FMA path."""
    m, n, _ = gemm_shape(op)
    if not uses_mma(op):
        return Fragment.spread((m, n), num_threads, 1, name=str(op.C.source.name))
    m_warp, n_warp = gemm_warps(op, num_threads)
    return mma_accumulator_layout(m, n, m_warp, n_warp, name=str(op.C.source.name))


def operand_layout(op, name: str, num_threads: int):
    """Registers holding gemm operand A: the mma.sync A fragments of each warp's rows, which is
    exactly an accumulator layout with one warp column (FlashAttention's P @ V without a trip
    through shared memory: the fp16 copy of one gemm's accumulator feeds the next gemm)."""
    m, n, k = gemm_shape(op)
    if not uses_mma(op):
        raise LayoutError(f"gemm {op!r} takes {name} from registers, which needs the tensor-core "
                          f"path (fp16/bf16 operands, fp32 accumulator); copy it to shared memory")
    if name != "A" or op.transpose_A:
        raise LayoutError(f"gemm operand {name} of {op!r} is in registers: only a non-transposed A "
                          f"can be; copy it to a T.alloc_shared buffer")
    m_warp, n_warp = gemm_warps(op, num_threads)
    if n_warp != 1:
        raise LayoutError(f"gemm {op!r} takes A from registers, so every warp must own whole rows "
                          f"of C: use policy=T.GemmWarpPolicy.FullRow (this split is "
                          f"{m_warp}x{n_warp} warps)")
    return mma_accumulator_layout(m, k, m_warp, 1, name=str(op.A.source.name))


def check_dtypes(func: tirx.PrimFunc, arch: str) -> None:
    """Element types the arch lacks (fp8 before Ada): a clear error before nvcc says something
    obscure. The table is target.CAPABILITIES[arch]["dtypes"]."""
    import tvm_ffi

    supported = set(capability(arch, "dtypes"))
    seen = {str(p.ty.dtype) for p in func.params if tirx.is_buffer_var(p)}
    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, lambda a: seen.add(str(a.buffer.ty.dtype)))])
    for dt in sorted(seen - supported):
        having = [a for a in ARCHS if dt in capability(a, "dtypes")]
        hint = f"it needs {' or '.join(having)}" if having else "no cuda arch supports it"
        raise LoweringError(f"kernel '{kernel_name(func)}' uses {dt}, which {arch} does not "
                            f"support ({hint}). Pick another target arch or dtype.")


def shared_bytes(func: tirx.PrimFunc) -> int:
    total = 0

    def on_alloc(alloc):
        nonlocal total
        buf = alloc.buffer
        if str(buf.ty.storage_scope).startswith("shared"):
            size = tvm.runtime.DataType(str(buf.ty.dtype)).bits // 8
            for s in buf.ty.shape:
                size *= int(s)
            total += size

    import tvm_ffi

    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, on_alloc)])
    return total


def _on_body(transform):
    """A pass over a kernel body (``transform(body, *args) -> body``) as one over the PrimFunc."""
    def run(func, *args, **kwargs):
        return func.with_body(transform(func.body, *args, **kwargs))

    return run


def lower_function(func: tirx.PrimFunc, arch: str, options: CudaOptions) -> tirx.PrimFunc:
    name = kernel_name(func)
    check_dtypes(func, arch)
    tx, num_threads = thread_binding(func)
    layouts = infer_layouts(func, num_threads, accumulator_layout, operand_layout=operand_layout)
    st = KernelState(kernel=name, thread_var=tx, num_threads=num_threads, layouts=layouts,
                     arch=arch, options=options)
    for buffer, layout in layouts.items():
        st.locals[buffer] = tirx.decl_buffer((layout.local_size,), str(buffer.ty.dtype),
                                             name=str(buffer.name), scope="local")
    body, st.annotated = annotated_layouts(func.body, name)
    func = func.with_body(body)
    # run_pass: plain calls, except under TILELANG_DUMP_IR, where each is dumped and timed
    func = run_pass("cuda.BlockSwizzle", _on_body(block_swizzle), func)
    func = run_pass("cuda.SoftwarePipeline", _on_body(software_pipeline), func,
                    use_async=not options.disable_cp_async)
    func = run_pass("cuda.InsertBarriers", _on_body(insert_barriers), func)
    # lower_tile_ops binds the loop ranges and bound values into st.analyzer (via ctx) first
    ctx = CudaLoweringContext(backend_kind="cuda", kernel=name, analyzer=st.analyzer,
                              options=options, state=st)
    func = run_pass("cuda.LowerTileOps", lower_tile_ops, func, "cuda", options, context=ctx)
    func = run_pass("cuda.LowerParallel", _on_body(lower_parallel), func, st)
    func = run_pass("cuda.ApplyLayouts", _on_body(apply_layouts), func, st, st.annotated)
    func = run_pass("cuda.VerifyNoTileOps", verify_no_tile_ops, func, "cuda")
    limit = capability(arch, "max_shared_memory_per_block")
    used = shared_bytes(func)
    if limit is not None and used > limit:
        raise LoweringError(f"kernel '{name}' needs {used} bytes of shared memory, more than the "
                            f"{limit} bytes {arch} allows per block. Use smaller tiles or fewer "
                            f"pipeline stages (num_stages).")
    return func


class CudaBackend(Backend):
    """NVIDIA GPUs through TVM's CUDA codegen, nvcc and tvm-ffi (see the module docstring)."""

    kind = "cuda"
    device_type = "cuda"
    on_demand_stages = ("ptx", "sass")
    options_class = CudaOptions
    binary_suffix = ".so"

    def __init__(self, target):
        super().__init__(target)
        self.timings: dict = {}
        self.last_build: compiler.BuildResult | None = None

    @property
    def arch(self) -> str:
        arch = getattr(self.target, "arch", None) or DEFAULT_ARCH
        if arch not in ARCHS:
            raise CompileError(f"cuda arch {arch!r} is not supported; use one of {', '.join(ARCHS)}")
        return arch

    def lower(self, func, options: CudaOptions | None = None) -> tvm.IRModule:
        options = options or CudaOptions()
        start = time.perf_counter()
        mod = as_ir_module(func)
        out = {}
        for gvar, f in mod.functions.items():
            if not isinstance(f, tirx.PrimFunc):
                raise LoweringError(f"the cuda backend lowers PrimFuncs only, got {type(f).__name__}")
            out[gvar] = lower_function(f, self.arch, options)
        self.timings["lower"] = time.perf_counter() - start
        return tvm.IRModule(out)

    def codegen(self, mod, options: CudaOptions | None = None) -> str:
        start = time.perf_counter()
        lib = codegen.build_tvm_module(mod, self.arch)
        source = codegen.export_source(lib)
        self.timings["codegen"] = time.perf_counter() - start
        return source

    def build(self, mod, source: str, options: CudaOptions | None, workdir: Path) -> bytes:
        options = options or CudaOptions()
        result = compiler.build_shared_library(source, self.arch, Path(workdir), options)
        self.last_build = result
        self.timings.update({f"build_{k}": v for k, v in result.timings.items()})
        return result.path.read_bytes()

    def load(self, path: Path):
        return load_module(path)

    def emit(self, stage: str, source: str, options: CudaOptions | None, workdir: Path) -> str:
        """PTX or SASS of the kernel's device code (the library embeds the cubin, not its text)."""
        options = options or CudaOptions()
        device = codegen.split_source(source).device
        if stage == "ptx":
            return compiler.compile_ptx(device, self.arch, workdir, options)
        if stage == "sass":
            if compiler.find_cuobjdump() is None:
                raise CompileError("SASS needs cuobjdump: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm "
                                   "(or a CUDA toolkit with cuobjdump on PATH)")
            cubin, _, _ = compiler.compile_device(device, self.arch, Path(workdir), options)
            return compiler.sass(cubin)
        return super().emit(stage, source, options, workdir)

    def toolchain_version(self) -> str:
        from . import nvrtc

        return f"tvm-{tvm.__version__} {compiler.nvcc_version()} {nvrtc.version()} arch-{self.arch}"
