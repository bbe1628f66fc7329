"""TILELANG_DUMP_IR=dir for a CUDA compile (no GPU needed): the cuda backend's own passes are
dumped and timed in pipeline order, like TVM's."""

import importlib.util
import warnings
from pathlib import Path

import tilelang_core as tl

GEMM = Path(__file__).resolve().parents[3] / "examples" / "gemm" / "gemm.py"


def test_cuda_passes_are_dumped_in_order_with_timing(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("cuda_dump_gemm", GEMM)
    gemm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gemm)
    monkeypatch.setenv("TILELANG_DUMP_IR", str(tmp_path / "dump"))
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl.compile(gemm.gemm.get_tir(256, 128, 64), out_idx=[-1], target="cuda:sm_80")
    (folder,) = list((tmp_path / "dump").iterdir())
    names = [p.name.split("_", 1)[1].rsplit(".py", 1)[0] for p in sorted((folder / "passes").iterdir())]
    ours = [n for n in names if n.startswith("cuda.")]
    assert ours == ["cuda.ParallelCopies", "cuda.BlockSwizzle", "cuda.Specialize", "cuda.SplitMaskedFills", "cuda.SoftwarePipeline", "cuda.InsertBarriers",
                    "cuda.ParallelTileOps", "cuda.LowerTileOps", "cuda.LowerParallel", "cuda.LowerAtomicCalls",
                    "cuda.MergeAtomicAdds", "cuda.ApplyLayouts", "cuda.PrefetchFragments",
                    "cuda.Finalize", "cuda.VerifyNoTileOps"]
    assert "cuda.LowerTileOps:" in (folder / "pass-timing.txt").read_text()
