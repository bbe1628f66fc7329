"""`python -m tilelang_core doctor`: what is installed, what is broken, what `auto` would pick.

The report is a plain dict (``--json`` prints it as is) rendered to text for people.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import warnings
from typing import Any

from . import config
from .plugin.manager import backend_missing, get_plugin_manager, resolve_factory
from .plugin.specs import PLUGIN_API

#: toolchain -> (command, version arguments)
TOOLCHAINS = {
    "nvcc (CUDA)": ("nvcc", ["--version"]),
    "hipcc (ROCm)": ("hipcc", ["--version"]),
    "clang-19 (AMDGPU, Metal syntax check)": ("clang-19", ["--version"]),
    "bisheng (Ascend CANN)": ("bisheng", ["--version"]),
    "xcrun metal (Apple)": ("xcrun", ["-sdk", "macosx", "metal", "--version"]),
}


def _tool_version(command: str, args: list[str]) -> dict[str, Any]:
    path = shutil.which(command)
    if path is None:
        return {"found": False}
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
        lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
        version = next((line for line in reversed(lines) if "release" in line.lower() or "version" in line.lower()),
                       lines[-1] if lines else "")
    except (OSError, subprocess.TimeoutExpired) as exc:
        version = f"could not run: {exc}"
    return {"found": True, "path": path, "version": version.strip()}


#: our distribution names on the package index (the ascend one is taken there by another project)
OUR_DISTRIBUTIONS = ("tilelang-cpu", "tilelang-cuda", "tilelang-hip", "tilelang-metal", "tilelang-ascend")


def foreign_distributions() -> list[dict[str, Any]]:
    """Installed distributions that carry one of our names but are another project: they declare no
    ``tilelang_core.backends`` entry point (PyPI's ``tilelang-ascend`` is tile-ai's TileLang-Ascend,
    which installs a package named ``tilelang``)."""
    from importlib import metadata

    found = []
    for name in OUR_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if any(ep.group == "tilelang_core.backends" for ep in dist.entry_points):
            continue
        top = (dist.read_text("top_level.txt") or "").split()
        found.append({"distribution": name, "version": dist.version, "packages": top,
                      "fix": f"pip uninstall {name}; then install TileLang-X's {name} from its wheelhouse "
                             f"(bash tools/dev.sh wheels; pip install --find-links dist/wheelhouse {name})"})
    return found


def _backend_problem(factory: str) -> str | None:
    """Why a registered backend cannot compile here: its module is missing, or importing it fails
    (doctor imports each backend's module once: heavy, but this is the diagnostic)."""
    missing = backend_missing(factory)
    if missing:
        return missing
    try:
        resolve_factory(factory)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return f"importing {factory} fails: {type(exc).__name__}: {exc}"
    return None


def collect(*, toolchains: bool = True) -> dict[str, Any]:
    from . import __version__
    from .target import resolve_target

    manager = get_plugin_manager()
    report: dict[str, Any] = {
        "tilelang_core": __version__, "plugin_api": f"{PLUGIN_API[0]}.{PLUGIN_API[1]}",
        "python": sys.version.split()[0], "platform": f"{platform.system()} {platform.machine()}",
        "plugins": [
            {"name": p.name, "distribution": p.distribution, "version": p.dist_version,
             "api": f"{p.info.api[0]}.{p.info.api[1]}", "kinds": p.kinds, "origin": p.origin, "notes": p.notes}
            for p in sorted(manager.plugins.values(), key=lambda p: p.name)
        ],
        "broken": [{"name": b.name, "origin": b.origin, "reason": b.reason, "traceback": b.traceback}
                   for b in manager.broken.values()],
        "disabled": list(manager.disabled),
        "foreign": foreign_distributions(),
        "conflicts": manager.conflicts(),
        "targets": [
            {"kind": s.kind, "description": s.description, "archs": list(s.archs), "default_arch": s.default_arch,
             "aliases": list(s.aliases), "features": list(s.features),
             "backend": manager.backends[s.kind].factory if s.kind in manager.backends else None,
             "backend_missing": _backend_problem(manager.backends[s.kind].factory) if s.kind in manager.backends
             else None,
             "provider": manager.plugins[manager.providers[s.kind][0]].distribution}
            for s in sorted(manager.targets.values(), key=lambda s: s.kind)
        ],
    }
    probes = manager.probe()
    report["devices"] = [{"kind": d.kind, "count": d.count, "arch": d.arch, "names": list(d.names),
                          "evidence": list(d.evidence)} for d in probes.devices]
    report["probe_failures"] = [{"plugin": p, "message": m} for p, m in probes.failures]
    report["unserved_devices"] = [{"kind": k, "install": f"pip install {dist}", "evidence": list(ev)}
                                  for k, dist, ev in probes.unserved]
    if toolchains:
        report["toolchains"] = {name: _tool_version(cmd, args) for name, (cmd, args) in TOOLCHAINS.items()}
    report["environment"] = config.set_variables()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report["auto"] = {"target": str(resolve_target("auto"))}
        except Exception as exc:  # noqa: BLE001 - doctor reports every failure instead of raising
            report["auto"] = {"error": f"{type(exc).__name__}: {exc}"}
    report["auto"]["notes"] = [str(w.message) for w in caught]
    return report


def render(report: dict[str, Any], *, verbose: bool = False) -> str:
    out = [f"tilelang-core {report['tilelang_core']} (plugin API {report['plugin_api']}), "
           f"Python {report['python']}, {report['platform']}", "", "Plugins:"]
    for p in report["plugins"]:
        out.append(f"  {p['name']:<10} {p['distribution']} {p['version']}  API {p['api']}  "
                   f"kinds: {', '.join(p['kinds'])}")
        out.extend(f"             note: {n}" for n in p["notes"])
    if not report["plugins"]:
        out.append("  (none installed: pip install tilelang-cpu, tilelang-cuda, ...)")
    for b in report["broken"]:
        out.append(f"  BROKEN {b['name']} ({b['origin']}): {b['reason']}")
        if verbose and b["traceback"]:
            out.extend("      " + line for line in b["traceback"].rstrip().splitlines())
    for f in report.get("foreign", []):
        packages = f" (package {', '.join(f['packages'])})" if f["packages"] else ""
        out.append(f"  NOT OURS {f['distribution']} {f['version']}{packages}: another project under "
                   f"TileLang-X's name, no backend for it; {f['fix']}")
    for name in report["disabled"]:
        out.append(f"  disabled {name} (TILELANG_DISABLE_PLUGINS)")
    for kind, names in report["conflicts"].items():
        out.append(f"  CONFLICT: target kind {kind!r} claimed by {', '.join(names)}; uninstall one")
    out += ["", "Target kinds:"]
    for t in report["targets"]:
        archs = ", ".join(t["archs"]) or "-"
        backend = ("compiles" if not t.get("backend_missing") else f"BACKEND BROKEN: {t['backend_missing']}") \
            if t["backend"] else "registered, no compiler yet"
        out.append(f"  {t['kind']:<8} {t['description']}  [{backend}]")
        out.append(f"           archs: {archs}" + (f" (default {t['default_arch']})" if t["default_arch"] else "")
                   + (f"; aliases: {', '.join(t['aliases'])}" if t["aliases"] else "")
                   + (f"; variants: {', '.join(t['kind'] + '+' + f for f in t['features'])}" if t["features"] else ""))
    out += ["", "Devices:"]
    for d in report["devices"]:
        names = ", ".join(d["names"]) or d["kind"]
        out.append(f"  {d['kind']:<8} {d['count']} x {names}" + (f" ({d['arch']})" if d["arch"] else ""))
        out.extend(f"           evidence: {e}" for e in d["evidence"])
    for u in report["unserved_devices"]:
        out.append(f"  {u['kind']:<8} device present but no plugin: {u['install']}  "
                   f"(evidence: {', '.join(u['evidence'])})")
    for f in report["probe_failures"]:
        out.append(f"  probe of {f['plugin']} failed: {f['message']}")
    if not (report["devices"] or report["unserved_devices"]):
        out.append("  no accelerator found")
    if "toolchains" in report:
        out += ["", "Toolchains:"]
        for name, info in report["toolchains"].items():
            out.append(f"  {name:<40} " + (f"{info['version']}  ({info['path']})" if info["found"] else "not found"))
    if report["environment"]:
        out += ["", "Environment:"] + [f"  {k}={v}" for k, v in report["environment"].items()]
    out += ["", "target='auto' resolves to: " + report["auto"].get("target", report["auto"].get("error", "?"))]
    out.extend(f"  note: {n}" for n in report["auto"]["notes"])
    return "\n".join(out)
