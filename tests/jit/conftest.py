import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from jit_test_backend import AlignmentCheckingBackend, LlvmTestBackend, PythonChecksBackend  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own cache folder, no IR dumps, and an empty in-memory cache."""
    from tilelang_core.jit import clear_memory_cache

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_DUMP_IR", raising=False)
    clear_memory_cache()
    yield tmp_path / "cache"
    clear_memory_cache()


@pytest.fixture
def backend():
    return LlvmTestBackend()


@pytest.fixture(params=["entry-checks", "python-checks", "entry-aligns"])
def both_launchers(request):
    """A backend for each launcher flavour: checks left to TVM's wrapper, all in Python, or the
    wrapper's plus alignment (as on cuda)."""
    return {"entry-checks": LlvmTestBackend, "python-checks": PythonChecksBackend,
            "entry-aligns": AlignmentCheckingBackend}[request.param]()
