"""executor="ray": the same search as Ray tasks on a local Ray instance (cpu backend)."""

import pytest

import tilelang_core as tl
import tools_kernels as K

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install ray) - executor='ray' untested")

N = K.SIZE


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_executor_runs_the_16_config_search(local_ray):
    result = K.tuned_gemm(executor="ray").tune(N, N, N)
    assert len(result.candidates) == 16 and not result.failed
    assert result.parallel.startswith("ray")
    best = min(result.candidates, key=lambda c: c.latency)
    assert result.config == best.config
    # the winner was compiled by a Ray task and shipped back into this process's cache
    assert result.kernel.from_cache
    result.kernel.get_profiler().assert_allclose(K.ref_gemm)


def test_ray_executor_skips_failures_and_wrong_results_and_times_out_hangs(local_ray):
    configs = [{"mode": m} for m in ("good", "raise", "wrong", "hang")]
    result = tl.autotune(configs=configs, ref_prog=K.ref_gemm, warmup=1, rep=5, timeout=10,
                         executor="ray")(K.flaky_gemm).tune(N, N, N)
    assert result.config == {"mode": "good"}
    stages = {c.config["mode"]: c.stage for c in result.candidates}
    assert stages == {"good": "bench", "raise": "compile", "wrong": "check", "hang": "timeout"}
