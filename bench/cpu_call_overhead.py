"""Per-call Python overhead of JITKernel on the CPU, next to the raw tvm-ffi call and torch.

    .venv/bin/python bench/cpu_call_overhead.py

Uses the small llvm test backend of tests/jit so that only the call path is measured.
"""

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "jit"))

import jit_test_backend  # noqa: E402
import jit_kernels as kernels  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from tilelang_core.jit import compile  # noqa: E402


def per_call_us(fn, number=200_000):
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return best / number * 1e6


def main():
    import os
    import tempfile

    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp()
    backend = jit_test_backend.LlvmTestBackend()
    k_out = compile(kernels.vadd, out_idx=[-1], _backend=backend)
    k_all = compile(kernels.vadd, out_idx=None, _backend=backend)
    a, b, c = (torch.rand(16, dtype=torch.float64) for _ in range(3))
    raw = k_all.function
    rows = [
        ("raw tvm-ffi call, 3 torch tensors (baseline)", lambda: raw(a, b, c)),
        ("torch.empty(16) alone (allocation baseline)", lambda: torch.empty((16,), dtype=torch.float64, device=a.device)),
        ("JITKernel, out_idx=None, kernel(a, b, c)", lambda: k_all(a, b, c)),
        ("JITKernel, out_idx=[-1], c = kernel(a, b)", lambda: k_out(a, b)),
    ]
    an, bn, cn = (np.random.rand(16) for _ in range(3))
    print(f"numpy inputs 64-byte aligned: {[x.ctypes.data % 64 == 0 for x in (an, bn, cn)]}")
    from tilelang_core.jit.args import aligned_empty

    an2, bn2, cn2 = (aligned_empty((16,), np.float64, 64) for _ in range(3))
    rows += [("JITKernel numpy (aligned), out_idx=None", lambda: k_all(an2, bn2, cn2)),
             ("JITKernel numpy (aligned), out_idx=[-1]", lambda: k_out(an2, bn2))]
    from tilelang_core.jit import jit

    lazy = jit(out_idx=[-1], _backend=backend)(kernels.make_scale)
    lazy(16, 2.0)
    rows.append(("@jit lazy: f(16, 2.0)(a) (memo lookup + call)", lambda: lazy(16, 2.0)(a)))

    class KeyOnlyProgram:  # stands in for EagerProgram; its cache_key is the frontend's cost
        def __init__(self, fn):
            pass

        def cache_key(self, args, kwargs):
            return args[0].shape

        def specialize(self, args, kwargs):
            from collections import namedtuple

            spec = namedtuple("Spec", "func out_idx key const_values")
            return spec(kernels.make_scale(args[0].shape[0], 2.0), [1], None, {})

    def eager_scale(A):
        return A

    eager = jit(eager_scale, mode="eager", _backend=backend, _program_factory=KeyOnlyProgram)
    eager(a)
    rows.append(("@jit eager: f(a) (trivial cache_key + call)", lambda: eager(a)))
    for label, fn in rows:
        print(f"{label:50s} {per_call_us(fn):6.2f} us")


if __name__ == "__main__":
    main()
