"""Autotune of the GEMM example over a 16-config space (cpu backend, or cuda with --target cuda):
serial compile (in this process) vs parallel compile (a spawn process pool, cold: workers started by the search; warm: a
pool kept from an earlier search). Every run starts from an empty kernel cache and does not read
or write tuning results, so every candidate is really compiled. Medians over --repeats.

    .venv/bin/python bench/autotune_compile.py [--size 128] [--workers N] [--repeats 3]
    python3 bench/autotune_compile.py --target cuda --size 4096 --repeats 1      # on the H200

"compile" is the wall time of the compile phase, "search" the whole search (compile + check +
bench of 16 candidates); timing settings are the tests' (warmup 1 ms, rep 5 ms).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "gemm"))

SPACES = {
    "cpu": {"block_M": [32, 64], "block_N": [32, 64], "block_K": [32, 64], "num_stages": [1, 2]},
    "cuda": {"block_M": [64, 128], "block_N": [64, 128], "block_K": [32, 64], "num_stages": [2, 3]},
}
#: (warmup ms, rep ms) per candidate
TIMING = {"cpu": (1, 5), "cuda": (10, 50)}


def ref(a, b):
    return a.double() @ b.double()


def search(size: int, workers: int, target: str = "cpu") -> dict:
    import tilelang_core as tl
    from gemm import gemm
    from tilelang_core.jit import clear_memory_cache

    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="tl-bench-autotune-")
    clear_memory_cache()
    warmup, rep = TIMING[target]
    tuner = tl.autotune(configs=SPACES[target], warmup=warmup, rep=rep, ref_prog=ref, compile_workers=workers,
                        cache_results=False, progress=False)(gemm)
    start = time.perf_counter()
    result = tuner.tune(size, size, size)
    wall = time.perf_counter() - start
    assert not result.failed, [(c.config, c.error) for c in result.failed]
    return {"compile": result.compile_wall, "search": wall, "best": result.config,
            "best_ms": result.latency}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", choices=sorted(SPACES), default="cpu")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    os.environ["TILELANG_TARGET"] = args.target
    from tilelang_core.autotune.local import shutdown_pools

    search(args.size, 0, args.target)  # imports and first-use costs out of the way of every mode
    rows = {"serial (in-process)": [], f"parallel {args.workers} workers, cold pool": [],
            f"parallel {args.workers} workers, warm pool": []}
    for _ in range(args.repeats):
        rows["serial (in-process)"].append(search(args.size, 0, args.target))
        shutdown_pools()
        rows[f"parallel {args.workers} workers, cold pool"].append(search(args.size, args.workers, args.target))
        rows[f"parallel {args.workers} workers, warm pool"].append(search(args.size, args.workers, args.target))
    shutdown_pools()
    print(f"16-config GEMM {args.size}^3 search, {args.target} backend, {os.cpu_count()} CPUs, "
          f"median of {args.repeats}")
    summary = {}
    for mode, runs in rows.items():
        compile_s = statistics.median(r["compile"] for r in runs)
        search_s = statistics.median(r["search"] for r in runs)
        summary[mode] = {"compile_s": round(compile_s, 2), "search_s": round(search_s, 2)}
        tflops = 2 * args.size ** 3 / runs[-1]["best_ms"] / 1e9
        print(f"  {mode:<34} compile {compile_s:6.2f} s   whole search {search_s:6.2f} s   "
              f"best {runs[-1]['best']} {runs[-1]['best_ms']:.4f} ms ({tflops:.1f} TFLOP/s)")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
