"""Many compiles of one kernel into one cache folder, from threads and from processes."""

import json
import multiprocessing
import threading

import numpy as np

import jit_mp_worker
import jit_kernels as kernels
from jit_test_backend import LlvmTestBackend
from tilelang_core.jit import DiskCache, compile


def assert_single_clean_entry(cache_root, key):
    published = list((cache_root / "v1" / "kernels").glob("*/*"))
    assert [p.name for p in published] == [key]
    assert list((cache_root / "v1" / "staging").iterdir()) == []
    assert list((cache_root / "v1" / "trash").iterdir()) == []
    assert DiskCache(cache_root).lookup(key) is not None
    assert json.loads((published[0] / "manifest.json").read_text())["key"] == key


def test_threads_compiling_the_same_kernel_build_it_once(isolated_cache, tmp_path):
    log = tmp_path / "builds.log"
    count = 8
    barrier = threading.Barrier(count)
    results, errors = [None] * count, []

    def work(i):
        try:
            backend = LlvmTestBackend(build_log=log)
            barrier.wait(timeout=30)
            kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
            a, b = np.random.rand(50), np.random.rand(50)
            results[i] = (np.array_equal(kernel(a, b), a + b), kernel.key)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert all(ok for ok, _ in results)
    keys = {key for _, key in results}
    assert len(keys) == 1
    assert log.read_text().count("build") == 1
    assert_single_clean_entry(isolated_cache, keys.pop())


def test_processes_compiling_the_same_kernel_build_it_once(isolated_cache, tmp_path):
    # two spawned processes plus this one, released together by a barrier
    ctx = multiprocessing.get_context("spawn")
    children = 2
    log = tmp_path / "builds.log"
    barrier, results = ctx.Barrier(children + 1), ctx.Queue()
    procs = [ctx.Process(target=jit_mp_worker.compile_and_run,
                         args=(str(isolated_cache), str(log), barrier, results))
             for _ in range(children)]
    for p in procs:
        p.start()
    barrier.wait(timeout=120)
    mine = compile(kernels.vadd, out_idx=[-1], _backend=LlvmTestBackend(build_log=log))
    outcomes = [results.get(timeout=120) for _ in range(children)]
    for p in procs:
        p.join(30)
    assert all(p.exitcode == 0 for p in procs)
    errors = [o[4] for o in outcomes if o[4]]
    assert not errors, errors
    assert all(o[1] for o in outcomes)
    assert {o[3] for o in outcomes} == {mine.key}
    assert log.read_text().count("build") == 1
    assert sorted([mine.from_cache] + [o[2] for o in outcomes]) == [False, True, True]
    assert_single_clean_entry(isolated_cache, mine.key)
