"""TileLang 0.1.15's own linear-attention examples timed on cuda_bench.py's LINATTN_SHAPES, for
its ``linattn`` table (run with TileLang's PYTHONPATH, in a process of its own; its examples import
FLA and einops at the top, which only their reference and comparison code use: stubs stand in).

    PYTHONPATH=<tilelang site> python bench/linear_attention_tilelang.py <tilelang examples/linear_attention> > tl.txt
    TILELANG_LINATTN=tl.txt python bench/cuda_bench.py --only linattn

Prints one line per shape: ``TL <kind> <batch> <seq> <heads> <dim> <ms>`` (median of CUDA events).
"""

import importlib.util
import sys
import types
from pathlib import Path

import torch

from rows_attention import LINATTN_SHAPES
from bench_common import side_by_side


def _stub(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def load(path: Path):
    unused = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stub"))  # noqa: E731
    for name in ("fla", "fla.ops", "fla.modules"):
        _stub(name)
    _stub("fla.ops.linear_attn", fused_chunk_linear_attn=unused)
    _stub("fla.modules.l2norm", l2norm_fwd=unused)
    if importlib.util.find_spec("einops") is None:
        _stub("einops", rearrange=unused)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    examples = Path(sys.argv[1])
    fwd = load(examples / "example_linear_attn_fwd.py")
    retention = load(examples / "example_retention_fwd.py")
    for kind, batch, seq, heads, dim in LINATTN_SHAPES:
        q, k, v = (torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.float16) for _ in range(3))
        if kind == "linear":
            kernel = fwd.tl_fused_chunk_fwd_kernel(batch, seq, heads, dim, dim)
            o = torch.zeros(batch, seq, heads, dim, device="cuda", dtype=torch.float32)

            def run():
                o.zero_()  # its blocks add their partial outputs into O
                kernel(q, k, v, o)
        else:
            kernel = retention.chunk_retention_fwd_kernel(batch, seq, heads, dim, dim)

            def run():
                retention.postprocess(kernel(q, k, v))
        ms = side_by_side({"tl": run}, per_round=5)["tl"]
        print(f"TL {kind} {batch} {seq} {heads} {dim} {ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
