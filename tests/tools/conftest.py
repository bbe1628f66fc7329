import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own cache folder (kernels and tuning results), no IR dumps, the cpu
    target, and an empty in-memory kernel cache. Pool workers get these settings with every task."""
    from tilelang_core.jit import clear_memory_cache

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_DUMP_IR", raising=False)
    monkeypatch.delenv("TILELANG_AUTOTUNE_WORKERS", raising=False)
    # the GEMM example says target="auto": these are cpu-backend tests even on a GPU machine
    monkeypatch.setenv("TILELANG_TARGET", "cpu")
    clear_memory_cache()
    yield tmp_path / "cache"
    clear_memory_cache()


@pytest.fixture(scope="session", autouse=True)
def _stop_compile_pools():
    yield
    from tilelang_core.autotune.local import shutdown_pools

    shutdown_pools()
