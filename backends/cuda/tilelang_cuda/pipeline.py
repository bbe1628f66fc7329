"""The cuda backend's stages: tile-level TIRX -> thread-level TIRX -> CUDA C++ -> .so -> module.

Lowering is the SIMT kit's (tilelang_core.simt.pipeline.lower_simt: layouts, block swizzle,
cp.async software pipeline, barriers, tile-op rules, T.Parallel, shared/register layouts) with
CUDA's declarations: the knobs ``lowering.CUDA`` (32-lane warps, cp.async unless
``disable_cp_async``), the mma.sync gemm rule and layouts (lower_gemm.py, layouts.py), and the
prelude of helpers (intrinsics.py). Around it: the arch's dtypes before, its shared memory
limit after.

A program of several ``T.Kernel`` blocks and ``T.alloc_global`` workspaces is lowered kernel by
kernel and stitched back (tilelang_core.transform.program_kernels): the host wrapper allocates each
workspace on the launch stream before the first kernel (stream-ordered, hopper/intrinsics.py's
scratch memory), launches the kernels in order on that stream and frees the workspaces after the
last.

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
import warnings
from dataclasses import replace
from functools import partial
from pathlib import Path

import tvm
from tvm import tirx

from tilelang_core.backend import Backend, checked_arch, lower_each
from tilelang_core.errors import CompileError, LayoutError, PerformanceWarning
from tilelang_core.ir.import_source import imported_sources
from tilelang_core.simt.lower_gemm_fma import fma_accumulator_layout
from tilelang_core.simt.checks import check_dtypes, check_shared_memory, check_threads
from tilelang_core.simt.pipeline import lower_simt
from tilelang_core.transform.program_kernels import lower_program, workspace_bytes

from . import codegen, compiler
from .hopper.planner import HopperPlanner
from .hopper.wgmma import wgmma_accumulator_layout, wgmma_operand_layout
from .hopper.intrinsics import scratch_statements, with_kernel_attributes
from .intrinsics import with_on_demand_helpers
from .transform import fast_divide, fast_exp2
from .transform.stage_epilogue import stage_epilogue
from .unroll_pragmas import mark_unroll_factors, with_unroll_pragmas
from .vector_atomics import vector_atomic_adds
from .layouts import mma_a_operand_layout, mma_accumulator_layout
from .lower_gemm import gemm_shape, gemm_warps
from .lowering import CUDA
from .mma import select_mma
from .options import CudaOptions
from .runtime import load_module
from .target import ARCHS, DEFAULT_ARCH, capability


def accumulator_layout(op, num_threads: int, planner: HopperPlanner):
    """wgmma's accumulator layout where the gemm runs on wgmma (sm_90a), else mma.sync's on the
    tensor-core path (one layout for every mma.sync instruction, mma.py), else a spread layout
    for the FMA path. ``planner`` knows the compile's arch and options."""
    plan = planner.plan(op, num_threads)
    if plan is not None:
        m, n, _ = gemm_shape(op)
        return wgmma_accumulator_layout(m, n, plan, name=str(op.C.source.name))
    if select_mma(op, planner.arch, planner.options) is None:
        return fma_accumulator_layout(op, num_threads)
    m, n, _ = gemm_shape(op)
    m_warp, n_warp = gemm_warps(op, num_threads)
    return mma_accumulator_layout(m, n, m_warp, n_warp, name=str(op.C.source.name))


def operand_layout(op, name: str, num_threads: int, planner: HopperPlanner):
    """Registers holding gemm operand A: the mma.sync A fragments of each warp's rows, which is
    exactly an accumulator layout with one warp column (FlashAttention's P @ V without a trip
    through shared memory: the fp16 copy of one gemm's accumulator feeds the next gemm). On
    wgmma, likewise an accumulator layout with one warpgroup column. Only m16n8k16 has that
    match: the tf32 and int8 A fragments hold other columns than the accumulator's, and get their
    own layout (layouts.mma_a_operand_layout), as do warps that split C's columns (each holds a
    copy of its rows of A), so their producer converts."""
    m, n, k = gemm_shape(op)
    plan = planner.plan(op, num_threads) if name == "A" else None
    if plan is not None:
        return wgmma_operand_layout(m, k, plan, name=str(op.A.source.name))
    instr = select_mma(op, planner.arch, planner.options)
    if instr is None:
        raise LayoutError(f"gemm {op!r} takes {name} from registers, which needs the tensor-core "
                          f"path (fp16/bf16/tf32 operands with an fp32 accumulator, int8 with int32); "
                          f"copy it to shared memory")
    if name != "A" or op.transpose_A:
        raise LayoutError(f"gemm operand {name} of {op!r} is in registers: only a non-transposed A "
                          f"can be; copy it to a T.alloc_shared buffer")
    m_warp, n_warp = gemm_warps(op, num_threads)
    if instr.bits == 16 and n_warp == 1:
        # the accumulator layout exactly: an fp16 copy of one gemm's accumulator feeds the next
        return mma_accumulator_layout(m, k, m_warp, 1, name=str(op.A.source.name))
    # (the same registers for 16 bits; a warp column of its own holds a copy of its rows)
    return mma_a_operand_layout(m, k, m_warp, n_warp, instr.bits, name=str(op.A.source.name))


def lower_function(func: tirx.PrimFunc, arch: str, options: CudaOptions) -> tirx.PrimFunc:
    check_dtypes(func, arch, "cuda", ARCHS, capability)
    check_threads(func, arch, capability(arch, "max_threads_per_block"))
    user_func = func
    # thread-block clusters (T.ClusterKernel) from sm_90; cp.async unless turned off
    dialect = replace(CUDA, async_copy=not options.disable_cp_async, clusters=bool(capability(arch, "clusters")),
                      vector_atomic_adds={} if options.disable_vector_atomics else vector_atomic_adds(arch))
    planner = HopperPlanner(arch, options, func)
    if not options.disable_staged_epilogue and (not planner.enabled or options.disable_warp_specialized):
        func = stage_epilogue(func, triangular=options.enable_staged_epilogue)  # WS: TMA stores instead
    limit = capability(arch, "max_shared_memory_per_block")
    func = lower_simt(func, dialect, options, accumulator_layout=partial(accumulator_layout, planner=planner),
                      operand_layout=partial(operand_layout, planner=planner), backend=planner,
                      specialize=planner.specialize, finalize=planner.finalize, shared_limit=limit,
                      split_fills=not options.disable_conditional_mask,
                      longest_first_blocks=options.enable_longest_first,
                      async_preload=not options.disable_async_preload)
    check_shared_memory(func, arch, limit, source=user_func)
    if planner.notes:
        func = func.with_attr(SCHEDULE_NOTES, "\n".join(planner.notes))
    return func


#: PrimFunc attribute: what the sm_90a planner chose and why, printed at the top of the source
SCHEDULE_NOTES = "tl.schedule_notes"


def workspace_statements(workspaces) -> tuple[list, list]:
    """Host statements giving each ``T.alloc_global`` workspace stream-ordered device memory before
    the program's first kernel (uninitialized, as in TileLang), and freeing it after the last."""
    before, after = [], []
    for buffer in workspaces:
        data = tirx.Var(f"{buffer.name}_workspace", "handle")
        alloc, free = scratch_statements(data, workspace_bytes(buffer), tirx.const(0, "int64"),
                                         f"the T.alloc_global workspace '{buffer.name}'")
        before += alloc + [tirx.DeclBuffer(buffer, data=data)]
        after = free + after
    return before, after


def tensor_alignments(mod) -> dict[str, int]:
    """{tensor parameter name: the data alignment its code assumes} over the module's kernels
    (the same ``data_alignment`` the JIT's launcher reads, jit/params.py)."""
    return {str(p.name): max(int(p.data_alignment), 1) for func in mod.functions.values()
            for p in func.params if tvm.tirx.is_buffer_var(p)}


def schedule_comment(mod) -> str:
    """``// schedule of kernel ...`` lines for every function that carries planner notes."""
    lines = []
    for gvar, func in mod.functions.items():
        notes = func.attrs.get(SCHEDULE_NOTES) if func.attrs is not None else None
        if notes:
            lines.append(f"// schedule of kernel '{gvar.name_hint}' (tilelang-cuda):")
            lines += [f"//   {note}" for note in str(notes).splitlines()]
    return "\n".join(lines) + "\n" if lines else ""


class CudaBackend(Backend):
    """NVIDIA GPUs through TVM's CUDA codegen, nvcc and tvm-ffi (see the module docstring)."""

    kind = "cuda"
    device_type = "cuda"
    entry_checks_arguments = True  # TVM's cuda_host wrapper (codegen.py) checks before launching
    entry_checks_alignment = True  # ... with our alignment tests added (codegen.with_alignment_checks)
    multi_kernel_programs = True  # program_kernels: several T.Kernel blocks, T.alloc_global
    address_tensors = True  # T.make_tensor(ptrs[i], ...): a pointer cast in the kernel
    on_demand_stages = ("ptx", "sass")
    options_class = CudaOptions
    binary_suffix = ".so"

    def __init__(self, target):
        super().__init__(target)
        self.timings: dict = {}
        self.last_build: compiler.BuildResult | None = None

    @property
    def arch(self) -> str:
        return checked_arch(self.target, "cuda", ARCHS, DEFAULT_ARCH)

    def lower(self, func, options: CudaOptions | None = None) -> tvm.IRModule:
        options = options or CudaOptions()
        start = time.perf_counter()
        arch = self.arch
        mod = lower_each("cuda", func, lambda f: lower_program(
            f, lambda kernel: lower_function(kernel, arch, options), workspace_statements), options)
        self.timings["lower"] = time.perf_counter() - start
        return mod

    def codegen(self, mod, options: CudaOptions | None = None) -> str:
        start = time.perf_counter()
        options = options or CudaOptions()
        mod = mod if options.precise_exp2 else fast_exp2(mod)
        mod = fast_divide(mod) if options.fast_div else mod
        mod = mark_unroll_factors(mod)
        lib = codegen.build_tvm_module(mod, self.arch)
        source = schedule_comment(mod) + with_unroll_pragmas(with_kernel_attributes(with_on_demand_helpers(
            codegen.insert_imported_sources(codegen.export_source(lib, tensor_alignments(mod)),
                                            imported_sources(mod)))))
        self.timings["codegen"] = time.perf_counter() - start
        return source

    def build(self, mod, source: str, options: CudaOptions | None, workdir: Path) -> bytes:
        options = options or CudaOptions()
        result = compiler.build_shared_library(source, self.arch, Path(workdir), options)
        self.last_build = result
        for advice in compiler.performance_advisories(result.log):
            warnings.warn(_advisory_message(mod, self.arch, advice), PerformanceWarning, stacklevel=2)
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


def _advisory_message(mod, arch: str, advice: str) -> str:
    """The PerformanceWarning for one of ptxas's "Potential Performance Loss" lines."""
    names = ", ".join(sorted(gv.name_hint for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)))
    hint = ("smaller tiles or fewer fragments live at once usually avoid it" if "register resources" in advice else
            "please report it with the kernel")
    return (f"kernel {names} ({arch}): ptxas: {advice.rstrip('.')}. The kernel computes the same results, more "
            f"slowly than its schedule asks for; {hint}")
