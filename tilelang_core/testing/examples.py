"""The command line every example shares: sizes and flags as options, a target, a numeric check.

    if __name__ == "__main__":
        example_main(check, sizes={"M": 300, "N": 200}, flags=("causal",), tolerance=1e-3,
                     label="gemm")

``check(**sizes, **flags, device=...)`` runs the kernel on fresh random data and returns its
relative error against a float64 torch reference; ``device`` is the torch device of the target.
"""

from __future__ import annotations

import argparse
from typing import Callable

from ..plugin.manager import get_plugin_manager
from ..target import Target, resolve_target


def torch_device(target: Target) -> str:
    """The torch device type kernels for ``target`` take ("cpu", "cuda"). Asked of a backend
    instance, since a target feature may change it (``ascend+sim`` runs on CPU tensors)."""
    backend = get_plugin_manager().get_backend(target)
    return backend.device_type or "cpu"


def example_main(check: Callable[..., float], *, sizes: dict[str, int | float], flags: tuple[str, ...] = (),
                 tolerance: float, label: str, argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=label)
    for name, default in sizes.items():
        parser.add_argument(f"--{name.lower().replace('_', '-')}", dest=name, type=type(default), default=default)
    for name in flags:
        parser.add_argument(f"--{name.lower().replace('_', '-')}", dest=name, action="store_true")
    parser.add_argument("--target", default="auto", help="target (default: auto)")
    args = parser.parse_args(argv)
    target = resolve_target(args.target)
    values = {name: getattr(args, name) for name in (*sizes, *flags)}
    with target:
        err = check(**values, device=torch_device(target))
    shown = " ".join(f"{k}={v}" for k, v in values.items())
    verdict = "OK" if err < tolerance else "FAILED"
    print(f"{label} {shown} on {target}: relative error {err:.2e} (tolerance {tolerance:.0e}) {verdict}")
    if not err < tolerance:
        raise SystemExit(1)
    return err
