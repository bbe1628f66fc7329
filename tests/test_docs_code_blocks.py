"""The README's and docs' Python code blocks run as written (issue 24: the README's autotune block
failed when pasted). Each file's blocks run in order as one script, in a fresh process outside the
source tree, on the cpu backend here. A block that is a fragment (names defined by the reader) says
so in a `<!-- not run: why -->` line just above it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("backends/*/README.md")),
        *sorted(ROOT.glob("plugins/*/README.md"))]
BLOCK = re.compile(r"(<!-- not run: [^\n]*-->\n)?```python\n(.*?)```", re.S)


def runnable_blocks(path: Path) -> list[str]:
    return [code for marker, code in BLOCK.findall(path.read_text()) if not marker]


def test_every_python_block_runs_or_says_why_not():
    skipped = [m for p in DOCS for m, _ in BLOCK.findall(p.read_text()) if m]
    assert all("not run: " in m and len(m) > 30 for m in skipped)  # a reason, not a bare marker
    assert runnable_blocks(ROOT / "README.md")  # the README's own examples are never exempt


@pytest.mark.parametrize("doc", [p for p in DOCS if runnable_blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_blocks_run_as_written(doc, tmp_path):
    script = tmp_path / "blocks.py"
    script.write_text("\n\n".join(runnable_blocks(doc)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")}
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
