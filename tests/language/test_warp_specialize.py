"""TileLang's hand-written warp specialization (language/barriers.py): T.alloc_barrier, T.ws,
T.tma_copy, the mbarrier waits and arrivals, T.set_max_nreg. Here: what the frontend refuses and
why, what each backend without mbarriers says, where barriers go (none between T.ws regions, a
barrier among a group's threads inside one), and a thread group's branch needing such a barrier
on every reference path. The numerics of TileLang's warp-specialized GEMMs on the cuda
interpreter are in backends/cuda/tests/test_ws_kernels_interpreted.py, on the H200 in
backends/cuda/tests/gpu/test_gpu_warp_specialize.py."""

import numpy as np
import pytest
import tvm_ffi
from tvm import tirx

import tilelang_core.language as T
from tilelang_core import FrontendError, LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run


def producer_consumer(count=128, threads=256):
    """One tile through shared memory: warpgroup 0 loads it, warpgroup 1 doubles it."""
    @T.prim_func
    def main(X: T.Tensor((64, 32), "float32"), Y: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=threads):
            X_s = T.alloc_shared((64, 32), "float32")
            y = T.alloc_fragment((64, 32), "float32")
            full = T.alloc_barrier(arrive_count=count)
            with T.ws(0):
                T.tma_copy(X[0, 0], X_s, barrier=full)
                T.barrier_arrive(full)
            with T.ws(1):
                T.barrier_wait(full, 0)
                for i, j in T.Parallel(64, 32):
                    y[i, j] = X_s[i, j] * 2.0
                T.copy(y, Y)

    return main


def test_producer_consumer_runs_on_the_cuda_interpreter():
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    y = np.full_like(x, np.nan)
    run("cuda:sm_80", producer_consumer(), X=x, Y=y)
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("bad,message", [
    (dict(count=0), "arrive_count must be 1 to"),
    (dict(count=[]), "at least one arrive count"),
    (dict(count=1.5), "compile-time integer"),
    (dict(threads=128), r"T.ws\(1\) needs threads up to 256, but the kernel has 128"),
])
def test_barriers_and_regions_are_checked_at_the_line(bad, message):
    with pytest.raises(FrontendError, match=message):
        producer_consumer(**bad)


def test_alloc_barrier_must_be_at_the_kernels_top_level():
    @T.prim_func
    def main(X: T.Tensor((64, 32), "float32"), Y: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=128):
            X_s = T.alloc_shared((64, 32), "float32")
            for t in T.serial(2):
                full = T.alloc_barrier(arrive_count=128)
                T.tma_copy(X[0, 0], X_s, barrier=full)
                T.barrier_arrive(full)
                T.barrier_wait(full, 0)
                T.copy(X_s, Y)

    with pytest.raises(LoweringError, match="T.alloc_barrier must be called at the kernel's top level"):
        lower("cuda:sm_80", main)


def tma_kernel(form):
    @T.prim_func
    def main(X: T.Tensor((64, 32), "float32"), Y: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=128):
            X_s = T.alloc_shared((64, 32), "float32")
            bar = T.alloc_barrier(arrive_count=128)
            fake = T.alloc_shared((1,), "uint64")
            if form == "no barrier":
                T.tma_copy(X[0, 0], X_s)
            elif form == "multicast":
                T.tma_copy(X[0, 0], X_s, barrier=bar, cluster_mask=3)
            elif form == "not a barrier":
                T.tma_copy(X[0, 0], X_s, barrier=fake)
            elif form == "expect_tx":
                T.mbarrier_expect_tx(bar, 8192)
            elif form == "arrive_expect_tx":
                T.mbarrier_arrive_expect_tx(bar, 8192)
            elif form == "wait not a barrier":
                T.barrier_wait(fake[0], 0)
            T.copy(X_s, Y)

    return main


@pytest.mark.parametrize("form,message", [
    ("no barrier", "a load needs barrier="),
    ("multicast", "cluster_mask=0b11 names block rank 1, but the cluster has 1 block"),
    ("not a barrier", "'fake' is not a barrier; allocate it with T.alloc_barrier"),
    ("expect_tx", "counting transaction bytes by hand is not supported"),
    ("arrive_expect_tx", "counting transaction bytes by hand is not supported"),
    ("wait not a barrier", "expected a barrier from T.alloc_barrier"),
])
def test_tma_copy_and_barrier_misuse_is_refused(form, message):
    with pytest.raises(FrontendError, match=message):
        tma_kernel(form)


def test_tma_copy_of_rows_not_four_byte_aligned_is_refused():
    @T.prim_func
    def main(X: T.Tensor((64, 33), "float16"), Y: T.Tensor((64, 33), "float16")):
        with T.Kernel(1, threads=128):
            X_s = T.alloc_shared((64, 33), "float16")
            bar = T.alloc_barrier(arrive_count=128)
            T.tma_copy(X[0, 0], X_s, barrier=bar)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            T.copy(X_s, Y)

    with pytest.raises(LoweringError, match="not provably 4-byte aligned"):
        lower("cuda:sm_80", main)


@pytest.mark.parametrize("args,message", [((20, 1), "multiple of 8 in 24..256"), ((100, 1), "multiple of 8"),
                                          ((64, 2), "is_inc must be 0 or 1")])
def test_set_max_nreg_arguments_are_checked(args, message):
    with pytest.raises(FrontendError, match=message):
        @T.prim_func
        def main(X: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=128):
                T.set_max_nreg(*args)


@pytest.mark.parametrize("path,message", [
    ("cpu", "runs a block's threads one after another, so a thread waiting on an mbarrier"),
    ("hip:gfx942", "the hip backend has no mbarriers"),
    ("metal:apple7", "the metal backend has no mbarriers"),
])
def test_backends_without_mbarriers_refuse_by_name(path, message):
    x = np.zeros((64, 32), np.float32)
    with pytest.raises(LoweringError, match=message):
        run(path, producer_consumer(), X=x, Y=x.copy())


def calls(func, name):
    found = []

    def on_call(call):
        if call.op.name == "tirx.call_extern" and str(call.args[0].value).startswith(name):
            found.append(call)
        elif call.op.name == "tirx.tvm_storage_sync":
            if name == "__syncthreads":
                found.append(call)

    tvm_ffi.structural_walk(func.body, [(tirx.Call, on_call)])
    return found


def test_no_block_barrier_between_regions_and_one_among_the_copying_threads():
    """The regions are ordered by their mbarriers only: the only block barrier is the one after
    the barrier's initialization. The copy ends with a barrier among warpgroup 0's threads, so
    every thread has tied its part to the phase before any arrives."""
    func = lower("cuda:sm_80", producer_consumer())
    assert len(calls(func, "__syncthreads")) == 1
    (group,) = calls(func, "tl_named_barrier")
    assert [int(a) for a in group.args[1:]] == [15, 128]
    assert len(calls(func, "tl_mbarrier_track")) == 1 and len(calls(func, "tl_mbarrier_wait")) == 1


def test_set_max_nreg_is_emitted_on_cuda_and_dropped_elsewhere():
    @T.prim_func
    def main(X: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            T.annotate_producer_reg_dealloc(24)
            with T.ws(0):
                T.set_max_nreg(40, 0)
            with T.ws(1):
                T.inc_max_nreg(232)
            X[tx] = 1.0

    cuda = lower("cuda:sm_80", main)
    assert [str(c.args[0].value) for c in calls(cuda, "tl_set_max_nreg")] == ["tl_set_max_nreg<40, 0>",
                                                                              "tl_set_max_nreg<232, 1>"]
    assert not calls(lower("hip:gfx942", main), "tl_set_max_nreg")
    x = np.zeros(256, np.float32)
    run("cpu", main, X=x)
    assert (x == 1).all()


def test_a_fragment_shared_by_two_warpgroups_is_refused():
    @T.prim_func
    def main(X: T.Tensor((64, 32), "float32"), Y: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=256):
            y = T.alloc_fragment((64, 32), "float32")
            with T.ws(0):
                T.copy(X, y)
            with T.ws(1):
                T.copy(y, Y)

    with pytest.raises(LoweringError, match="fragment 'y' is used by different groups of threads"):
        lower("cuda:sm_80", main)


def group_load_then_use(threads, lo, hi):
    """Threads [lo, hi) load a tile into shared memory and reduce it: the reduction reads what
    other threads of the group wrote, a barrier among the group's threads between the two."""
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float32"), S: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            A_s = T.alloc_shared((64, 32), "float32")
            s = T.alloc_shared((64,), "float32")
            if tx >= lo and tx < hi:
                T.copy(A, A_s)
                T.reduce_sum(A_s, s, dim=1)
                T.copy(s, S)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads,lo,hi", [(256, 128, 256), (192, 64, 128), (128, 0, 128)])
def test_a_thread_group_branch_gets_its_own_barrier(path, threads, lo, hi):
    a = np.random.default_rng(threads + lo).standard_normal((64, 32)).astype(np.float32)
    s = np.full(64, np.nan, np.float32)
    partial = (lo, hi) != (0, threads)
    if partial and path.startswith(("hip", "metal")):
        kind = path.partition(":")[0]
        with pytest.raises(LoweringError, match=f"the {kind} backend has no barrier over a group of threads"):
            run(path, group_load_then_use(threads, lo, hi), A=a, S=s)
        return
    run(path, group_load_then_use(threads, lo, hi), A=a, S=s)
    np.testing.assert_allclose(s, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
