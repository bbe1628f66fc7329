"""The acme rule table: the SIMT kit's rules (copy, fill, reduce, atomic, cumsum and its FMA gemm;
see tilelang_core/simt) under the kind "acme", and the kit's knobs for ACME hardware.

An ACME core runs blocks of 32-lane warps. Replace the knobs with your hardware's (docs/writing-a-
backend.md, "GPU backends: the SIMT kit") and pass ``gemm=`` your matrix instruction's rule when
you have one. Importing this module registers the rules (idempotent).
"""

from __future__ import annotations

from tilelang_core.simt import SimtDialect, register_simt_rules

KIND = "acme"

#: 32-lane warps, no asynchronous global->shared copies (T.Pipelined loops run synchronously),
#: no block votes, 16-byte vectors at most
ACME = SimtDialect(kind=KIND, warp_size=32, async_copy=False, block_votes=False, vector_bytes=16)

register_simt_rules(KIND)
