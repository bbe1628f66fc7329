"""The SIMT interpreter's shared-memory race check (simt/interpreter_races.py): a barrier the
compiler forgot raises in CI instead of passing a lockstep run and computing garbage on the GPU.
The bookkeeping on its own, then the kernel that found it: a T.Pipelined loop whose body changes
the tile it loaded in place (a scan by one thread, a scale by all) and reads it from other warps,
which got no barrier between the two before (relative error 0.7 on the H200, exact here)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.simt.interpreter import Storage
from tilelang_core.simt.interpreter_races import SharedMemoryRace, SharedRaces
from tilelang_core.testing.oracle import PATHS, run

LANES = 128


def pool(races):
    """A 256-byte shared pool and a float32 view of it, both tracked."""
    raw = np.zeros(256, np.uint8)
    return (Storage(raw, False, [256], "uint8", tracker=races, name="smem"),
            Storage(raw.view(np.float32), False, [64], "float32", tracker=races, name="smem_float32"))


def lanes(*ids):
    mask = np.zeros(LANES, bool)
    mask[list(ids)] = True
    return mask


def at(*elements):
    """Element ``elements[i]`` for lane i (the rest read element 0, masked off)."""
    flat = np.zeros(LANES, np.int64)
    flat[:len(elements)] = elements
    return flat


def test_a_read_of_another_warps_write_needs_a_barrier():
    races = SharedRaces(32)
    _, f32 = pool(races)
    f32.write(at(5), 1.0, lanes(0))
    f32.read(np.full(LANES, 5), lanes(3, 31))  # lanes of the writer's warp
    with pytest.raises(SharedMemoryRace, match="'smem_float32': warp 1 reads what warp 0 wrote"):
        f32.read(np.full(LANES, 5), lanes(40))
    races.barrier()
    f32.read(np.full(LANES, 5), lanes(40, 100))


def test_writes_after_other_warps_reads_or_writes_race():
    races = SharedRaces(32)
    _, f32 = pool(races)
    f32.read(np.full(LANES, 7), lanes(0, 33))  # two warps read element 7
    with pytest.raises(SharedMemoryRace, match="warp 0 overwrites what several warps read"):
        f32.write(at(7), 0.0, lanes(0))
    races.barrier()
    f32.write(at(7), 0.0, lanes(0))
    with pytest.raises(SharedMemoryRace, match="warp 2 overwrites what warp 0 wrote"):
        f32.write(np.full(LANES, 7), 1.0, lanes(64))


def test_views_of_the_pool_share_their_bytes():
    races = SharedRaces(32)
    raw, f32 = pool(races)
    f32.write(at(2), 1.0, lanes(0))  # bytes 8..11
    raw.read(np.full(LANES, 7), lanes(32))  # byte 7: not written
    with pytest.raises(SharedMemoryRace, match="'smem': warp 1 reads what warp 0 wrote"):
        raw.read(np.full(LANES, 10), lanes(32))


def test_a_new_block_forgets_the_last_one():
    races = SharedRaces(64)  # a wave of 64 lanes: lanes 0 and 40 are one wave
    _, f32 = pool(races)
    f32.write(at(1), 1.0, lanes(0))
    f32.read(np.full(LANES, 1), lanes(40))
    races.new_block()
    _, f32 = pool(races)
    f32.read(np.full(LANES, 1), lanes(100))


def in_place_pipeline(n, chunk, threads, stages, cols):
    """Each chunk of G: loaded (pipelined), scanned in place by one thread, scaled in place by every
    thread, then read by every thread into O = scan * (column + 1)."""
    @T.prim_func
    def main(G: T.Tensor((n,), "float32"), O: T.Tensor((n, cols), "float32")):
        with T.Kernel(1, threads=threads):
            g_s = T.alloc_shared((chunk,), "float32")
            o = T.alloc_fragment((chunk, cols), "float32")
            for k in T.Pipelined(T.ceildiv(n, chunk), num_stages=stages):
                T.copy(G[k * chunk:(k + 1) * chunk], g_s)
                T.cumsum(g_s, dim=0)
                for r in T.Parallel(chunk):
                    g_s[r] = g_s[r] * 0.5
                for r, c in T.Parallel(chunk, cols):
                    o[r, c] = g_s[r] * (c + 1)
                T.copy(o, O[k * chunk:(k + 1) * chunk, :])

    return main


@settings(max_examples=12, deadline=None)
@given(chunks=st.integers(1, 3), tail=st.integers(0, 7), chunk=st.sampled_from([32, 64]),
       threads=st.sampled_from([64, 128]), stages=st.sampled_from([1, 2, 3]), path=st.sampled_from(PATHS),
       seed=st.integers(0, 99))
def test_a_tile_changed_in_place_in_a_pipeline_matches_numpy(chunks, tail, chunk, threads, stages, path, seed):
    n = chunks * chunk + tail  # a ragged last chunk reads zeros past the end
    cols = 8
    g = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    out = np.full((n, cols), np.nan, np.float32)
    run(path, in_place_pipeline(n, chunk, threads, stages, cols), G=g, O=out)
    padded = np.concatenate([g, np.zeros(-n % chunk, np.float32)])
    scan = np.cumsum(padded.reshape(-1, chunk), axis=1).reshape(-1)[:n] * 0.5
    np.testing.assert_allclose(out, scan[:, None] * np.arange(1, cols + 1), rtol=1e-5, atol=1e-5)
