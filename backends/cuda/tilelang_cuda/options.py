"""Compile options of the cuda backend: frozen, validated, with a stable hash (BackendOptions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping

from tilelang_core.backend import BackendOptions
from tilelang_core.errors import ConfigError

#: how the host side (the tvm-ffi wrapper) is built; see compiler.py for the trade-off
HOST_BUILDS = ("split", "nvcc")
#: who compiles device code in the split build; "auto" = NVRTC when libnvrtc is found, else nvcc
DEVICE_COMPILERS = ("auto", "nvrtc", "nvcc")


@dataclass(frozen=True)
class CudaOptions(BackendOptions):
    """Options of one cuda compile.

    host_build: "split" (default) compiles device code alone to a cubin with nvcc and the host
        wrapper with the C++ compiler, the cubin embedded and loaded through cudaLibraryLoadData;
        "nvcc" hands TVM's single .cu to nvcc (slower: nvcc parses tvm-ffi's C++ headers twice).
    device_compiler: "auto" (default) compiles device code with NVRTC in-process when libnvrtc is
        found (toolkit lib64, or `pip install nvidia-cuda-nvrtc`), falling back to nvcc if NVRTC is
        missing or fails, and taking nvcc over an NVRTC release whose code is slower than nvcc's
        (12.x and 13.0: nvrtc.AS_FAST_AS_NVCC); "nvrtc" or "nvcc" force one.
    fast_math: --use_fast_math (approximate exp/div/sqrt); TileLang's ``tl.enable_fast_math``.
    precise_exp2: T.exp2 on float32 as CUDA's exp2f (subnormal results kept) instead of one
        ex2.approx.ftz instruction (transform/fast_exp2.py).
    fast_div: float32 ``/`` in kernels as div.full.f32 (2 ulp, one reciprocal per divisor;
        transform/fast_divide.py) instead of the IEEE-rounded division, which is the default as in
        TileLang: kernels such as DeepSeek's TileKernels compare their quotients bit for bit with
        torch's. Attention on the H200 gains up to 3.5% with it (bench/NOTES.md, s8).
    opt_level: ptxas/nvcc -O level for device code (0..3).
    lineinfo: -lineinfo, for profilers and compute-sanitizer source lines.
    ptxas_verbose: keep ptxas' register/spill report in the build log (``kernel.asm["ptxas"]``).
    disable_cp_async: lower T.Pipelined copies with plain loads/stores (for debugging).
    disable_wgmma: on sm_90a, lower T.gemm with mma.sync instead of wgmma (TileLang's key).
    disable_tf32: float32 T.gemm computes in exact fp32 with FMAs instead of on tf32 tensor
        cores (operands truncated to 10 mantissa bits by the instruction, fp32 accumulate; the
        default, as in TileLang, which has no such switch). For results that must match an fp32
        reference.
    disable_tma_lower: on sm_90a, load T.Pipelined tiles with cp.async instead of TMA.
    disable_thread_storage_sync: insert no barriers between shared-memory accesses (TileLang's
        key): the kernel's own T.sync_threads / T.sync_warp order them, as in TileLang.
    disable_warp_specialized: on sm_90a, no producer warpgroup (implies no TMA pipeline).
    disable_pingpong: on sm_90a, the two consumer warpgroups of an overlapped attention loop
        issue their gemms without taking turns at the tensor cores (hopper/pingpong.py).
    disable_persistent: on sm_90a, one CTA per tile for every warp-specialized kernel. By default a
        kernel with an operand it loads once per tile before its loop (attention's Q) gets one
        resident CTA per SM walking the tiles, the producer loading the next tile's Q and first
        K/V under the current tile's epilogue (hopper/persistent.py; attention S4096 D128 on the
        H200: 595 against 582 TFLOP/s, S8192 D64 450 against 434). Tiles of different lengths
        (causal attention) are handed out by a dynamic tile scheduler, longest first within chunks
        of 8 heads (hopper/tile_scheduler.py; causal S4096 D128: 555 against 528). Kernels that
        run two blocks per SM or a cluster pair keep those.
    enable_persistent: the persistent schedule for every warp-specialized kernel that can take it,
        also those that would run two blocks per SM (it gives those up). GEMM-like kernels with one
        block per SM are persistent by default anyway (stream-K, below); with
        ``tl.disable_stream_k`` this gives them the plain static walk.
    disable_stream_k: on sm_90a, GEMM-like kernels (a pipelined loop of gemms accumulating into
        float32 fragments cleared before it) with one block per SM keep one CTA per tile. By
        default they run persistent, whole waves of tiles first, and where the last wave is
        partial enough to pay for it (a cost model of the partial sums' round trip, decided at
        launch from the SM count) its tiles are shared along K by every CTA, partial sums added
        through a workspace by the CTA holding a tile's last k-iteration (hopper/stream_k.py).
        Loops of more than two gemms (FlashAttention backward) keep whole tiles: the tail's
        second copy of such a loop made ptxas serialize every wgmma of the kernel.
    enable_stream_k: share any partial last wave along K, without the cost model (for
        measurements; loops of more than two gemms still keep whole tiles).
        ``tl.disable_persistent`` wins over both.
    disable_wgmma_overlap: on sm_90a, a warp-specialized loop with two wgmma gemms (attention)
        waits for each gemm right after issuing it, instead of running the work between them
        under the previous iteration's last gemm (hopper/consumer_schedule.py).
    disable_tma_store: on sm_90a, the epilogue copy of a warp-specialized kernel (fragment ->
        global tile) is stored by the threads instead of going through shared memory in 128-byte
        strips and TMA stores (hopper/tma_store.py; the strips are skipped anyway where their
        16 KB buffer does not fit next to the pipeline).
    enable_tma_reduce: on sm_90a, a warp-specialized loop's float32 tile atomic adds from shared
        memory (FlashAttention backward's dQ) become TMA reduce-adds issued by one consumer thread
        instead of every consumer's vector reductions (hopper/tma_reduce.py). Correct on the
        H200 (its GPU tests). Measured on FlashAttention backward only: no change while ptxas
        serialized that kernel's wgmma (stop 55), +1-16% since (H200, bench/NOTES.md stop 58), so
        that example asks for it in its jit; opt-in elsewhere until measured there.
    enable_early_gemm_issue: on sm_90a, a warp-specialized loop that neither the attention overlap
        nor the chain fits issues a wgmma gemm needing nothing computed since the gemm before it
        right after that one, and adjacent independent gemms in the order their results are read
        (hopper/consumer_schedule.issue_order; FlashAttention backward: dP with S, the exps under
        dP). Opt-in: it keeps more accumulators live. On FA backward (H200, bench/NOTES.md stop 58,
        with every wgmma pipelined again) +3-11% at D128 and D64, -10% causal with the example's
        register loads of lse and delta; stop 57's -14% was measured while ptxas serialized the
        kernel and spilled 624 bytes for it.
    enable_overlap_block: on sm_90a, in an attention-like overlapped loop, the work between the
        wait for the first gemm and the wait for the previous iteration's last gemm (the softmax)
        becomes a basic block of its own, so that ptxas cannot hoist that second wgmma wait above
        it (it does within one block: only the row max ran under P V). Correct on the H200, but
        3-5% slower there (bench/NOTES.md): opt-in.
    disable_conditional_mask: keep a loop's mask fill as written in every iteration. By default
        a fill that is all zeros only in some iterations (causal attention left of the diagonal)
        is skipped there in a warp-specialized sm_90a loop, the wgmma gemm starting from its
        zero-init instead (hopper/zero_fill.py; causal attention +6-7% on the H200), and writes
        plain zeros there in other loops (the kit's split_masked_fills: mma.sync and cp.async
        pipelines, every arch).
    enable_cluster_multicast: on sm_90a, two neighbouring CTAs that load the same tile (GEMM's B
        for blocks of one column) form a cluster: each loads half of it by TMA multicast into
        both, and the slots go back only once both have used them (hopper/warp_specialize.py).
        Not with tl.enable_persistent; the planner's rasterization then walks pairs of block
        rows. Correct on the H200 (tests/gpu/test_gpu_cluster.py) but not faster there (GEMM
        0.99x, attention 0.92-0.98x of the default; bench/NOTES.md): opt-in.
    disable_two_blocks_per_sm: on sm_90a, a warp-specialized kernel with one consumer warpgroup
        whose ring fits in half the SM's shared memory and whose fragments and per-thread arrays leave
        room in half the register file is by default built for two resident blocks (``__launch_bounds__(threads,
        2)``, setmaxnreg 40/216, TMA-store strips within the half), so one block's pipeline fill
        and epilogue run under the other's wgmmas (hopper/occupancy.py; GEMM 128x128 tiles on the
        H200: 661 against 451 TFLOP/s at 8192^3). This keeps one block per SM.
    enable_gemm_batches: on sm_90a's cp.async path, two wgmma gemms in a row into one
        accumulator (MLA decode's ``Q K^T`` and ``Q_pe K_pe^T``) are issued as one batch, the first
        without its own ``wgmma.wait_group 0`` (hopper/gemm_batches.py). Opt-in until it has run on
        the H200 (written after this session's device time ended; the same PTX pattern as the
        warp-specialized chain, which has).
    enable_longest_first: launch the blocks of a grid whose loop runs more iterations for a larger
        blockIdx.x in reverse x order (the kit's longest_first: causal attention's longest row
        blocks start first instead of making up the last wave). On the H200, causal S4096 D128 on
        the mma.sync path (128x64 tiles): 310 vs 308 TFLOP/s, no gain beyond noise: opt-in.
    disable_staged_epilogue: off the warp-specialized path, keep a fragment -> global copy after
        the pipelined loop as per-thread stores. By default it goes through a shared tile the
        loop has left dead, of the destination's shape and dtype (attention's Q tile for O), for
        16-byte row-contiguous stores (transform/stage_epilogue.py), except after a loop whose
        trip count depends on the block index (causal attention): on the H200's mma.sync path,
        attention S4096 D128 128x64 ran +1-2% staged non-causal and -3% staged causal (ptxas
        issues the softmax's ex2 back to back in the staged causal build; bench/NOTES.md, s11).
    enable_staged_epilogue: stage the epilogue after such a loop too (for comparisons).
    disable_vector_atomics: one atomic instruction per element: no AtomicAddx2/x4 for a thread's
        adds into consecutive global elements (tilelang_core/simt/vector_atomic_adds.py; for
        comparisons, bench/atomic_add.py).
    disable_async_preload: keep a copy global -> shared before a pipelined loop (attention's Q)
        synchronous. By default it is issued as cp.async with the loop's first tiles and waited
        for with them (the kit's software_pipeline), instead of a load, store and barrier of its
        own before any of them is issued. On the H200's mma.sync path, causal attention S4096
        D128: 305-311 vs 305-308 TFLOP/s with the staged epilogue, 320-323 vs 298-299 with
        per-thread O stores.
    disable_rasterization: on sm_90a, keep the launch order of a 2-D gemm grid where the kernel
        has no T.use_swizzle (by default the planner walks it in panels of block rows).
    extra_nvcc_flags: appended to every nvcc call, verbatim (TileLang's ``compile_flags`` and
        ``tl.device_compile_flags``); device code then always goes through nvcc, never NVRTC.

    Example::

        CudaOptions.from_pass_configs({"tl.fast_math": True, "host_build": "nvcc"})
    """

    ALIASES: ClassVar[Mapping[str, str]] = {"device_compile_flags": "extra_nvcc_flags",
                                            "enable_fast_math": "fast_math"}
    RETIRED: ClassVar[Mapping[str, str]] = {
        "enable_tma_store": "TMA-store epilogues are the default; tl.disable_tma_store turns them off",
        "enable_conditional_mask": "the conditional mask fill is the default; tl.disable_conditional_mask "
                                   "turns it off",
        "enable_two_blocks_per_sm": "two blocks per SM are the default where they fit; "
                                    "tl.disable_two_blocks_per_sm turns them off",
        "precise_div": "IEEE float32 division is the default (as in TileLang); tl.fast_div opts into "
                       "div.full.f32",
    }

    host_build: str = "split"
    device_compiler: str = "auto"
    fast_math: bool = False
    precise_exp2: bool = False
    fast_div: bool = False
    opt_level: int = 3
    lineinfo: bool = False
    ptxas_verbose: bool = False
    disable_cp_async: bool = False
    disable_wgmma: bool = False
    disable_tf32: bool = False
    disable_tma_lower: bool = False
    disable_warp_specialized: bool = False
    disable_thread_storage_sync: bool = False
    disable_pingpong: bool = False
    enable_persistent: bool = False
    enable_stream_k: bool = False
    disable_stream_k: bool = False
    disable_persistent: bool = False
    disable_rasterization: bool = False
    disable_wgmma_overlap: bool = False
    disable_tma_store: bool = False
    enable_tma_reduce: bool = False
    enable_early_gemm_issue: bool = False
    enable_overlap_block: bool = False
    disable_conditional_mask: bool = False
    enable_cluster_multicast: bool = False
    disable_two_blocks_per_sm: bool = False
    enable_longest_first: bool = False
    enable_gemm_batches: bool = False
    disable_staged_epilogue: bool = False
    enable_staged_epilogue: bool = False
    disable_async_preload: bool = False
    disable_vector_atomics: bool = False
    extra_nvcc_flags: tuple = ()

    def __post_init__(self):
        if self.host_build not in HOST_BUILDS:
            raise ConfigError(f"cuda option host_build={self.host_build!r} must be one of {HOST_BUILDS}")
        if self.device_compiler not in DEVICE_COMPILERS:
            raise ConfigError(f"cuda option device_compiler={self.device_compiler!r} must be one of "
                              f"{DEVICE_COMPILERS}")
        self.check_flags("cuda")
        for feature in ("stream_k", "persistent", "staged_epilogue"):
            if getattr(self, f"enable_{feature}") and getattr(self, f"disable_{feature}"):
                raise ConfigError(f"cuda options tl.enable_{feature} and tl.disable_{feature} contradict each "
                                  f"other; set one of them")
        if isinstance(self.opt_level, bool) or self.opt_level not in (0, 1, 2, 3):
            raise ConfigError(f"cuda option opt_level={self.opt_level!r} must be 0, 1, 2 or 3")
        flags = self.extra_nvcc_flags
        if isinstance(flags, str):
            flags = tuple(flags.split())
        if not all(isinstance(f, str) for f in flags):
            raise ConfigError(f"cuda option extra_nvcc_flags={self.extra_nvcc_flags!r} must be strings")
        object.__setattr__(self, "extra_nvcc_flags", tuple(flags))
