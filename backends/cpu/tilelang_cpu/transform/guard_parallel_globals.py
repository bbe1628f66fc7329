"""GuardParallelGlobals: TileLang's safe memory access in ``T.Parallel`` loops, on the CPU.

A tile that overhangs a tensor whose size it does not divide makes ``T.Parallel`` iterations past
the end: ``y[i] = A[k * 64 + j]`` with ``k * 64 + j >= K``. TileLang (and the GPU backends here, see
tilelang_core/simt/transform/lower_parallel.py) read 0 for such a global load and skip such a
global store (a tensor given a value by T.annotate_safe_value reads that instead). The cpu backend ran them as written: reads past the end and writes into whatever
memory follows the tensor (seen: an abort; silently wrong results are as likely). This pass gives
every global access inside a ``T.Parallel`` loop the bounds condition the analyzer cannot prove,
knowing the enclosing loops' ranges, the ``if`` conditions around the access and the values bound
with ``x = expr``: the core's safe-memory-access walk (tilelang_core/transform/safe_global_access.py,
which the parser runs on the per-thread code) limited to ``T.Parallel`` bodies.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.transform.safe_global_access import guard_global_accesses
from tilelang_core.transform.safe_values import take_safe_values


def guard_parallel_globals(func: tirx.PrimFunc) -> tirx.PrimFunc:
    body, safe_values = take_safe_values(func.body)  # T.annotate_safe_value: pad with these
    return guard_global_accesses(func.with_body(body), parallel_only=True, safe_values=safe_values)


__all__ = ["guard_parallel_globals"]
