"""cpu backend: compile time of the GEMM example (cold, from the disk cache, from memory) and its
run time next to torch.matmul on the same CPU. Medians; ratios printed last.

    .venv/bin/python bench/cpu_gemm.py [--sizes 256 512 1024] [--threads N]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One compile in a fresh process: imports are timed apart from the compile itself.
COMPILE = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import tilelang_core as tilelang
import tilelang_core.language as T
import torch, tvm
t1 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from gemm import gemm
t2 = time.perf_counter()
kernel = gemm(1024, 1024, 1024, dtype="float32")
t3 = time.perf_counter()
again = gemm(1024, 1024, 1024, dtype="float32")
t4 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "compile": t3 - t2, "memory": t4 - t3, "from_cache": kernel.from_cache}))
"""


def compile_times(repeats: int = 3) -> dict:
    rows = {"cold": [], "disk": []}
    for _ in range(repeats):
        cache = tempfile.mkdtemp(prefix="tl-bench-cache-")
        env = {**os.environ, "TILELANG_CACHE_DIR": cache, "TILELANG_TARGET": "cpu"}
        for phase in ("cold", "disk"):
            out = subprocess.run([sys.executable, "-c", COMPILE, str(ROOT / "examples/gemm")], env=env,
                                 capture_output=True, text=True, check=True)
            rows[phase].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


def run_times(sizes, threads):
    import warnings

    import torch

    warnings.simplefilter("ignore")
    sys.path.insert(0, str(ROOT / "examples/gemm"))
    from gemm import gemm

    from tilelang_core.profiler import do_bench
    from tilelang_core.target import Target

    if threads:
        torch.set_num_threads(threads)
    rows = []
    with Target("cpu"):
        for n in sizes:
            a, b = torch.randn(n, n), torch.randn(n, n)
            kernel = gemm(n, n, n, dtype="float32")
            c = kernel(a, b)
            err = ((c.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm()).item()
            ours = do_bench(lambda: kernel(a, b), warmup_ms=50, rep_ms=500, return_mode="median")
            torch_ms = do_bench(lambda: torch.matmul(a, b), warmup_ms=50, rep_ms=500, return_mode="median")
            rows.append((n, ours, torch_ms, err))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for both torch and TVM's pool (0: each library's default)")
    args = parser.parse_args()
    if args.threads:  # before tvm loads: its thread pool reads this once
        os.environ["TVM_NUM_THREADS"] = str(args.threads)
    import statistics

    times = compile_times()
    med = lambda phase, key: statistics.median(r[key] for r in times[phase])  # noqa: E731
    print(f"cpu: {os.cpu_count()} cores; threads: {args.threads or 'library defaults'}")
    print("\nGEMM example (1024^3 fp32, 64x64x32 tiles), median of 3 fresh processes:")
    print(f"  imports (tilelang_core, language, torch, tvm)  {med('cold', 'imports') * 1e3:8.1f} ms")
    print(f"  compile, cold (parse + lower + LLVM + link)  {med('cold', 'compile') * 1e3:8.1f} ms")
    print(f"  compile, from the disk cache                 {med('disk', 'compile') * 1e3:8.1f} ms "
          f"(from_cache={times['disk'][0]['from_cache']})")
    print(f"  same call again, in-memory cache             {med('cold', 'memory') * 1e6:8.1f} us")
    print("\nrun time, fp32, median ms (do_bench), ratio = torch / ours (>1: ours faster)")
    print(f"  {'n':>6} {'tilelang cpu':>14} {'torch.matmul':>14} {'ratio':>8} {'rel err':>9}")
    for n, ours, theirs, err in run_times(args.sizes, args.threads):
        print(f"  {n:>6} {ours:>14.3f} {theirs:>14.3f} {theirs / ours:>8.3f} {err:>9.1e}")


if __name__ == "__main__":
    main()
