"""Run TileLang's own test suite (its ``examples/`` and ``testing/python/language/``) against
TileLang-X with only the imports changed, or against TileLang itself, and compare the two.

TileLang's code never enters this repository: ``export`` copies it from a checkout into an
ignored folder, ``run`` copies that folder into a scratch directory, rewrites the imports there
(``--impl ours``) and runs pytest on it, one directory at a time, with a per-test time limit.

    python tools/tilelang_suite.py export --git-dir /work/.mirror/tile-ai+tilelang/repo --out .device/tlsrc
    python tools/tilelang_suite.py run --src .device/tlsrc --impl ours --out ours.json
    python tools/tilelang_suite.py run --src .device/tlsrc --impl tilelang --out tl.json
    python tools/tilelang_suite.py table tl.json ours.json      # markdown: dir, TileLang, TileLang-X
    python tools/tilelang_suite.py prepare --src .device/tlsrc --impl ours --out /tmp/x   # the copy only

The import rewrite is the one a user makes: ``import tilelang`` becomes
``import tilelang_core as tilelang``, ``tilelang.x`` module paths become ``tilelang_core.x``, and
nothing else in the file changes (line numbers stay the same).

``--fake-cuda`` (triage on a machine without a GPU, never for the record): tensors asked for on
``cuda`` are made on the CPU and the kernels compile for the cpu backend, so numerics and
front-end failures show up here; timings and CUDA-only paths mean nothing in this mode.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

# Directories of TileLang's examples that need hardware or packages this comparison does not have
# (sm_100 and later, AMD, AWS, extra Python packages); `--all` runs them anyway.
SKIPPED_DIRS = {
    "amd", "aws", "blockscaled_gemm_sm100", "flash_attention_sm100", "gemm_sm120", "gemm_tcgen05",
    "bitnet-1.58b", "iket", "autodd", "visual_layout_inference", "plot_layout", "analyze",
}
LANGUAGE_DIR = "testing/python/language"

_IMPORT = re.compile(r"^(?P<indent>\s*)import\s+(?P<names>tilelang\b[^#\n]*?)(?P<rest>\s*(#.*)?)$")
_FROM = re.compile(r"^(?P<indent>\s*)from\s+tilelang(?P<mod>(\.[A-Za-z_][A-Za-z0-9_]*)*)\s+import\b")


def rewrite_imports(text: str) -> str:
    """``text`` with every import of ``tilelang`` turned into the same import of ``tilelang_core``.

    ``import tilelang.testing`` binds the name ``tilelang`` as a side effect; the rewrite keeps
    that by adding ``import tilelang_core as tilelang`` on the same line.
    """
    out = []
    for line in text.split("\n"):
        m = _FROM.match(line)
        if m:
            line = f"{m['indent']}from tilelang_core{m['mod']} import" + line[m.end():]
        else:
            m = _IMPORT.match(line)
            if m and not line.rstrip().endswith(("(", "\\")):
                line = m["indent"] + _rewrite_import_names(m["names"].strip()) + (m["rest"] or "")
        out.append(line)
    return "\n".join(out)


def _rewrite_import_names(names: str) -> str:
    parts = []
    binds_package = False
    for item in names.split(","):
        item = item.strip()
        module, _, alias = item.partition(" as ")
        module, alias = module.strip(), alias.strip()
        if module != "tilelang" and not module.startswith("tilelang."):
            parts.append(f"import {item}")
            continue
        new = "tilelang_core" + module[len("tilelang"):]
        if alias:
            parts.append(f"import {new} as {alias}")
        elif module == "tilelang":
            parts.append("import tilelang_core as tilelang")
        else:
            parts.append(f"import {new}")
            binds_package = True
    if binds_package:
        parts.append("import tilelang_core as tilelang")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------
def export(git_dir: Path, out: Path, rev: str = "HEAD") -> None:
    """Copy ``examples/`` and ``testing/python/language/`` of a TileLang checkout to ``out``."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", rev, "examples", LANGUAGE_DIR],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    commit = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", rev], check=True,
                            capture_output=True, text=True).stdout.strip()
    (out / "SOURCE").write_text(f"tile-ai/tilelang {commit}\n")
    print(f"exported tile-ai/tilelang {commit[:12]} to {out}")


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------
PLUGIN = Path(__file__).with_name("tilelang_suite_plugin.py")


def suite_dirs(src: Path, include_all: bool, language: bool, only: list[str] | None) -> list[str]:
    dirs = []
    for d in sorted((src / "examples").iterdir()):
        if not d.is_dir() or not any(d.glob("test_*.py")):
            continue
        if only is not None and d.name not in only:
            continue
        if not include_all and only is None and d.name in SKIPPED_DIRS:
            continue
        dirs.append(f"examples/{d.name}")
    if language and (src / LANGUAGE_DIR).is_dir() and (only is None or "language" in only):
        # one unit per file: the language tests are many small files, run in parallel
        dirs += [f"{LANGUAGE_DIR}/{p.name}" for p in sorted((src / LANGUAGE_DIR).glob("test_*.py"))]
    return dirs


def prepare(src: Path, work: Path, impl: str) -> None:
    shutil.copytree(src, work, dirs_exist_ok=True)
    # A plugin loaded with -p, not a conftest: TileLang's examples/pytest.ini makes examples/ the
    # rootdir, and conftests above the rootdir are not read.
    (work / ".tlsuite").mkdir(exist_ok=True)
    shutil.copy(PLUGIN, work / ".tlsuite" / "tlsuite_plugin.py")
    if impl != "ours":
        return
    for path in work.rglob("*.py"):
        if ".tlsuite" in path.parts:
            continue
        text = path.read_text(errors="replace")
        new = rewrite_imports(text)
        if new != text:
            path.write_text(new)


def run_dir(work: Path, rel: str, impl: str, timeout: int, env: dict, log_dir: Path) -> dict:
    """Run pytest on one directory (or one test file); returns {test id: {outcome, message,
    seconds, output}}."""
    d = work / rel
    unit = rel.replace("/", "_")
    junit = log_dir / (unit + ".xml")
    if d.is_file():
        d, files, rel = d.parent, [d.name], str(Path(rel).parent)
    else:
        files = sorted(p.name for p in d.glob("test_*.py"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-rN", "-p", "tlsuite_plugin", "-p", "no:cacheprovider",
           f"--junitxml={junit}",
           "-o", "junit_logging=all", "-o", "junit_family=xunit1", *files]
    started = time.monotonic()
    budget = timeout * max(4, 3 * len(files)) + 120
    try:
        proc = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=budget)
        tail = (proc.stdout + proc.stderr)[-4000:]
    except subprocess.TimeoutExpired as err:
        tail = f"the directory ran past {budget} s and was stopped\n" + str(err.stdout or "")[-2000:]
    results = parse_junit(junit, rel) if junit.exists() else {}
    if not results:
        where = f"{rel}/{files[0]}" if len(files) == 1 else rel
        results[f"{where}::<collect>"] = {"outcome": "error", "message": _last_error(tail),
                                        "seconds": round(time.monotonic() - started, 1), "output": tail}
    (log_dir / (unit + ".log")).write_text(tail)
    return results


def _last_error(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.search(r"(Error|Exception|error:)", ln):
            return ln.strip()[:400]
    return (lines[-1] if lines else "no output")[:400]


def parse_junit(path: Path, rel: str) -> dict:
    results = {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return results
    for case in root.iter("testcase"):
        # 'file' is relative to pytest's rootdir (TileLang's ini files move it); a collection
        # error has only 'classname'
        where = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        name = f"{rel}/{Path(where).name}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = _decisive(node.get("message") or "", node.text or "")
                break
        out = "".join((n.text or "") for n in case.findall("system-out"))
        results[name] = {"outcome": outcome, "message": message,
                         "seconds": round(float(case.get("time") or 0), 2), "output": out[-3000:]}
    return results


def _decisive(message: str, text: str) -> str:
    """The line that says why a test failed: the exception line of the traceback."""
    lines = [ln[4:].strip() for ln in text.splitlines() if ln.startswith("E   ") and ln[4:].strip()]
    # pytest prints the exception type on the first E line of a block; our errors continue with
    # "--> file:line" and the source line, so take the last line that names an exception
    for ln in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Timeout|Exit)\b|^[\w.]+: ", ln):
            where = next((x for x in lines[lines.index(ln) + 1:] if x.startswith("-->")), "")
            return (ln + (f" [{where}]" if where else ""))[:400]
    if lines:
        return lines[-1][:400]
    return (message.splitlines()[0] if message else "")[:400]


def run(src: Path, impl: str, out: Path, timeout: int, jobs: int, dirs: list[str],
        fake_cuda: bool, keep: Path | None, timing: str | None = None) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"tlsuite-{impl}-")) if keep is None else keep
    prepare(src, work, impl)
    log_dir = out.with_suffix(".logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TLSUITE_TIMEOUT=str(timeout), TLSUITE_IMPL=impl, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(work / ".tlsuite"), env.get("PYTHONPATH")) if p)
    if timing:  # one timer for both implementations, timed parts one at a time (the plugin)
        env["TLSUITE_TIMING"] = timing
    if fake_cuda:
        env["TLSUITE_FAKE_CUDA"] = "1"
        if impl == "ours":
            env.setdefault("TILELANG_TARGET", "cpu")
    results: dict = {}
    started = time.monotonic()
    source = (src / "SOURCE").read_text().strip() if (src / "SOURCE").exists() else str(src)

    def save(done: list[str]) -> None:  # after every directory: a run cut off keeps what it has
        out.write_text(json.dumps({"impl": impl, "source": source, "fake_cuda": fake_cuda,
                                   "dirs": dirs, "done": done, "results": results}, indent=1))

    done: list[str] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_dir, work, rel, impl, timeout, env, log_dir): rel for rel in dirs}
        for fut in as_completed(futures):
            rel = futures[fut]
            got = fut.result()
            results.update(got)
            done.append(rel)
            save(done)
            counts = _counts(got.values())
            print(f"{impl:8s} {rel:44s} {counts['passed']:3d} passed {counts['failed']:3d} failed "
                  f"{counts['skipped']:3d} skipped ({time.monotonic() - started:.0f} s)", flush=True)
    total = _counts(results.values())
    print(f"{impl}: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped "
          f"-> {out}")
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)


def _counts(items) -> dict:
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for r in items:
        c["skipped" if r["outcome"] == "skipped" else "passed" if r["outcome"] == "passed" else "failed"] += 1
    return c


# ---------------------------------------------------------------------------------------------
# table
# ---------------------------------------------------------------------------------------------
_SPEED = re.compile(r"(?i)(tflops?|tflop/s|latency|ms\b)")


_TIMING = re.compile(r"(?i)(tile-?lang|latency|tflops|average|speedup)")


#: TileLang's own log lines (timestamped, "[TileLang:...]"): never a speed line
_LOG_LINE = re.compile(r"\[TileLang:|^\s*\d{4}-\d\d-\d\d[ T]\d\d:|^\s*(INFO|WARNING|DEBUG)\b")
#: a number with its unit and no label ("0.08 ms", "53.11 TFlops" on lines of their own)
_BARE = re.compile(r"^\s*(?P<value>\d+(?:\.\d+)?(?:e-?\d+)?)\s*(?P<unit>ms|tflops|tflop/s)\s*$", re.I)
_NUMBER = re.compile(r"(?P<label>[A-Za-z][\w .\-]*?)\s*[:=]\s*(?P<value>\d+(?:\.\d+)?(?:e-?\d+)?)\s*"
                     r"(?P<unit>ms|s|tflops|tflop/s)?\b", re.I)
#: speed lines of a reference computation, not of the kernel compared
_BASELINE = re.compile(r"(?i)\b(ref|reference|torch|baseline|triton|cublas|flash|fa[23]?|sdpa)\b")


def _speed_lines(output: str) -> list[str]:
    """The example's own lines about speed, its baselines' included (the examples print them
    freely): a speed word and a number, or a bare "0.08 ms"; no log or compile lines."""
    return [ln.strip() for ln in output.splitlines()
            if (_TIMING.search(ln) and re.search(r"\d", ln) or _BARE.match(ln))
            and not _LOG_LINE.search(ln) and "compile" not in ln]


def _timings(output: str) -> str:
    return " / ".join(_speed_lines(output)[:4]).replace("|", "\\|")[:160]


def _kernel_speeds(output: str) -> list[tuple[str, str, float]]:
    """(label, "time" or "rate", value) of each number the example prints about its kernel's speed,
    in order (the baselines' numbers left out)."""
    found = []
    for line in _speed_lines(output):
        bare = _BARE.match(line)
        if bare:
            unit = bare["unit"].lower()
            found.append(("", "time" if unit == "ms" else "rate", float(bare["value"])))
            continue
        if _BASELINE.search(line):
            continue
        for m in _NUMBER.finditer(line):
            label, unit = m["label"].strip().lower(), (m["unit"] or "").lower()
            if "tflop" in unit or "tflop" in label:
                kind = "rate"
            elif unit in ("ms", "s") or re.search(r"latency|time|_ms$", label):
                kind = "time"
            else:
                continue
            found.append((label, kind, float(m["value"]) * (1000.0 if unit == "s" else 1.0)))
    return found


def speed_ratios(theirs: str, ours: str) -> list[float]:
    """TileLang-X's speed over TileLang's (> 1: faster) for each number both print alike."""
    out = []
    for (la, ka, a), (lb, kb, b) in zip(_kernel_speeds(theirs), _kernel_speeds(ours)):
        if la != lb or ka != kb or a <= 0 or b <= 0:
            break  # the two printed different things from here on
        out.append(a / b if ka == "time" else b / a)
    return out


def table(reference: dict, ours: dict, failures: bool, perf: bool = False) -> str:
    """Markdown: per directory, tests passing on each; then ours' failures where TileLang passes."""
    ref_r, our_r = reference["results"], ours["results"]
    by_dir: dict[str, list[str]] = {}
    for name in sorted(set(ref_r) | set(our_r)):
        path = name.split("::")[0]
        by_dir.setdefault(path.rsplit("/", 1)[0] if path.endswith(".py") else path, []).append(name)
    lines = ["| dir | tests | TileLang passes | TileLang-X passes | TileLang-X passes where TileLang does |",
             "|---|---|---|---|---|"]
    tot = [0, 0, 0, 0]
    for d, names in by_dir.items():
        ref_pass = {n for n in names if ref_r.get(n, {}).get("outcome") == "passed"}
        our_pass = {n for n in names if our_r.get(n, {}).get("outcome") == "passed"}
        row = [len(names), len(ref_pass), len(our_pass), len(ref_pass & our_pass)]
        tot = [a + b for a, b in zip(tot, row)]
        lines.append(f"| {d} | {row[0]} | {row[1]} | {row[2]} | {row[3]} |")
    lines.append(f"| **all** | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} |")
    if perf:
        lines += ["", "| test (passes on both) | TileLang prints | TileLang-X prints | TileLang-X speed / TileLang's |",
                  "|---|---|---|---|"]
        for name in sorted(ref_r):
            if ref_r[name]["outcome"] == "passed" and our_r.get(name, {}).get("outcome") == "passed":
                # results trimmed for docs/ keep no output: nothing to compare there
                ta, tb = ref_r[name].get("output", ""), our_r[name].get("output", "")
                a, b = _timings(ta), _timings(tb)
                if a or b:
                    ratios = " ".join(f"{r:.2f}" for r in speed_ratios(ta, tb))
                    lines.append(f"| {name.split('/')[-1]} | {a} | {b} | {ratios} |")
    if failures:
        lines += ["", "| test (passes on TileLang) | TileLang-X | why |", "|---|---|---|"]
        for name in sorted(ref_r):
            if ref_r[name]["outcome"] == "passed" and our_r.get(name, {}).get("outcome") != "passed":
                got = our_r.get(name, {"outcome": "missing", "message": ""})
                why = got["message"].replace("|", "\\|")[:200]
                lines.append(f"| {name} | {got['outcome']} | {why} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="copy TileLang's examples and language tests out of a checkout")
    ex.add_argument("--git-dir", type=Path, required=True)
    ex.add_argument("--rev", default="HEAD")
    ex.add_argument("--out", type=Path, required=True)
    rn = sub.add_parser("run", help="run the suite on one implementation")
    rn.add_argument("--src", type=Path, required=True, help="a folder made by export")
    rn.add_argument("--impl", choices=["ours", "tilelang"], required=True)
    rn.add_argument("--out", type=Path, required=True)
    rn.add_argument("--timeout", type=int, default=300, help="seconds per test")
    rn.add_argument("--jobs", type=int, default=2, help="directories run at once")
    rn.add_argument("--only", help="comma-separated example dir names ('language' for the language tests)")
    rn.add_argument("--all", action="store_true", help="include the dirs skipped by default")
    rn.add_argument("--no-language", action="store_true", help="leave out testing/python/language")
    rn.add_argument("--fake-cuda", action="store_true", help="triage without a GPU (see the module doc)")
    rn.add_argument("--keep", type=Path, help="keep the rewritten copy in this folder")
    rn.add_argument("--timing", metavar="LOCKFILE", help="time the examples' kernels with one shared timer, "
                    "one timing at a time across processes holding LOCKFILE (tools/tilelang_suite_plugin.py)")
    pp = sub.add_parser("prepare", help="only the rewritten copy (for a profiler run of one test)")
    pp.add_argument("--src", type=Path, required=True, help="a folder made by export")
    pp.add_argument("--impl", choices=["ours", "tilelang"], required=True)
    pp.add_argument("--out", type=Path, required=True)
    tb = sub.add_parser("table", help="compare two run results")
    tb.add_argument("reference", type=Path)
    tb.add_argument("ours", type=Path)
    tb.add_argument("--failures", action="store_true", help="list ours' failures where TileLang passes")
    tb.add_argument("--perf", action="store_true", help="the speed lines both print, side by side")
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.git_dir, args.out, args.rev)
    elif args.cmd == "run":
        only = args.only.split(",") if args.only else None
        dirs = suite_dirs(args.src, args.all, not args.no_language, only)
        run(args.src, args.impl, args.out, args.timeout, args.jobs, dirs, args.fake_cuda, args.keep, args.timing)
    elif args.cmd == "prepare":
        prepare(args.src, args.out, args.impl)
    else:
        print(table(json.loads(args.reference.read_text()), json.loads(args.ours.read_text()),
                    args.failures, args.perf))
    return 0


if __name__ == "__main__":
    sys.exit(main())
