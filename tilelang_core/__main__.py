"""Command line: ``python -m tilelang_core doctor | targets | compile``."""

from __future__ import annotations

import argparse
import json
import sys


def _doctor(args) -> int:
    from . import doctor

    report = doctor.collect(toolchains=not args.no_toolchains)
    print(json.dumps(report, indent=2) if args.json else doctor.render(report, verbose=args.verbose))
    return 1 if report["broken"] or "error" in report["auto"] else 0


def _targets(args) -> int:
    from .plugin.manager import get_plugin_manager

    manager = get_plugin_manager()
    rows = []
    for spec in sorted(manager.targets.values(), key=lambda s: s.kind):
        rows.append({"kind": spec.kind, "archs": list(spec.archs), "default_arch": spec.default_arch,
                     "aliases": list(spec.aliases), "features": list(spec.features),
                     "accelerator": spec.accelerator, "compiles": spec.kind in manager.backends,
                     "capabilities": {a: spec.capabilities_for(a) for a in (spec.archs or (None,))}
                     if args.capabilities else None})
    if args.json:
        print(json.dumps(rows, indent=2, default=list))
        return 0
    for row in rows:
        archs = ", ".join(row["archs"]) or "-"
        print(f"{row['kind']:<8} archs: {archs}" + (f" (default {row['default_arch']})" if row["default_arch"] else "")
              + (f"  aliases: {', '.join(row['aliases'])}" if row["aliases"] else "")
              + ("" if row["compiles"] else "  [no compiler yet]"))
        for feature in row["features"]:  # e.g. ascend+sim: the functional simulator, on any machine
            print(f"{'':<8} variant: {row['kind']}+{feature}")
        if args.capabilities:
            for arch, caps in row["capabilities"].items():
                print(f"    {arch or '*'}: " + ", ".join(f"{k}={v}" for k, v in sorted(caps.items())))
    if not rows:
        print("no target kinds installed: pip install tilelang-cpu (or tilelang-cuda, -hip, -metal, -ascend)")
    for broken in manager.broken.values():
        print(f"BROKEN plugin {broken.name}: {broken.reason}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tilelang_core", description="TileLang-X tools")
    sub = parser.add_subparsers(dest="command", required=True)
    doc = sub.add_parser("doctor", help="installed plugins, devices, toolchains and what target='auto' picks")
    doc.add_argument("--json", action="store_true", help="machine-readable output")
    doc.add_argument("-v", "--verbose", action="store_true", help="show tracebacks of broken plugins")
    doc.add_argument("--no-toolchains", action="store_true", help="skip looking for compilers")
    doc.set_defaults(func=_doctor)
    tgt = sub.add_parser("targets", help="target kinds and archs the installed plugins provide")
    tgt.add_argument("--json", action="store_true")
    tgt.add_argument("--capabilities", action="store_true", help="print each arch's capability table")
    tgt.set_defaults(func=_targets)
    from . import inspect_cli

    inspect_cli.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
