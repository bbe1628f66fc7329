"""Per-call launch overhead of a tiny kernel from Python on CUDA, side by side (medians, us):
the raw tvm-ffi entry function, JITKernel with the output passed in, JITKernel allocating its
output, the @jit eager call, and torch's own x + 1; "over floor" is our Python cost on top of the
raw call (issue 4: aim under 1 us passed, under 2 us allocating). Same table as
``cpu_call_overhead.py``. Runs in well under a minute.

    python bench/cuda_call_overhead.py [--calls 5000] [--rounds 9]
"""

import argparse
import statistics
import time
import warnings

import torch

from call_overhead_common import measure, paths, report


def allocation_costs(n, calls=20_000):
    """What one output allocation costs by each torch spelling (the launcher uses new_empty)."""
    x = torch.empty(n, device="cuda")
    ways = [("torch.empty((n,), dtype=, device=x.device)",
             lambda: torch.empty((n,), dtype=torch.float32, device=x.device)),
            ("torch.empty(n, dtype=, device=x.device)",
             lambda: torch.empty(n, dtype=torch.float32, device=x.device)),
            ("x.new_empty(n)", lambda: x.new_empty(n))]
    print("\noutput allocation alone")
    for label, fn in ways:
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples.append((time.perf_counter() - start) / calls * 1e6)
        print(f"{label:<45} {statistics.median(samples):>6.2f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="calls per timed batch")
    parser.add_argument("--rounds", type=int, default=9, help="batches per path (median over them)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    n = 1024
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    rows = paths(x, y, "cuda")
    samples = measure(rows, args.calls, args.rounds, sync=torch.cuda.synchronize)
    report(rows, samples, f"cuda, {torch.cuda.get_device_name()}, torch {torch.__version__}, "
                          f"{n} floats, {args.rounds} x {args.calls} calls per path")
    # the same rows with a side stream current: torch's default is the legacy default stream, whose
    # launches the driver orders against every other blocking stream (cuda_launch_floor.py has both)
    side = torch.cuda.Stream()
    torch.cuda.set_stream(side)
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    rows = [row for row in paths(x, y, "cuda") if not row[0].startswith(("@jit", "raw tvm-ffi call +"))
            and "allocates" not in row[0]]
    samples = measure(rows, args.calls, args.rounds, sync=torch.cuda.synchronize)
    report(rows, samples, "the same on a side stream (torch.cuda.set_stream)")
    torch.cuda.set_stream(torch.cuda.default_stream())
    allocation_costs(n)


if __name__ == "__main__":
    main()
