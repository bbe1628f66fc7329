"""Run DeepSeek's TileKernels (deepseek-ai/TileKernels: MoE routing, FP8/FP4 casts, mHC, engram)
on TileLang-X with its two imports changed, as a user porting it would.

Its code never enters this repository: ``export`` copies a checkout into an ignored folder twice,
``ours/`` with ``import tilelang`` rewritten to ``tilelang_core`` (tools/tilelang_suite.py's
rewrite, line numbers kept) and ``orig/`` unchanged (for TileLang itself), and writes ``pick.txt``:
a few parameter sets of every test function (the full matrix is ~7,500 tests). ``run`` runs the
picked tests with pytest (TileKernels' own conftest and plugins, plus ours for the time limit).

    python tools/tilekernels_suite.py export --git-dir /work/.mirror/deepseek-ai+TileKernels/repo --out .device/tk
    python tools/tilekernels_suite.py run --dir .device/tk --impl ours -n 8      # on the GPU machine

TileKernels targets TileLang up to 0.1.9-era APIs (it imports ``tilelang.utils.target``, which
TileLang removed in June 2026): TileLang 0.1.15 itself fails to import it.
"""

from __future__ import annotations

import argparse
import collections
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
                          "no:cacheprovider", "tests"],
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


def run(folder: Path, impl: str, workers: int, timeout: int, junit: Path | None) -> int:
    folder = folder.resolve()  # (PYTHONPATH entries must not depend on the cwd given to pytest)
    tree = folder / ("ours" if impl == "ours" else "orig")
    tests = (folder / "pick.txt").read_text().split()
    env = dict(os.environ, TLSUITE_TIMEOUT=str(timeout), TLSUITE_IMPL=impl)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree / ".tlsuite"), str(tree), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "pytest", "-q", *_own_root(tree), "-p", "tlsuite_plugin", "-p", "no:cacheprovider",
           *tests]
    if workers > 1 and env.get("TLSUITE_FAKE_CUDA") == "1":
        # TileKernels' session plugins call torch.cuda in each xdist worker before the fake-CUDA
        # mode (entered per test) is on: the workers die. Triage runs serially.
        print("fake-CUDA mode: running the tests in one process (-n ignored)", file=sys.stderr)
    elif workers > 1:
        cmd[4:4] = ["-n", str(workers)]
    if junit is not None:
        cmd.append(f"--junitxml={junit}")
    return subprocess.run(cmd, cwd=tree, env=env).returncode


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
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.git_dir, args.out, args.per_function)
        return 0
    return run(args.dir, args.impl, args.n, args.timeout, args.junit)


if __name__ == "__main__":
    sys.exit(main())
