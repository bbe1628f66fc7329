"""docs/writing-a-backend.md stays true to plugins/vendor-template (issue 24): its table names the
template's files one for one, and its rename recipe, run as written, gives a package whose
conformance suite passes."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "writing-a-backend.md").read_text()
TEMPLATE = ROOT / "plugins" / "vendor-template"


def _template_files() -> set[str]:
    """The template's files as the repository has them (not build outputs or caches)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "."], cwd=TEMPLATE,
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_table_names_the_template_file_for_file():
    table = DOC.split("## The pieces")[1].split("\n## ")[0]
    named = set()
    for cell in re.findall(r"^\| (.+?) \|", table, re.M):
        named.update(x.replace("<kind>", "acme") for x in re.findall(r"`([^`]+)`", cell))
    assert named == _template_files()


def test_the_rename_recipe_gives_a_package_that_passes_conformance(tmp_path):
    recipe = DOC.split("## Start from the template")[1].split("\n## ")[0]
    lines = [ln.strip() for ln in recipe.splitlines() if ln.startswith("    ")]
    lines = [ln.split("  #")[0].strip() for ln in lines if not ln.startswith(("pip ", "python "))]
    target = tmp_path / "tilelang-zeta"
    script = " && ".join(ln.replace("plugins/vendor-template", str(TEMPLATE)).replace("../tilelang-zeta", str(target))
                         for ln in lines)
    subprocess.run(["bash", "-c", script], check=True, cwd=ROOT, timeout=60)
    leftovers = subprocess.run(["grep", "-rlI", "-i", "acme", "--exclude-dir=__pycache__", str(target)],
                               capture_output=True, text=True).stdout
    assert leftovers == ""
    assert (target / "tilelang_zeta" / "_plugin.py").is_file() and (target / "tests" / "test_zeta_conformance.py").is_file()
    env = {**os.environ, "PYTHONPATH": str(target) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_zeta_conformance.py"],
                          cwd=target, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
