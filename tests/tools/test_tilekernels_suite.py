"""tools/tilekernels_suite.py picks a few parameter sets of every TileKernels test function."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from tilekernels_suite import pick_tests  # noqa: E402


def test_picks_spread_over_each_function_and_skip_benchmarks():
    ids = [f"tests/a.py::test_x[p{i}]" for i in range(10)] + ["tests/a.py::test_y"] + \
          [f"tests/a.py::test_x_benchmark[p{i}]" for i in range(3)] + ["3 tests collected"]
    assert pick_tests(ids, 4) == ["tests/a.py::test_x[p0]", "tests/a.py::test_x[p2]", "tests/a.py::test_x[p4]",
                                  "tests/a.py::test_x[p6]", "tests/a.py::test_y"]
