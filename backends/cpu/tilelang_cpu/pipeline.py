"""The cpu backend's stages: tile-level TIRX -> loops -> LLVM IR -> shared library -> module.

Lowering, in order (each a pass; see transform/ and tilelang_core/transform/):

   LowerIntrinsics  (kernels calling them) warp votes/shuffles/reductions -> an exchange through block
                    memory between barriers, lane queries and bit scans -> arithmetic (or refused)
1. ThreadsToLoops   threadIdx launches go; per-thread code becomes loops over threads (or is refused)
   LowerAtomicCalls atomics used as values (return_prev, T.atomic_load) -> plain reads and writes
2. LowerTileOps     every tile op -> loop nest, with this backend's rules (lowering.py)
3. BlocksToLoops    blockIdx launches -> one fused loop over blocks, parallel unless atomics on
                    global memory or num_threads=1 ask for serial
   GuardParallelGlobals  global accesses in T.Parallel loops past a tensor's end: loads read 0,
                    stores are skipped (TileLang's safe memory access, as on the GPU backends)
   ExactFp8Casts    float8 <-> float conversions through the bit fields (TVM's LLVM lowering mishandles
                    zero, subnormals and e5m2's inf/NaN)
4. LegalizeForCpu   T.Parallel loops -> serial, buffers -> plain arrays, tl.* annotations dropped,
                    gemm inner loops -> vectorized
   Bf16BindsToRegisters  bound bfloat16 values kept in registers (TVM cannot legalize bf16 Binds)
5. VerifyNoTileOps  a leftover tile op is a LoweringError naming it
6. StmtSimplify, RemoveNoOp (TVM)
A program of several ``T.Kernel`` blocks goes through these passes as it is, one block loop per
kernel, in program order; its ``T.alloc_global`` workspaces are first moved before the first kernel
(program_kernels.hoist_workspaces: one buffer for all blocks, not one per block), where TVM's host
code allocates them for the call (TVMBackendAllocWorkspace) and frees them after the last kernel.
Then ``tvm.tirx.build`` runs TVM's own pipeline (VectorizeLoop, StorageRewrite, MakePackedAPI with
its argument checks, ...) and the LLVM codegen.

Atomics: a block is sequential, so an atomic on shared/local memory is a plain read-modify-write,
whatever its memory order (sequential execution is sequentially consistent).
On global memory, blocks could race. Rather than emit atomic read-modify-writes per element (a
compare-and-swap loop per float add, and sums whose rounding depends on the thread schedule), the
block loop of such a kernel runs serially: results are exact and deterministic run to run, which
the reference backend values over speed for the (rare) kernels with global atomics. Atomics on
shared memory keep the block loop parallel.
"""

from __future__ import annotations

from pathlib import Path

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.backend import Backend, lower_each
from tilelang_core.ir.atomic_calls import atomic_calls
from tilelang_core.ir.import_source import refuse_imported_sources
from tilelang_core.ir.intrinsics import calls_in, intrinsic_of
from tilelang_core.transform import lower_tile_ops, verify_no_tile_ops
from tilelang_core.transform.instrumented import run_pass
from tilelang_core.transform.lower_tile_ops import kernel_name
from tilelang_core.transform.program_kernels import hoist_workspaces

from . import codegen, compiler, lowering  # noqa: F401  (lowering registers the rules)
from .options import CpuOptions
from .runtime import load_module
from .transform import blocks_to_loops, exact_fp8_casts, guard_parallel_globals, legalize_for_cpu, threads_to_loops
from .transform.bf16_binds import bf16_binds_to_registers
from .transform.carried_registers import refuse_carried_registers
from .transform.subbyte_scalars import refuse_subbyte_float_scalars
from .transform.lower_atomic_calls import lower_atomic_calls
from .transform.lower_intrinsics import lower_intrinsics

ATOMIC_OP = "tl.tile.atomic"


def has_global_atomics(func: tirx.PrimFunc) -> bool:
    """Does ``func`` have an atomic (a statement, ``return_prev`` or ``T.atomic_load``) whose
    element is in a global buffer?"""
    found = []

    def on_call(call):
        if str(call.op.name) == ATOMIC_OP:
            dst = call.args[0]
            buffer = dst.source if hasattr(dst, "source") else dst
            if str(buffer.ty.storage_scope) in ("global", ""):
                found.append(call)

    tvm_ffi.structural_walk(func.body, [(tirx.TilePrimitiveCall, on_call)])
    for call in atomic_calls(func.body):
        element = call.args[0]
        if isinstance(element, tvm.ir.TensorLoad) and str(element.source.ty.storage_scope) in ("global", ""):
            found.append(call)
    return bool(found)


def lower_func(func: tirx.PrimFunc, options: CpuOptions) -> tirx.PrimFunc:
    """Our own passes run as plain functions: a LoweringError raised inside a TVM pass would cross
    the FFI boundary and come back as a bare RuntimeError (and bury the user's message in FFI
    frames). The ``*Pass`` forms in transform/ are there for custom pipelines."""
    refuse_imported_sources(func, "the cpu backend")
    refuse_carried_registers(func, kernel_name(func))
    # blocks run on TVM's thread pool unless they update global memory atomically, or check
    # T.device_assert (an assertion failing in a pool task is not reliably reported)
    parallel = options.parallel_blocks and not has_global_atomics(func) and not any(
        intrinsic_of(c).name == "device_assert" for c in calls_in(func.body))
    func = hoist_workspaces(func)  # the same function unless a T.alloc_global sits in a kernel
    # run_pass: plain calls, except under TILELANG_DUMP_IR, where each is dumped and timed
    if calls_in(func.body):  # warp votes, lane queries, bit scans: arithmetic, or refused
        func = run_pass("cpu.LowerIntrinsics", lower_intrinsics, func)
    func = run_pass("cpu.ThreadsToLoops", threads_to_loops, func)
    func = run_pass("cpu.LowerAtomicCalls", lower_atomic_calls, func)
    func = run_pass("cpu.LowerTileOps", lower_tile_ops, func, CpuBackend.kind, options)
    func = run_pass("cpu.BlocksToLoops", blocks_to_loops, func, parallel=parallel)
    func = run_pass("cpu.GuardParallelGlobals", guard_parallel_globals, func)
    func = run_pass("cpu.ExactFp8Casts", exact_fp8_casts, func)
    func = run_pass("cpu.LegalizeForCpu", legalize_for_cpu, func, vectorize=options.vectorize)
    func = run_pass("cpu.Bf16BindsToRegisters", bf16_binds_to_registers, func)
    func = run_pass("cpu.RefuseSubbyteFloatScalars", refuse_subbyte_float_scalars, func)
    return run_pass("cpu.VerifyNoTileOps", verify_no_tile_ops, func, CpuBackend.kind)


#: generic TVM clean-ups after our passes (folds the bounds checks proven true, drops no-ops)
CLEANUP_PASSES = (tirx.transform.StmtSimplify, tirx.transform.RemoveNoOp)


class CpuBackend(Backend):
    """The reference backend: every kernel as loops on the host CPU, through TVM's LLVM codegen.

    Example::

        backend = CpuBackend(target)
        options = backend.make_options({"num_threads": 1})
        mod = backend.lower(prim_func, options)
        source = backend.codegen(mod, options)        # LLVM IR
        data = backend.build(mod, source, options, workdir)
    """

    kind = "cpu"
    device_type = "cpu"
    entry_checks_arguments = True  # tvm.tirx.build's llvm host wrapper
    multi_kernel_programs = True  # program_kernels: several T.Kernel blocks, T.alloc_global
    address_tensors = True  # T.make_tensor(ptrs[i], ...): a pointer cast in the kernel
    options_class = CpuOptions
    binary_suffix = ".so"

    def __init__(self, target):
        super().__init__(target)
        # codegen has to compile to produce LLVM IR; build reuses that result for the same module.
        self._built: tuple | None = None

    # -- stages ---------------------------------------------------------------------------------
    def lower(self, func, options: CpuOptions | None = None) -> tvm.IRModule:
        options = options or CpuOptions()
        mod = lower_each("cpu", func, lambda f: lower_func(f, options), options)
        return tvm.transform.Sequential([p() for p in CLEANUP_PASSES])(mod)

    def codegen(self, mod, options: CpuOptions | None = None) -> str:
        """LLVM IR of the lowered module (the lowered TIR is the driver's "lowered" stage)."""
        return codegen.llvm_ir(self._build_lib(mod, options or CpuOptions()))

    def build(self, mod, source: str, options: CpuOptions | None, workdir: Path) -> bytes:
        lib = self._build_lib(mod, options or CpuOptions())
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        return compiler.export_shared_library(lib, workdir / f"kernel{self.binary_suffix}")

    def load(self, path: Path):
        return load_module(path)

    def toolchain_version(self) -> str:
        major = tvm_ffi.get_global_func("target.llvm_version_major", allow_missing=True)
        llvm = major() if major is not None else "?"
        return f"tvm-{tvm.__version__} llvm-{llvm} mcpu-{self._mcpu(None) or 'default'}"

    # -- helpers --------------------------------------------------------------------------------
    def _mcpu(self, options: CpuOptions | None) -> str | None:
        if options is not None and options.mcpu:
            return options.mcpu
        arch = getattr(self.target, "arch", None)
        if arch and arch != "aarch64":
            return str(arch)
        return compiler.host_mcpu()

    def _build_lib(self, mod, options: CpuOptions):
        target = compiler.llvm_target_dict(self._mcpu(options))
        if self._built is not None and self._built[0] is mod and self._built[1] == target:
            return self._built[2]
        lib = compiler.build_runtime_module(mod, target)
        self._built = (mod, target, lib)
        return lib
