"""FP8 dtype selection: ``determine_fp8_type("e4m3")`` is ``T.float8_e4m3fn`` on NVIDIA GPUs and
the FNUZ variant on AMD's gfx94x (TileLang's helper, same answers)."""

from __future__ import annotations

from .dtypes import DTYPES


def determine_fp8_type(fp8_format: str = "e4m3") -> str:
    """The FP8 dtype of ``fp8_format`` ("e4m3" or "e5m2") for the platform torch runs on."""
    if fp8_format not in ("e4m3", "e5m2"):
        raise ValueError(f"unsupported FP8 format {fp8_format!r}: use 'e4m3' or 'e5m2'")
    import torch

    ocp = DTYPES["float8_e4m3fn"] if fp8_format == "e4m3" else DTYPES["float8_e5m2"]
    if getattr(torch.version, "hip", None) is None:
        return ocp
    arch = ""
    if torch.cuda.is_available():
        arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")
    if arch.startswith("gfx950"):  # gfx950 has the OCP formats
        return ocp
    return DTYPES["float8_e4m3fnuz"] if fp8_format == "e4m3" else DTYPES["float8_e5m2fnuz"]


def determine_torch_fp8_type(fp8_format: str = "e4m3"):
    """The torch dtype matching :func:`determine_fp8_type`."""
    import torch

    name = determine_fp8_type(fp8_format)
    dtype = getattr(torch, name, None)
    if dtype is None:
        raise RuntimeError(f"this torch has no dtype {name}")
    return dtype


__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]
