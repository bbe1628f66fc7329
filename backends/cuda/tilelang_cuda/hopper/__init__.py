"""The sm_90a path of the cuda backend: wgmma for T.gemm, TMA loads and warp specialization for
T.Pipelined. Chosen automatically on ``cuda:sm_90a``; pass configs turn each part off
(``tl.disable_wgmma``, ``tl.disable_tma_lower``, ``tl.disable_warp_specialized``,
``tl.disable_wgmma_overlap``, ``tl.disable_pingpong``, ``tl.disable_tma_store``,
``tl.disable_conditional_mask``, ``tl.disable_two_blocks_per_sm``, ``tl.disable_persistent``,
``tl.disable_stream_k``);
opt-ins, correct but not faster on the H200: ``tl.enable_persistent`` (for GEMM too),
``tl.enable_overlap_block``, ``tl.enable_cluster_multicast``.

wgmma.py            plan (warpgroup split, instruction shape), layouts, lowering of T.gemm
warp_specialize.py  T.Pipelined -> TMA producer warpgroup + mbarrier ring + consumer warpgroups
ring_loops.py       the ring's mbarriers, the producer's loads and one consumer iteration as statements
consumer_schedule.py the consumers' order: tile-group waits/releases, wgmma issue/wait overlap, lazy waits
zero_fill.py        a provably-zero fill of a gemm's accumulator folded into the gemm (clear_accum);
                    and a fill zero only in some iterations skipped there
tma.py, tma_store.py TMA boxes and tensor maps; the epilogue through TMA stores
cluster.py          opt-in: two CTAs sharing tiles by TMA multicast
persistent.py       one resident CTA per SM walking the tiles (attention by default)
tile_scheduler.py   persistent tiles of different lengths (causal attention, by default) handed out by a counter
stream_k.py         a partial last wave shared along K by every resident CTA (by default where it pays)
stream_k_state.py   which loops it may cut: GEMM's sums, attention's online softmax, and how pieces combine
occupancy.py        setmaxnreg's register split; two resident blocks per SM where they fit
pingpong.py         attention's two consumer warpgroups taking turns at the tensor cores
planner.py          what is chosen for one kernel, and why (notes at the top of the source)
intrinsics.py       the device helpers both emit (inline PTX), generated per kernel
"""
