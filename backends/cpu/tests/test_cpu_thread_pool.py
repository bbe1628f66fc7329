"""Block-parallel cpu kernels get a thread pool as wide as the CPUs the process may use (TVM's own
default is the physical core count: one on a 2-vCPU machine, which halved the GEMM's speed; see
bench/cpu_gemm.py). TVM reads TVM_NUM_THREADS when its pool starts, at the first launch."""

import os
import subprocess
import sys

CODE = r"""
import os, warnings
warnings.simplefilter("ignore")
import numpy as np
import tilelang_core as tl, tilelang_core.language as T

@T.prim_func
def add(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
    with T.Kernel(4, threads=64) as bx:
        for i in T.Parallel(64):
            B[bx * 64 + i] = A[bx * 64 + i] + 1.0

k = tl.compile(add, out_idx=[-1], target="cpu")
a = np.random.rand(256).astype("float32")
assert np.allclose(k(a), a + 1)
print(os.environ.get("TVM_NUM_THREADS", "0"), len(os.sched_getaffinity(0)))
"""


def run(tmp_path, env_extra):
    script = tmp_path / "pool_width.py"  # kernels are parsed from their source file
    script.write_text(CODE)
    env = {k: v for k, v in os.environ.items() if k != "TVM_NUM_THREADS"} | env_extra
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return [int(x) for x in out.stdout.split()[-2:]]


def test_pool_uses_every_available_cpu(tmp_path):
    threads, cpus = run(tmp_path, {})
    assert threads == cpus


def test_a_width_the_user_set_is_kept(tmp_path):
    threads, _ = run(tmp_path, {"TVM_NUM_THREADS": "1"})
    assert threads == 1
