"""Persistent tile schedule for warp-specialized kernels: min(tiles, SMs) resident CTAs walk the
grid, the mbarrier ring continuing across a CTA's tiles, so the producer warpgroup loads the next
tile while the consumers run the last one's epilogue.

Tiles the consumers copied in before the loop (attention's Q) become the producer's too: one TMA
load per tile behind a full/empty barrier pair, issued once the consumers' loop over the previous
tile is done, so it runs under that tile's epilogue (``tile_operands`` in warp_specialize.py).

The default for kernels with such a per-tile operand, unless two blocks per SM or a cluster pair
apply (warp_specialize's ``persistent`` mode "tile_operands"): tiles of equal length (non-causal
attention) take the static walk here, tiles of different lengths (causal attention) the dynamic
tile scheduler (tile_scheduler.py). Measured on the H200 (bench/NOTES.md), same runs: attention
S4096 D128 587 vs 575 and 595 vs 582 TFLOP/s, S8192 D64 447 vs 430 and 450 vs 434, causal 555 vs
528 (the scheduler, session 8). GEMM-like kernels walk the tiles by default too, through
stream_k.py, which shares a partial last wave along K; with ``tl.disable_stream_k``,
``tl.enable_persistent`` gives them this static walk. ``tl.disable_persistent`` turns every
persistent schedule off. warp_specialize.py builds the loops through ``persistent_tiles(...).loop``
and ``.launch``.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.simt.transform.state import substitute

from .tile_scheduler import DynamicTiles


class _PersistentTiles:
    """A grid of ``gx x gy x gz`` tiles walked by min(tiles, SMs) resident CTAs: CTA ``c`` takes
    tiles c, c + CTAs, ...; the kernel body sees the old block indices as ``tile % gx`` etc. The
    producer runs ahead into a CTA's next tile while the consumers store the last one."""

    allocs, init, after = [], [], []  # what DynamicTiles adds around the walk

    def __init__(self, blocks, n):
        self.blocks = blocks  # [(block var, static extent)], x first
        self.total = 1
        for _, extent in blocks:
            self.total *= extent
        self.sms = tirx.Var("num_sms", "int32")
        self.host = [tirx.Bind(self.sms, tirx.call_extern("int32", "tl_num_sms"))]
        self.ctas = tirx.Min(tirx.const(self.total, "int32"), self.sms)
        self.cta = tirx.Var("cta", "int32")
        self.t = tirx.Var("t", "int32")
        self.done = self.t * n

    def loop(self, body, role: str = "", n=None):
        """``body`` (written for the old block indices) once per tile of this CTA; the same walk
        for every ``role``."""
        tile = self.cta + self.t * self.ctas
        vmap, stride = {}, 1
        for var, extent in self.blocks:
            vmap[var] = tirx.floormod(tirx.floordiv(tile, stride), extent)
            stride *= extent
        count = tirx.floordiv(self.total - self.cta + self.ctas - 1, self.ctas)
        return tirx.For(self.t, tirx.const(0, "int32"), count, tirx.ForKind.SERIAL, substitute(body, vmap))

    def launch(self, chain, inner, thread_var):
        """The 1-D launch of the resident CTAs around ``inner`` (the block size unchanged)."""
        threads_attr = next(a for a in chain if a.node.var.same_as(thread_var))
        iv = tirx.IterVar(tvm.ir.Range.from_min_extent(0, self.ctas), self.cta, 1, "blockIdx.x")
        inner = tirx.AttrStmt(threads_attr.node, threads_attr.attr_key, threads_attr.value, inner)
        return tirx.AttrStmt(iv, "thread_extent", self.ctas, inner)


def persistent_tiles(chain, n, n_value, wanted: bool, consumers: int = 0):
    """_PersistentTiles when the grid is static and every tile runs the same number of loop
    iterations (the ring position of a tile is then t * n); tiles of different trip counts
    (causal attention) get the dynamic scheduler (tile_scheduler.py, ``consumers`` threads take
    its tiles); None (one CTA per tile) when not ``wanted``, the grid is not static or the trip
    count reads memory. ``n_value``: the trip count with the kernel's names replaced by their
    values."""
    if not wanted:
        return None
    blocks = []
    for attr in chain:
        tag = str(attr.node.thread_tag)
        if tag.startswith("blockIdx."):
            if not isinstance(attr.value, tirx.IntImm):
                return None
            blocks.append((tag, attr.node.var, int(attr.value)))
    blocks.sort(key=lambda b: b[0])  # x, y, z
    if not blocks or any(str(a.node.thread_tag).startswith("threadIdx.") and a is not chain[-1] for a in chain):
        return None
    used, loads = set(), []
    tvm_ffi.structural_walk(n_value, [(tirx.Var, lambda v: used.add(v)), (tvm.ir.TensorLoad, loads.append)])
    if loads:
        # a trip count read from memory (MLA decode's per-sequence lengths): a resident CTA could
        # not know its tiles' ring positions, nor the host its waves; one CTA per tile
        return None
    static = _PersistentTiles([(var, extent) for _, var, extent in blocks], n)
    if any(any(v.same_as(var) for v in used) for _, var, _ in blocks):  # causal attention
        return DynamicTiles(static, n_value, consumers)
    return static
