"""`python -m tilelang_core doctor | targets`, run as a user would, in a subprocess."""

import json
import os
import subprocess
import sys

from tilelang_core.testing.distributions import make_plugin_distribution


def run(*args, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "tilelang_core", *args], capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_doctor_reports_plugins_broken_plugins_devices_toolchains_and_auto(tmp_path):
    make_plugin_distribution(tmp_path, distribution="tilelang-broken", entry_name="broken",
                             module="tilelang_broken_plugin", source="import no_such_vendor_sdk\n")
    env = {"PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = run("doctor", "--json", env=env)
    assert out.returncode == 1  # a broken plugin is worth a non-zero exit
    report = json.loads(out.stdout)
    kinds = {p["name"]: p for p in report["plugins"]}
    assert {"cpu", "cuda", "hip", "metal", "ascend"} <= set(kinds)
    assert kinds["cuda"]["distribution"] == "tilelang-cuda" and kinds["cuda"]["api"] == "1.0"
    (broken,) = report["broken"]
    assert broken["name"] == "broken" and "no_such_vendor_sdk" in broken["reason"]
    assert "nvcc (CUDA)" in report["toolchains"]
    assert report["auto"]["target"].startswith("cpu")  # CI has no accelerator
    text = run("doctor", "-v", env=env).stdout
    assert "BROKEN broken" in text and "Traceback" in text and "target='auto' resolves to: cpu" in text


def test_doctor_shows_the_environment_and_a_bad_variable_as_an_auto_error():
    out = run("doctor", "--json", "--no-toolchains", env={"TILELANG_TARGET": "{oops"})
    report = json.loads(out.stdout)
    assert report["environment"] == {"TILELANG_TARGET": "{oops"}
    assert "not valid JSON" in report["auto"]["error"] and out.returncode == 1


def test_targets_lists_kinds_and_capabilities():
    out = run("targets", "--capabilities")
    assert out.returncode == 0
    assert "cuda     archs: sm_80, sm_86, sm_89, sm_90, sm_90a" in out.stdout
    assert "tensor_core=wgmma" in out.stdout
    rows = json.loads(run("targets", "--json").stdout)
    assert {r["kind"] for r in rows} >= {"cpu", "cuda", "hip", "metal", "ascend"}


def test_doctor_recognises_another_project_under_one_of_our_names(tmp_path):
    """PyPI's tilelang-ascend is tile-ai's TileLang-Ascend (a package named `tilelang`); a user who
    installed it got no ascend backend and no word why (issue 24)."""
    info = tmp_path / "tilelang_ascend-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tilelang-ascend\nVersion: 0.0.1\n")
    (info / "top_level.txt").write_text("tilelang\n")
    (info / "RECORD").write_text("")
    env = {"PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    report = json.loads(run("doctor", "--json", "--no-toolchains", env=env).stdout)
    (foreign,) = report["foreign"]
    assert foreign["distribution"] == "tilelang-ascend" and foreign["packages"] == ["tilelang"]
    text = run("doctor", "--no-toolchains", env=env).stdout
    assert "NOT OURS tilelang-ascend 0.0.1 (package tilelang)" in text and "pip uninstall tilelang-ascend" in text
    assert json.loads(run("doctor", "--json", "--no-toolchains").stdout)["foreign"] == []
