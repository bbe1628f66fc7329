"""Stream-K on sm_90a without a GPU (hopper/stream_k.py): the walk's arithmetic simulated for
many grids, the generated kernel's writer/finisher protocol, and where it does not apply
(numerics run in tests/gpu)."""

import itertools
import subprocess

import pytest
import tvm
import tvm_ffi
from tvm import tirx

import kernels
from test_hopper_lowering import HOPPER_TILES, Target, cuda_source, example_module
from tilelang_core.simt.transform.state import substitute


def _walk(total, ctas, n, fixup=0):
    """Every CTA's units as (tile, k0, end, ring position, first partner), evaluated from the
    expressions StreamKTiles emits (host values, launch values, then each unit's)."""
    from tilelang_cuda.hopper.persistent import _PersistentTiles
    from tilelang_cuda.hopper.stream_k import OPAQUE, StreamKTiles

    bx = tirx.Var("bx", "int32")
    static = _PersistentTiles([(bx, total)], tirx.const(n, "int32"))
    walk = StreamKTiles(static, tirx.const(n, "int32"), [], [], fixup=fixup)
    analyzer = tvm.sym.Analyzer()
    host = {static.sms: tirx.const(ctas, "int32")}
    for bind in walk.host:
        if isinstance(bind, tirx.Bind) and any(bind.var.same_as(v) for v in (walk.sk, walk.q, walk.whole, walk.extra)):
            value = bind.value
            if isinstance(value, tvm.ir.Call) and str(value.op.name) == "tirx.call_extern":
                assert str(value.args[0].value) == OPAQUE  # the host's identity helper
                value = value.args[1]
            host[bind.var] = tirx.const(int(analyzer.simplify(substitute(value, host))), "int32")

    def value(expr, env, state):
        expr = tvm_ffi.structural_map(expr, [(tvm.ir.TensorLoad, lambda load: tirx.const(
            state[int(load.indices[0])], "int32"))])
        return int(analyzer.simplify(substitute(expr, env)))

    def run(stmts, env, state):
        for store in stmts:
            state[int(store.indices[0])] = value(store.value, env, state)

    units = {}
    fields = walk.FIELDS
    whole, tail = walk.loop(tirx.Evaluate(tirx.const(0, "int32"))).seq[-2:]  # after the launch values
    for c in range(min(total, ctas)):
        env = {**host, static.cta: tirx.const(c, "int32")}
        state = [0] * len(fields)
        run(walk._launch_values(), env, state)
        units[c] = []
        waves = value(whole.extent, env, state)
        for u in range(waves + value(tail.extent, env, state)):
            if u < waves:  # the whole tiles' loop: the walk's values as expressions of its counter
                at = {**env, walk.t: tirx.const(u, "int32")}
                for f, expr in walk.whole_values().items():
                    state[fields.index(f)] = value(expr, at, state)
            else:  # the tail's loop: its p-th piece
                run(walk._piece_values(tirx.const(u - waves, "int32")), env, state)
            units[c].append(tuple(state[fields.index(f)] for f in ("tile", "k0", "end", "done", "first")))
    return units, int(host[walk.sk])


@pytest.mark.parametrize("total,ctas,n", [(t, c, n) for t, c, n in itertools.product(
    (1, 24, 31, 67, 100), (1, 7, 16, 24), (0, 1, 5, 8))])
def test_stream_k_walk_covers_every_k_iteration_once(total, ctas, n):
    """For every grid: each (tile, k) iteration runs in exactly one piece; each tile's epilogue
    runs once (a whole tile, or the finisher holding its last k-iteration); a finisher's partners
    are exactly the lower CTAs whose first piece is a writer on its tile; a CTA writes at most
    one partial, in its first tail piece; the ring position is the running sum of trip counts."""
    units, sk = _walk(total, ctas, n)
    covered, epilogues, writers = {}, {}, {}
    for c, pieces in units.items():
        ring = 0
        waves = sum(1 for tile, *_ in pieces if tile < total - sk)  # whole tiles before the tail
        for u, (tile, k0, end, done, first) in enumerate(pieces):
            assert 0 <= tile < total and 0 <= k0 <= end <= n and done == ring
            ring += end - k0
            for k in range(k0, end):
                assert (tile, k) not in covered, f"iteration {(tile, k)} twice"
                covered[(tile, k)] = c
            if end < n:  # writer: only the first piece of the tail
                assert u == waves and c not in writers.values()
                writers.setdefault(tile, []).append(c)
            else:
                assert tile not in epilogues
                epilogues[tile] = (c, first if k0 > 0 else c)
    assert len(covered) == total * n
    assert sorted(epilogues) == list(range(total))
    for tile, (c, first) in epilogues.items():
        assert sorted(writers.get(tile, [])) == list(range(first, c))
    if sk:  # a thin remainder is shared with one more wave, so no tile is cut into many pieces
        assert max(len(w) for w in writers.values()) <= 2 if writers else True


def test_stream_k_gemm_stores_partials_and_finishes_in_the_last_cta(tmp_path):
    """tl.enable_stream_k on a GEMM: one resident CTA per SM; the host allocates the workspace
    (flags zeroed) on the launch stream and frees it after; a piece ending inside its tile stores
    its accumulator to its CTA's slot and publishes a flag after a consumer barrier; a piece that
    starts inside its tile waits for each lower partner's flag, adds its slot, then runs the TMA
    store epilogue. The partial sums go as 8-byte pairs, a warp's 256 contiguous bytes at a time.
    Both host build routes compile it, without spills, with every tl_ host helper defined."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = kernels.make_gemm(1000, 520, 264, **HOPPER_TILES)
    source, kernel = cuda_source(func, enable_stream_k=True)
    notes = source[:source.find("#ifdef")]
    assert "stream-K: whole waves of tiles" in notes
    host = source[source.find("#include <tvm/ffi/c_api.h>"):]
    assert "tl_num_sms()" in host
    assert host.index("tl_sk_tiles = ") < host.index("tl_stream_k = (void*)((void*)tl_scratch_alloc(") < \
        host.index("tl_scratch_free(tl_stream_k)")
    producer, consumers = kernel.split("tl_setmaxnreg_inc<232>();")
    assert "tl_stream_k_publish" not in producer and "tl_mbar_wait" in producer
    # whole tiles first (no workspace), then the tail's pieces: writers, or finishers
    whole, tail = consumers.split("for (int p", 1)
    assert "tl_stream_k_publish" not in whole and "tl_stream_k_wait" not in whole
    writer, finisher = tail.split("} else {", 1)[0], tail
    assert writer.index("*(float2*)(((float*)tl_stream_k) + ") < writer.index("tl_named_barrier_sync(1, 256);") < \
        writer.index("tl_stream_k_publish(tl_stream_k, ((int)blockIdx.x));")
    assert "((int)threadIdx.x) * 2)) + 1024)) = *(float2*)(C_f_ptr + 0);" in writer  # slot: pairs by thread
    wait = finisher.index("tl_stream_k_wait(tl_stream_k, tl_sk_partner);")
    assert wait < finisher.index("tl_named_barrier_sync(1, 256);", wait) < finisher.index("tl_tma_store", wait)
    for route in ("split", "nvcc"):
        backend, options = CudaBackend(Target("sm_90a")), CudaOptions(host_build=route, enable_stream_k=True,
                                                                      ptxas_verbose=True)
        mod = backend.lower(func, options)
        workdir = tmp_path / route
        workdir.mkdir()
        backend.build(mod, backend.codegen(mod, options), options, workdir)
        assert "0 bytes spill stores" in backend.last_build.log
        # every host helper the wrapper calls is defined in the library (an undefined one only
        # fails at the first launch, with a symbol lookup error that kills the process)
        undefined = subprocess.run(["nm", "-D", "--undefined-only", str(workdir / "kernel.so")],
                                   capture_output=True, text=True, check=True).stdout
        assert not [line for line in undefined.splitlines() if line.split()[-1].startswith("tl_")], undefined


def test_stream_k_declines_where_the_grid_or_options_forbid_it():
    """Causal attention (row blocks of different lengths, on the dynamic scheduler) says why it
    keeps its schedule; tl.disable_persistent wins over stream-K; with tl.disable_stream_k a GEMM
    keeps one CTA per tile. Which loops combine is test_hopper_stream_k_state.py's."""
    attention = example_module("attention/flash_attention.py").flash_attention
    source, kernel = cuda_source(attention.get_tir(2, 4, 1000, 128, True, block_M=128, block_N=128, threads=256),
                                 enable_stream_k=True)
    assert "no stream-K (no static tile walk: the grid or the tiles' trip counts vary)" in source and "tl_stream_k" not in kernel
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES), enable_stream_k=True,
                                 disable_persistent=True)
    assert "no stream-K (tl.disable_persistent)" in source and "tl_stream_k" not in kernel
    _, plain = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES), disable_stream_k=True)
    assert "tl_stream_k" not in plain and "for (int u" not in plain


@pytest.mark.parametrize("dim", [64, 128])
def test_attention_backward_keeps_whole_tiles_and_its_wgmma_pipeline(tmp_path, dim):
    """FlashAttention backward (examples/attention/flash_attention_bwd.py at the bench's tile:
    64x128, 2 stages, 256 consumers, stats read where used): its loop has five gemms, and with the
    stream-K tail's second copy of it ptxas 13.0 serialized every wgmma of the kernel (C7511) and
    spilled 172 (D64) / 352 (D128) bytes; D64 also had its setmaxnreg ignored for want of a block
    count in the launch bounds (C7508). The kernel keeps the persistent walk without a tail, says
    why, and ptxas reports neither advisory and no spill."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    bwd = example_module("attention/flash_attention_bwd.py").flash_bwd
    func = bwd.get_tir(8, 16, 4096, dim, False, block_M=64, block_N=128, num_stages=2, threads=256, stats="global")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(ptxas_verbose=True)
    mod = backend.lower(func, options)
    source = backend.codegen(mod, options)
    kernel = source[source.index('extern "C" __global__ void __launch_bounds__(384, 1) main_kernel('):]
    assert "no stream-K (5 gemms in the loop" in source and "tl_stream_k_state" not in kernel
    backend.build(mod, source, options, tmp_path)
    log = backend.last_build.log
    assert "(C75" not in log and "0 bytes spill stores" in log, log


def test_ptxas_performance_advisories_reach_the_user_as_warnings(tmp_path):
    """ptxas prints "Potential Performance Loss" advisories without -v; the build turns each into
    one PerformanceWarning naming the kernel and the code (here the launch bounds stripped of their
    block count by hand, as before ec287f3: C7508)."""
    import warnings

    from tilelang_core.errors import PerformanceWarning
    from tilelang_cuda.compiler import performance_advisories
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    log = ("ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
           "ptxas info    : 0 bytes gmem\nptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async "
           "instructions are serialized")
    assert performance_advisories(log) == ["(C7511) Potential Performance Loss: wgmma.mma_async instructions "
                                           "are serialized"]
    bwd = example_module("attention/flash_attention_bwd.py").flash_bwd
    func = bwd.get_tir(8, 16, 4096, 64, False, block_M=64, block_N=128, num_stages=2, threads=256, stats="global")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions()
    mod = backend.lower(func, options)
    source = backend.codegen(mod, options).replace("__launch_bounds__(384, 1)", "__launch_bounds__(384)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.build(mod, source, options, tmp_path)
    messages = [str(w.message) for w in caught if w.category is PerformanceWarning]
    assert len(messages) == 1 and messages[0].startswith("kernel main (sm_90a): ptxas: (C7508)"), messages
    assert "please report it" in messages[0]


def test_stream_k_declines_tiles_that_run_two_blocks_per_sm():
    """A one-warpgroup GEMM whose ring fits twice in an SM keeps its two resident blocks: one
    persistent block per SM ran it at 0.57x on the H200."""
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=64, threads=128, stages=2),
                                 enable_stream_k=True)
    assert "no stream-K (two blocks per SM)" in source and "__launch_bounds__(256, 2)" in kernel


def test_no_tail_means_no_workspace():
    """Where the host decides against a tail the workspace is 0 bytes, which allocates nothing
    and puts no memset on the stream (~3 us a launch at 4096^3): tl_scratch_alloc hands back a
    non-null dummy for it, and tl_scratch_free knows it."""
    from tilelang_cuda.hopper.intrinsics import SCRATCH_HOST

    alloc = SCRATCH_HOST[SCRATCH_HOST.index("tl_scratch_alloc("):]
    assert alloc.index("if (bytes == 0) return &tl_scratch_none;") < alloc.index("cudaMallocFromPoolAsync")
    free = SCRATCH_HOST[SCRATCH_HOST.index("tl_scratch_free("):]
    assert free.index("if (scratch == &tl_scratch_none) return 0;") < free.index("cudaFreeAsync")
    source, _ = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES))
    host = source[source.find("#include <tvm/ffi/c_api.h>"):]
    call = "tl_stream_k = (void*)((void*)tl_scratch_alloc("
    size = host[host.index(call) + len(call):].split(",")[0]  # a name bound to (tail ? bytes : 0)
    assert "(int64_t)0" in host[host.index(f"int64_t {size} = "):].split(";")[0]


def test_stream_k_by_default_where_the_cost_model_says_it_pays():
    """By default a GEMM with one block per SM takes the stream-K walk, and the host shares its
    tail only where that saves a CTA more iterations than a partial-sum round trip costs: 19 for
    a 128x256 fp16 tile with 64-deep k-steps (128 KB of float32 per slot against 4.2 MFLOP a step),
    half that where the step is twice as deep. The walk's arithmetic with that threshold: no tail
    at 4096^3 on 132 SMs (3.88 waves: 8 iterations saved), a tail at 8192^3 (62 saved)."""
    src, _ = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES))
    assert "saves a CTA more than 19 iterations" in src
    src, _ = cuda_source(kernels.make_gemm(1000, 520, 264, **{**HOPPER_TILES, "bk": 128, "stages": 2}))
    assert "saves a CTA more than 9 iterations" in src
    forced, _ = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES), enable_stream_k=True)
    assert "stream-K: whole waves of tiles, then the rest shared along K by every CTA\n" in forced
    assert _walk(512, 132, 64, fixup=19)[1] == 0 and _walk(2048, 132, 128, fixup=19)[1] == 68
