"""Shared helpers of the Ascend backend tests: load an example, run it on the simulator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from tilelang_ascend.interpreter import simulate
from tilelang_ascend.pipeline import lower_program

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
_loaded: dict = {}


def example(relpath: str):
    if relpath not in _loaded:
        spec = importlib.util.spec_from_file_location("ascend_ex_" + relpath.replace("/", "_")[:-3],
                                                      EXAMPLES / relpath)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[relpath] = module
    return _loaded[relpath]


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


__all__ = ["example", "rel_err", "simulate", "lower_program"]
