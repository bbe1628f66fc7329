"""Build Ascend C with bisheng (CANN) into a shared library the runtime loads.

CANN is found through ASCEND_HOME_PATH, then ASCEND_TOOLKIT_HOME (both set by CANN's
``set_env.sh``), then the default install prefix. These are CANN's own variables, not TILELANG_*
settings, so they are read here rather than in tilelang_core.config.

NOT RUN HERE: this machine has no CANN. The command line follows the public Ascend C
"kernel launch with <<<>>>" build (bisheng -x cce, --cce-aicore-arch per Da Vinci arch); check it
against your CANN version's samples before relying on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tilelang_core.errors import CompileError, NoToolchainError

DEFAULT_PREFIX = Path("/usr/local/Ascend/ascend-toolkit/latest")

INSTALL_HINT = (
    "The Ascend backend needs Huawei CANN (the Ascend toolkit with the bisheng compiler) to build "
    "kernels for the NPU. Install the CANN Toolkit (Ascend-cann-toolkit_<version>_linux-<arch>.run, "
    "8.0 or newer, from https://www.hiascend.com/software/cann) plus the matching driver and "
    "firmware, then run `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (it sets "
    "ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME and PATH). To run kernels from Python also "
    "`pip install torch_npu` matching your torch. Without an NPU, compile for "
    "target=\"ascend+sim\" (or set TILELANG_TARGET=ascend+sim) to run kernels on the CPU "
    "simulator instead.")


def cann_home() -> Path | None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        value = os.environ.get(var)
        if value and Path(value).is_dir():
            return Path(value)
    return DEFAULT_PREFIX if DEFAULT_PREFIX.is_dir() else None


def find_bisheng() -> Path | None:
    home = cann_home()
    candidates = []
    if home is not None:
        candidates += [home / "compiler" / "ccec_compiler" / "bin" / "bisheng",
                       home / "bin" / "bisheng", home / "tools" / "ccec_compiler" / "bin" / "bisheng"]
    found = shutil.which("bisheng")
    if found:
        candidates.append(Path(found))
    return next((c for c in candidates if c.is_file()), None)


def require_toolchain(kernel: str = "") -> tuple[Path, Path]:
    home, bisheng = cann_home(), find_bisheng()
    if home is None or bisheng is None:
        searched = ", ".join(f"{v}={os.environ.get(v, '(unset)')}"
                             for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"))
        what = f"kernel '{kernel}'" if kernel else "kernels"
        raise NoToolchainError(f"cannot build {what} for target 'ascend': CANN "
                           f"{'was not found' if home is None else 'has no bisheng compiler'} "
                           f"({searched}; also looked in {DEFAULT_PREFIX} and PATH). "
                           + INSTALL_HINT)
    return home, bisheng


def bisheng_command(bisheng: Path, home: Path, arch: str, src: Path, out: Path,
                    opt_level: int = 2) -> list[str]:
    inc = home / "compiler" / "tikcpp" / "tikcfw"
    return [str(bisheng), "-x", "cce", f"-O{opt_level}", "-std=c++17", "-fPIC", "-shared",
            f"--cce-aicore-arch={arch}", "-mllvm", "-cce-aicore-stack-size=0x8000",
            f"-I{home / 'include'}", f"-I{inc}", f"-I{inc / 'impl'}", f"-I{inc / 'interface'}",
            str(src), "-o", str(out), f"-L{home / 'lib64'}", "-lascendcl", "-lruntime"]


def compile_ascend_c(source: str, prog, arch: str, workdir: Path, opt_level: int = 2) -> bytes:
    home, bisheng = require_toolchain(prog.name)
    workdir.mkdir(parents=True, exist_ok=True)
    src, out = workdir / f"{prog.name}.cpp", workdir / f"{prog.name}.so"
    src.write_text(source)
    cmd = bisheng_command(bisheng, home, arch, src, out, opt_level)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        raise CompileError(f"bisheng failed to compile kernel '{prog.name}' for {arch}",
                           log=proc.stdout + proc.stderr, command=cmd)
    return out.read_bytes()


def toolchain_version() -> str:
    bisheng = find_bisheng()
    if bisheng is None:
        return "cann-missing"
    try:
        out = subprocess.run([str(bisheng), "--version"], capture_output=True, text=True, timeout=30)
        return "bisheng " + (out.stdout.splitlines() or ["?"])[0].strip()
    except (OSError, subprocess.TimeoutExpired):
        return f"bisheng at {bisheng}"
