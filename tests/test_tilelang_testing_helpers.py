"""TileLang's ``tilelang.testing`` helpers: device requirements and their skip reasons, main(),
seeding, torch_assert_close's tolerance and mismatch-ratio rules, the perf-regression entry points;
and that importing them stays cheap."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import tilelang_core.testing as tt
from tilelang_core.plugin import DeviceProbe
from tilelang_core.testing import pytest_helpers as ph


def _fn():
    def test_something():  # a named function: pytest's marks treat a lambda as a mark argument
        pass
    return test_something


def _skip_marks(func):
    return [(m.args[0], m.kwargs["reason"]) for m in getattr(func, "pytestmark", []) if m.name == "skipif"]


def test_import_is_cheap():
    code = ("import json, sys; import tilelang_core.testing, tilelang_core.utils; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'tvm', 'tvm_ffi', 'numpy', 'pytest'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_requires_cuda_asks_torch_when_it_is_loaded(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (skip, reason), = _skip_marks(tt.requires_cuda(_fn()))
    assert skip is True and "Requires a CUDA device" in reason
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    (skip, _), = _skip_marks(tt.requires_cuda(_fn()))
    assert skip is False
    assert tt.requires_cuda() is tt.requires_cuda and len(tt.requires_cuda.marks()) == 1


def test_without_torch_the_device_probe_decides(monkeypatch):
    monkeypatch.setattr(ph, "_loaded_torch", lambda: None)
    monkeypatch.setattr(ph, "_probed", lambda kind: ())
    assert not ph.has_cuda() and ph.cuda_compute_version() == (0, 0)
    hopper = DeviceProbe(kind="cuda", count=1, evidence=("/dev/nvidia0",), arch="sm_90a")
    monkeypatch.setattr(ph, "_probed", lambda kind: (hopper,) if kind == "cuda" else ())
    assert ph.has_cuda() and ph.cuda_compute_version() == (9, 0)
    assert "torch" in sys.modules  # (this process loaded it; the probe path never needed it)


@pytest.mark.parametrize("have, mode, want, runs", [
    ((9, 0), "ge", (9, 0), True), ((8, 0), "ge", (9, 0), False), ((9, 0), "gt", (9, 0), False),
    ((8, 9), "le", (8, 9), True), ((9, 0), "lt", (9, 0), False), ((8, 0), "eq", (8, 0), True),
])
def test_compute_version_modes(monkeypatch, have, mode, want, runs):
    monkeypatch.setattr(ph, "cuda_compute_version", lambda: have)
    monkeypatch.setattr(ph, "has_cuda", lambda: True)
    marks = _skip_marks(tt.requires_cuda_compute_version(*want, mode=mode)(_fn()))
    version_skip = next(s for s, r in marks if "compute" in r)
    assert version_skip is (not runs)
    reason = next(r for _, r in marks if "compute" in r)
    assert reason == f"Requires CUDA compute {mode} {want[0]}.{want[1]}, but have {have[0]}.{have[1]}"
    variant = getattr(tt, f"requires_cuda_compute_version_{mode}")(*want)(_fn())
    assert next(s for s, r in _skip_marks(variant) if "compute" in r) is (not runs)


def test_compute_version_needs_a_device_too(monkeypatch):
    monkeypatch.setattr(ph, "has_cuda", lambda: False)
    marks = _skip_marks(tt.requires_cuda_compute_version_ge(8, 0)(_fn()))
    assert any(skip and "CUDA device" in reason for skip, reason in marks)
    with pytest.raises(ValueError, match="Invalid mode"):
        tt.requires_cuda_compute_version(9, 0, mode="ne")


def test_requires_package():
    (skip, _), = _skip_marks(tt.requires_package("json")(_fn()))
    assert skip is False
    (skip, reason), = _skip_marks(tt.requires_package("json", "no_such_pkg_xyz")(_fn()))
    assert skip is True and "no_such_pkg_xyz" in reason


def test_main_runs_pytest_on_the_calling_file(tmp_path):
    test_file = tmp_path / "test_tiny.py"
    test_file.write_text(textwrap.dedent("""
        import tilelang_core.testing

        def test_one():
            assert 1 + 1 == 2

        if __name__ == "__main__":
            tilelang_core.testing.main()
    """))
    out = subprocess.run([sys.executable, str(test_file), "-q", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and "1 passed" in out.stdout


def test_set_random_seed_makes_draws_repeat():
    tt.set_random_seed(7)
    first = torch.randn(4)
    tt.set_random_seed(7)
    assert torch.equal(first, torch.randn(4))


def test_torch_assert_close_tolerance_and_ratio():
    ref = torch.ones(1000)
    got = ref.clone()
    got[:2] += 1.0  # 2 mismatches; the default ratio 0.001 allows int(1000 * 0.001) = 1
    with pytest.raises(AssertionError, match=r"Too many mismatched elements: 2 > 1") as info:
        tt.torch_assert_close(got, ref)
    assert "First mismatch at index [0]" in str(info.value)
    assert tt.torch_assert_close(got, ref, max_mismatched_ratio=0.002) is True
    # rtol scales the second argument (the reference): |a - b| <= atol + rtol * |b|
    assert tt.torch_assert_close(torch.tensor([1.0]), torch.tensor([100.0]), rtol=0.99, atol=0)
    with pytest.raises(AssertionError):
        tt.torch_assert_close(torch.tensor([100.0]), torch.tensor([1.0]), rtol=0.99, atol=0,
                              max_mismatched_ratio=0)
    nan = torch.tensor([float("nan"), float("inf")])
    assert tt.torch_assert_close(nan, nan.clone())
    with pytest.raises(AssertionError):
        tt.torch_assert_close(nan, nan.clone(), equal_nan=False, max_mismatched_ratio=0)


def test_torch_assert_close_attribute_checks():
    a = torch.ones(3, dtype=torch.float16)
    with pytest.raises(AssertionError, match="attribute 'dtype'"):
        tt.torch_assert_close(a, torch.ones(3))
    assert tt.torch_assert_close(a, torch.ones(3), check_dtype=False)
    with pytest.raises(AssertionError, match="attribute 'shape'"):
        tt.torch_assert_close(torch.ones(3), torch.ones(1, 3), check_dtype=False)
    u = torch.arange(4).to(torch.uint32)  # promoted through int64, which torch refuses itself
    assert tt.torch_assert_close(u, torch.arange(4, dtype=torch.int32), check_dtype=False)


def regression_first():
    tt.process_func(lambda: 2.5, "first_case")


def regression_second():
    tt.process_func(lambda: 0.0, "bad_case")  # a failed measurement: dropped with a warning


def test_perf_regression_runs_the_callers_cases(capsys, monkeypatch):
    monkeypatch.setenv("TL_PERF_REGRESSION_FORMAT", "json")
    monkeypatch.delenv("TL_PERF_REGRESSION_ONLY", raising=False)
    with pytest.warns(RuntimeWarning, match="bad_case has latency"):
        tt.process_func(lambda: -1.0, "bad_case")
    tt.regression()
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("__TILELANG_PERF_RESULTS_JSON__=")
    assert json.loads(line.split("=", 1)[1]) == [{"name": "first_case", "latency": 2.5, "case": "first"}]
    monkeypatch.setenv("TL_PERF_REGRESSION_ONLY", "second")
    tt.regression()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1].split("=", 1)[1]) == []
