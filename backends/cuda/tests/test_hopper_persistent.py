"""Persistent schedules on sm_90a without a GPU: the static walk (one resident CTA per SM), the
producer taking over attention's Q, the default that picks them, and the dynamic tile scheduler
for tiles of different lengths (numerics run in tests/gpu)."""

import pytest

import kernels
from test_hopper_lowering import HOPPER_TILES, Target, cuda_source, example_module
from tilelang_core.simt.transform.state import substitute


def test_persistent_schedule_walks_tiles_with_one_cta_per_sm():
    """tl.enable_persistent (stream-K off): min(tiles, SMs) CTAs (the SM count read on the host at
    launch), each walking tiles cta, cta + CTAs, ...; the mbarrier ring continues across a CTA's
    tiles. tl.disable_stream_k alone leaves a GEMM one CTA per tile."""
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES), enable_persistent=True,
                                 disable_stream_k=True)
    assert "tl_num_sms()" in source[source.find("#include <tvm/ffi/c_api.h>"):]  # host side
    assert kernel.count("for (int t") == 2  # producer and consumers walk the same tiles
    _, plain = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES), disable_stream_k=True)
    assert "for (int t" not in plain and "tl_num_sms" not in plain


def test_dynamic_tile_order_covers_the_grid_longest_row_block_first_in_chunks():
    """The dynamic scheduler's tile -> block indices: every block exactly once; within each chunk
    of 8 heads (the last one smaller) the row blocks go from the longest down, each for every head
    of the chunk before the next."""
    import tvm
    from tvm import tirx

    from tilelang_cuda.hopper.persistent import _PersistentTiles
    from tilelang_cuda.hopper.tile_scheduler import CHUNK, DynamicTiles

    bx, by, bz = (tirx.Var(n, "int32") for n in ("bx", "by", "bz"))
    blocks = [(bx, 8), (by, 3), (bz, 5)]  # 15 heads: a chunk of 8, then one of 7
    tiles = DynamicTiles(_PersistentTiles(blocks, bx + 1), bx + 1, 256)
    tile = tirx.Var("u", "int32")
    vmap = tiles.block_indices(tile)
    analyzer = tvm.sym.Analyzer()
    order = [tuple(int(analyzer.simplify(substitute(vmap[v], {tile: tirx.const(u, "int32")}))) for v in (bx, by, bz))
             for u in range(8 * 15)]
    assert sorted(order) == sorted((x, y, z) for x in range(8) for y in range(3) for z in range(5))
    first, second = order[:8 * CHUNK], order[8 * CHUNK:]
    assert [o[0] for o in first] == [x for x in reversed(range(8)) for _ in range(CHUNK)]
    assert [o[0] for o in second] == [x for x in reversed(range(8)) for _ in range(15 - CHUNK)]
    assert {o[1] + 3 * o[2] for o in first} == set(range(CHUNK))


def test_causal_attention_takes_the_dynamic_scheduler_by_default(tmp_path):
    """Causal attention (tiles of different lengths), by default and under tl.enable_persistent
    alike: the host allocates a zeroed tile counter on the launch stream and frees it after the
    launch; the producer claims tiles with atomicAdd and publishes them through a two-slot shared
    ring, the consumers take them from there; the ring of loads runs at the running sum of trip
    counts. Both host build routes compile it. tl.disable_persistent gives one CTA per tile, and
    non-causal persistent attention keeps the static walk."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    ex = example_module("attention/flash_attention.py")
    causal = ex.flash_attention.get_tir(2, 3, 1000, 128, True, block_M=128, block_N=128, threads=256)
    source, kernel = cuda_source(causal)
    assert cuda_source(causal, enable_persistent=True)[1] == kernel
    host = source[source.find("#include <tvm/ffi/c_api.h>"):]
    assert host.index("tl_scratch_alloc((int64_t)4, (int64_t)4)") < host.index("tl_scratch_free(tl_tile_counter)")
    producer, consumers = kernel.split("tl_setmaxnreg_inc<232>();")
    assert producer.count("tl_claim_tile(tl_tile_counter)") == 2 and "tl_claim_tile" not in consumers
    assert "smem_int32_ptr[(tl_tile_seq_ptr[0] & 1)] = tl_tile;" in producer
    assert "tl_tile_cur_ptr[0] = smem_int32_ptr[(tl_tile_seq_ptr[0] & 1)];" in consumers
    assert "tl_ring_done_ptr[0] + k_load" in producer and "tl_ring_done_ptr[0] + k" in consumers
    # both walks end at the first invalid tile: a round counter spinning on after the last claim
    # (with the barrier after each round) cost a fifth of the kernel's time on the H200
    assert kernel.count("if (!((tl_tile_cur_ptr[0] < 48))) { break; }") == 2 and "tl_round" not in kernel
    for route in ("split", "nvcc"):
        backend, options = CudaBackend(Target("sm_90a")), CudaOptions(host_build=route)
        mod = backend.lower(causal, options)
        (tmp_path / route).mkdir()
        backend.build(mod, backend.codegen(mod, options), options, tmp_path / route)
    _, plain = cuda_source(causal, disable_persistent=True)
    assert "tl_claim_tile(" not in plain and "for (int t" not in plain
    _, static = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256), enable_persistent=True)
    assert "tl_claim_tile(" not in static and static.count("for (int t") == 2


def test_persistent_attention_prefetches_q_under_the_previous_epilogue(tmp_path):
    """Attention is persistent by default: Q is no longer copied by the consumers at each tile's
    start; the producer loads it by TMA once per tile (its own full/empty barrier pair, before the
    tile's K and V loads), waiting until the consumers' loop over the previous tile is done, so
    the load runs under that tile's epilogue. The consumers wait for it after their fills and
    release it right after their loop. Builds without spills; tl.disable_persistent gives the
    one-CTA-per-tile kernel, and enable_persistent the same kernel as the default."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256)
    source, kernel = cuda_source(func)
    assert cuda_source(func, enable_persistent=True)[1] == kernel
    assert "Q_s loaded by the producer once per tile" in source[:source.find("#ifdef")]
    producer, consumers = kernel.split("tl_setmaxnreg_inc<232>();")
    full, empty = "(&(smem_uint64_ptr[8]))", "(&(smem_uint64_ptr[9]))"  # after the 2 x 2 x 2 ring barriers
    assert f"tl_mbar_init({full}, 1);" in kernel and f"tl_mbar_init({empty}, 256);" in kernel
    q_loads = producer[producer.index("for (int t"):producer.index("for (int k_load")]
    assert q_loads.index(f"tl_mbar_wait({empty}, (1 - (t & 1)));") < q_loads.index(f"tl_mbar_expect_tx({full}, 32768);")
    assert q_loads.count("Q_tmap") == 2 and "K_tmap" not in q_loads  # two 64-column strips, before K
    assert "Q_ptr" not in consumers and "tl_fence_proxy_async" not in consumers.split("for (int k")[0]
    wait, loop = consumers.index(f"tl_mbar_wait({full}, (t_1 & 1));"), consumers.index("for (int k")
    assert consumers.index("acc_o_ptr[63] = 0x0p+0f") < wait < loop
    release, epilogue = consumers.index(f"tl_mbar_arrive({empty});"), consumers.index("tl_tma_store")
    assert loop < release < epilogue
    _, plain = cuda_source(func, disable_persistent=True)
    assert "Q_ptr" in plain and full not in plain and "for (int t" not in plain and "smem_uint64_ptr[10]" in kernel
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(ptxas_verbose=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "0 bytes spill stores" in backend.last_build.log


def test_persistent_by_default_only_where_a_per_tile_operand_moves_to_the_producer():
    """The default static walk needs attention's Q (loaded once per tile before the loop; GEMM's
    persistent default is stream-K's walk, test_hopper_stream_k.py), attention with one consumer
    warpgroup keeps two blocks per SM (measured better), a cluster pair keeps its launch; both
    switches at once are refused."""
    from tilelang_core.errors import ConfigError
    from tilelang_cuda.options import CudaOptions

    attention = kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256)
    source, kernel = cuda_source(attention)
    assert kernel.count("for (int t") == 2 and "Q_s loaded by the producer once per tile" in source
    _, gemm = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES))
    assert "for (int t = " not in gemm and "for (int u = " in gemm
    source, small = cuda_source(kernels.make_flash_attention(2, 4, 1000, 64, 64, 64, 128))
    assert "for (int t" not in small and "__launch_bounds__(256, 2)" in small
    _, paired = cuda_source(attention, enable_cluster_multicast=True)
    assert "for (int t" not in paired and "__cluster_dims__" in paired
    with pytest.raises(ConfigError, match="contradict"):
        CudaOptions(enable_persistent=True, disable_persistent=True)
