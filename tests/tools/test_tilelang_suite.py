"""tools/tilelang_suite.py: the import rewrite a TileLang user makes, and the comparison table."""

import importlib.util
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
spec = importlib.util.spec_from_file_location("tilelang_suite", TOOLS / "tilelang_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


@pytest.mark.parametrize("before, after", [
    ("import tilelang", "import tilelang_core as tilelang"),
    ("import tilelang as tl", "import tilelang_core as tl"),
    ("import tilelang.language as T", "import tilelang_core.language as T"),
    # binds `tilelang` as a side effect, which the test files rely on
    ("import tilelang.testing", "import tilelang_core.testing; import tilelang_core as tilelang"),
    ("from tilelang import tvm as tvm", "from tilelang_core import tvm as tvm"),
    ("    from tilelang.utils.tensor import x  # why", "    from tilelang_core.utils.tensor import x  # why"),
    ("from tilelang_utils import helper", "from tilelang_utils import helper"),
    ("import tilelangx", "import tilelangx"),
    ("x = 'import tilelang'", "x = 'import tilelang'"),
])
def test_rewrite_imports(before, after):
    assert suite.rewrite_imports(before) == after


def test_rewrite_keeps_line_numbers():
    text = "import tilelang\nimport tilelang.testing\n\ndef f():\n    from tilelang.language import copy\n"
    assert suite.rewrite_imports(text).count("\n") == text.count("\n")


def test_table_counts_passes_where_the_reference_passes():
    ref = {"results": {"examples/a/test_a.py::t1": {"outcome": "passed", "message": ""},
                       "examples/a/test_a.py::t2": {"outcome": "passed", "message": ""},
                       "examples/b/test_b.py::t3": {"outcome": "skipped", "message": ""}}}
    ours = {"results": {"examples/a/test_a.py::t1": {"outcome": "passed", "message": ""},
                        "examples/a/test_a.py::t2": {"outcome": "failed", "message": "boom | bad"},
                        "examples/b/test_b.py::t3": {"outcome": "passed", "message": ""}}}
    text = suite.table(ref, ours, failures=True)
    assert "| examples/a | 2 | 2 | 1 | 1 |" in text
    assert "| examples/b | 1 | 0 | 1 | 0 |" in text
    assert "| **all** | 3 | 2 | 2 | 1 |" in text
    assert "examples/a/test_a.py::t2 | failed | boom \\| bad |" in text


def test_perf_table_shows_the_speed_lines_not_the_logging():
    out = "INFO tilelang.jit.kernel: TileLang begins to compile kernel `k`\nTile-lang: 0.03 ms\nTile-lang: 261.6 TFlops\n"
    ref = {"results": {"examples/a/test_a.py::t": {"outcome": "passed", "message": "", "output": out}}}
    ours = {"results": {"examples/a/test_a.py::t": {"outcome": "passed", "message": "", "output": "Tile-lang: 0.02 ms"}}}
    text = suite.table(ref, ours, failures=False, perf=True)
    assert "| test_a.py::t | Tile-lang: 0.03 ms / Tile-lang: 261.6 TFlops | Tile-lang: 0.02 ms |" in text
