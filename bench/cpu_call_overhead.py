"""Per-call Python overhead of our launch paths on the cpu backend, next to the raw tvm-ffi call.

The Python side of a call (launcher, output allocation, @jit dispatch) is the same code as on CUDA
(only the device test differs), so this measures issue 4's "our cost on top of raw tvm-ffi" on a
machine without a GPU. ``cuda_call_overhead.py`` prints the same table on the H200.

    .venv/bin/python bench/cpu_call_overhead.py [--calls 20000] [--rounds 15]
"""

import argparse
import os
import warnings

# The kernel is a parallel loop: with TVM's worker pool, every call wakes (and then spins) worker
# threads, which on a small machine is most of the noise. One thread runs it on the caller's.
os.environ.setdefault("TVM_NUM_THREADS", "1")

import torch  # noqa: E402

from call_overhead_common import measure, paths, report  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per timed batch")
    parser.add_argument("--rounds", type=int, default=15, help="batches per path (median over them)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)  # likewise for torch's x + 1
    n = 1024
    x, y = torch.randn(n), torch.empty(n)
    rows = paths(x, y, "cpu")
    samples = measure(rows, args.calls, args.rounds)
    report(rows, samples, f"cpu backend, torch {torch.__version__}, {n} floats, "
                          f"{args.rounds} x {args.calls} calls per path")


if __name__ == "__main__":
    main()
