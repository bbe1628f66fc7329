"""Thread-block clusters of two for warp-specialized loops (tl.enable_cluster_multicast, sm_90a).

Two neighbouring blocks along a launch dimension form a cluster when they load the same TMA tiles
(GEMM's B for the blocks of one column, non-causal attention's K and V for two query blocks) and
run the same number of iterations. Then, in warp_specialize.py:

    each CTA's producer loads strips j with j % 2 == its rank, with .multicast::cluster into both
    CTAs (same shared offset; each CTA's full barrier counts both halves)
    empty[g][s] counts the C local consumer threads and one arrive per warp of the peer
    (mapa + mbarrier.arrive.shared::cluster): a producer refills a slot only when both CTAs are
    done with it, since it writes into both
    barrier.cluster after the mbarrier init (the peer may load into our slots right away) and
    before exit (it may still arrive on our barriers)
    __cluster_dims__ on the kernel (tl_cluster_dims, codegen), so the launch is unchanged

The planner's rasterization walks pairs of block rows then (block_swizzle.rasterize(pairs=True)),
so "the same tiles" is decided as "equal for both blocks of a pair", by the analyzer.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.state import substitute, uses_var


def cluster_rank():
    """This CTA's rank in its cluster (0 or 1), as int32."""
    return tirx.Cast("int32", I.call("tl_cluster_rank", dtype="uint32"))


def cluster_pair(chain, boxes, values: dict, n, top_binds) -> tuple:
    """((launch dimension, boxes) for a cluster of two neighbouring blocks along it that load the
    same tiles: the dimension's extent is static and even, the loop runs as many iterations in
    both, and the boxes' coordinates do not depend on it (GEMM along blockIdx.y: B), the one with
    the most bytes shared; "") or (None, why not). "Do not depend": equal for both blocks of a pair,
    which panels of row pairs keep (block_swizzle.rasterize(pairs=True))."""
    bound = {b.var: b.value for b in top_binds}
    n = substitute(n, bound)
    best, why = None, "no block dimension of even size along which a TMA tile is shared"
    for attr in chain:
        tag, extent, var = str(attr.node.thread_tag), attr.value, attr.node.var
        if not tag.startswith("blockIdx.") or not isinstance(extent, tirx.IntImm) or int(extent) % 2:
            continue
        if not _same_for_the_pair(n, var):
            why = f"the loop's trip count depends on {tag}"
            continue
        shared = [b for b in boxes if b.cols // b.atom >= 2 and all(
            _same_for_the_pair(substitute(substitute(r.min, values), bound), var) for r in b.op.src.region)]
        if shared and (best is None or sum(b.bytes for b in shared) > sum(b.bytes for b in best[1])):
            best = (tag, shared)
    return (best, "") if best else (None, why)


def _same_for_the_pair(expr, var) -> bool:
    """Whether ``expr`` is the same for ``var`` = 2t and 2t + 1 (rasterized coordinates use the
    pair index ``var // 2``)."""
    if not uses_var(expr, var):
        return True
    t = tirx.Var("pair", "int32")
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(t, tvm.ir.Range.from_min_extent(0, 1 << 20))
    return analyzer.can_prove_equal(substitute(expr, {var: t * 2}), substitute(expr, {var: t * 2 + 1}))


__all__ = ["cluster_pair", "cluster_rank"]
