"""Run DeepSeek's TileKernels (deepseek-ai/TileKernels: MoE routing, FP8/FP4 casts, mHC, engram)
on TileLang-X with its two imports changed, as a user porting it would.

Its code never enters this repository: ``export`` copies a checkout into an ignored folder twice,
``ours/`` with ``import tilelang`` rewritten to ``tilelang_core`` (tools/tilelang_suite.py's
rewrite, line numbers kept) and ``orig/`` unchanged (for TileLang itself), and writes ``pick.txt``:
a few parameter sets of every test function (the full matrix is ~7,500 tests). ``run`` runs the
picked tests with pytest (TileKernels' own conftest and plugins, plus ours for the time limit and
the hang watchdog); ``--log`` keeps one JSON line per finished test, written as it ends, which
``summary`` reads back (also from a run that was stopped from outside).

    python tools/tilekernels_suite.py export --git-dir /work/.mirror/deepseek-ai+TileKernels/repo --out .device/tk
    python tools/tilekernels_suite.py run --dir .device/tk --impl ours -n 8 --log $OUT/tk.jsonl  # on the GPU
    python tools/tilekernels_suite.py summary tk.jsonl

TileKernels targets TileLang up to 0.1.9-era APIs (it imports ``tilelang.utils.target``, which
TileLang removed in June 2026): TileLang 0.1.15 itself fails to import it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tilelang_suite import PLUGIN, rewrite_imports  # noqa: E402


def _own_root(tree: Path) -> list[str]:
    """pytest options that make ``tree`` its root and config: placed inside this repository (as
    .device/tk is), pytest would otherwise take the repository's pyproject.toml and conftest.py,
    and load TileKernels' ``tests`` package beside ours (its benchmark plugin then registered
    twice: "conflicting option string"), and give test ids relative to the repository."""
    return ["--rootdir", str(tree.resolve()), "-c", str(tree.resolve() / "pyproject.toml")]


def export(git_dir: Path, out: Path, per_function: int) -> None:
    if out.exists():
        shutil.rmtree(out)
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", "HEAD"], check=True,
                             capture_output=True).stdout
    for name in ("orig", "ours"):
        (out / name / ".tlsuite").mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(out / name)], input=archive, check=True)
        shutil.copy(PLUGIN, out / name / ".tlsuite" / "tlsuite_plugin.py")
    for path in (out / "ours").rglob("*.py"):
        text = path.read_text()
        new = rewrite_imports(text)
        if new != text:
            path.write_text(new)
    # collected in the rewritten tree: TileLang need not be installed here (the ids are the same)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(out / "ours"), os.environ.get("PYTHONPATH", "")]))
    ids = subprocess.run([sys.executable, "-m", "pytest", "-q", "--co", *_own_root(out / "ours"), "-p",
                          "no:cacheprovider", "-p", "no:benchmark", "tests"],
                         cwd=out / "ours", capture_output=True, text=True, env=env).stdout.splitlines()
    pick = pick_tests(ids, per_function)
    (out / "pick.txt").write_text("\n".join(pick) + "\n")
    print(f"exported TileKernels to {out}: {len(pick)} tests picked")


def pick_tests(ids: list[str], per_function: int) -> list[str]:
    """Up to ``per_function`` parameter sets of each test function, spread over its list (the
    benchmarks left out)."""
    by_function = collections.OrderedDict()
    for test in ids:
        if "::" in test and "benchmark" not in test:
            by_function.setdefault(test.split("[")[0], []).append(test)
    pick = []
    for tests in by_function.values():
        step = max(1, len(tests) // per_function)
        pick += tests[::step][:per_function]
    return pick


def run(folder: Path, impl: str, workers: int, timeout: int, junit: Path | None, log: Path | None = None) -> int:
    folder = folder.resolve()  # (PYTHONPATH entries must not depend on the cwd given to pytest)
    tree = folder / ("ours" if impl == "ours" else "orig")
    tests = (folder / "pick.txt").read_text().split()
    (tree / ".tlsuite").mkdir(exist_ok=True)
    shutil.copy(PLUGIN, tree / ".tlsuite" / "tlsuite_plugin.py")  # (the plugin of this checkout)
    env = dict(os.environ, TLSUITE_TIMEOUT=str(timeout), TLSUITE_IMPL=impl)
    # a run started from a pytest-xdist worker is not one of its workers (the plugin logs only
    # in the controller, and would take this run for a worker)
    for key in [k for k in env if k.startswith("PYTEST_XDIST") or k == "PYTEST_CURRENT_TEST"]:
        del env[key]
    if log is not None:
        env["TLSUITE_LOG"] = str(log.resolve())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree / ".tlsuite"), str(tree), env.get("PYTHONPATH")) if p)
    # (no:benchmark: the PyPI pytest-benchmark, where installed, owns the --benchmark-* options
    # that TileKernels' own benchmark plugin adds)
    cmd = [sys.executable, "-m", "pytest", "-q", *_own_root(tree), "-p", "tlsuite_plugin", "-p", "no:cacheprovider",
           "-p", "no:benchmark", *tests]
    if workers > 1 and env.get("TLSUITE_FAKE_CUDA") == "1":
        # TileKernels' session plugins call torch.cuda in each xdist worker before the fake-CUDA
        # mode (entered per test) is on: the workers die. Triage runs serially.
        print("fake-CUDA mode: running the tests in one process (-n ignored)", file=sys.stderr)
    elif workers > 1:
        cmd[4:4] = ["-n", str(workers)]
    if junit is not None:
        cmd.append(f"--junitxml={junit}")
    rc = subprocess.run(cmd, cwd=tree, env=env).returncode
    if log is not None and log.exists():
        print(summary(log, folder / "pick.txt"))
    return rc


def read_log(path: Path) -> dict[str, dict]:
    """The last record of each test in a ``--log`` file (a hung test's line beats its crash's)."""
    results: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a killed run
            continue
        if results.get(record["id"], {}).get("outcome") != "hung":
            results[record["id"]] = record
    return results


def summary(path: Path, picked: Path | None = None) -> str:
    """Counts by outcome (tests in ``picked`` with no line: never finished), then the failures
    grouped by their first error line, most frequent first."""
    results = read_log(path)
    counts = collections.Counter(r["outcome"] for r in results.values())
    if picked is not None:
        counts["not finished"] = sum(t not in results for t in picked.read_text().split())
    lines = [", ".join(f"{n} {outcome}" for outcome, n in counts.most_common() if n)]
    groups = collections.defaultdict(list)
    for test, record in sorted(results.items()):
        if record["outcome"] not in ("passed", "skipped"):
            first = (record["message"].splitlines() or [record["outcome"]])[0]
            groups[first[:160]].append(test)
    for first, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"{len(tests):4d}  {first}")
        lines += [f"        {t}" for t in tests[:3]] + ([f"        ... {len(tests) - 3} more"] if len(tests) > 3 else [])
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="copy a TileKernels checkout (rewritten and as is) and pick tests")
    ex.add_argument("--git-dir", type=Path, required=True)
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--per-function", type=int, default=4, help="parameter sets per test function")
    rn = sub.add_parser("run", help="run the picked tests on one implementation")
    rn.add_argument("--dir", type=Path, required=True)
    rn.add_argument("--impl", choices=("ours", "tilelang"), default="ours")
    rn.add_argument("-n", type=int, default=1, help="pytest-xdist workers")
    rn.add_argument("--timeout", type=int, default=200, help="seconds per test")
    rn.add_argument("--junit", type=Path)
    rn.add_argument("--log", type=Path, help="one JSON line per finished test, written as it ends")
    sm = sub.add_parser("summary", help="outcomes and grouped failures of a --log file")
    sm.add_argument("log", type=Path)
    sm.add_argument("--pick", type=Path, help="the pick.txt of the run (to count tests never finished)")
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.git_dir, args.out, args.per_function)
        return 0
    if args.cmd == "summary":
        print(summary(args.log, args.pick))
        return 0
    return run(args.dir, args.impl, args.n, args.timeout, args.junit, args.log)


if __name__ == "__main__":
    sys.exit(main())
