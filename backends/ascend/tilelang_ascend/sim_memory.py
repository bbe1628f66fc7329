"""Byte-addressed memories, dtype encoding and the fractal formats, for the simulator."""

from __future__ import annotations

import numpy as np

from tilelang_core.errors import TileLangError

from .isa import dtype_bytes, fractal_of, round_up


class SimulatorError(TileLangError):
    """The simulated Ascend program broke a hardware rule (placement, size, alignment, sync)."""


_NP = {"float16": np.float16, "float32": np.float32, "int32": np.int32, "int16": np.int16,
       "int8": np.int8, "uint8": np.uint8, "bool": np.uint8, "bfloat16": np.uint16}


def storage_dtype(dtype: str):
    return _NP[dtype]


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values (storage dtype) -> values to compute with (bfloat16 -> float32)."""
    if dtype == "bfloat16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw


def encode(values, dtype: str) -> np.ndarray:
    """Values -> storage dtype (round to nearest even for bfloat16)."""
    if dtype == "bfloat16":
        f = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        rounded = f + 0x7FFF + ((f >> 16) & 1)
        return (rounded >> 16).astype(np.uint16)
    if dtype == "bool":
        return (np.asarray(values) != 0).astype(np.uint8)
    return np.asarray(values).astype(_NP[dtype])


class Memory:
    """One on-chip memory: a byte array of the capacity of the target."""

    def __init__(self, name: str, size: int):
        self.name = name
        self.data = np.zeros(size, dtype=np.uint8)

    def _range(self, addr: int, nbytes: int, what: str):
        if addr < 0 or addr + nbytes > self.data.size:
            raise SimulatorError(f"{what}: access to {self.name} bytes [{addr}, {addr + nbytes}) "
                                 f"is outside the {self.data.size}-byte {self.name} (out of "
                                 f"memory)")
        return self.data[addr:addr + nbytes]

    def read(self, addr: int, count: int, dtype: str, what: str) -> np.ndarray:
        raw = self._range(addr, count * dtype_bytes(dtype), what).view(storage_dtype(dtype))
        return decode(raw.copy(), dtype)

    def write(self, addr: int, values, dtype: str, what: str) -> None:
        enc = encode(np.asarray(values).reshape(-1), dtype)
        self._range(addr, enc.nbytes, what)[:] = enc.view(np.uint8)


# -- fractal formats ----------------------------------------------------------------------------
# A matrix R x C (padded to whole fractals fr x fc) is stored as fractals of fr*fc contiguous
# elements. NZ: fractals in column-block-major order, rows inside a fractal ("N" of "Z"s);
# ZZ: fractals row-block-major, rows inside; ZN: fractals row-block-major, columns inside.
_ORDER = {"NZ": (2, 0, 1, 3), "ZZ": (0, 2, 1, 3), "ZN": (0, 2, 3, 1)}


def padded_dims(mem: str, dtype: str, rows: int, cols: int) -> tuple[int, int]:
    fr, fc = fractal_of(mem, dtype)
    return round_up(rows, fr), round_up(cols, fc)


def to_fractal(mat: np.ndarray, fmt: str, mem: str, dtype: str) -> np.ndarray:
    """Logical matrix -> flat storage order in ``fmt`` (zero padded)."""
    fr, fc = fractal_of(mem, dtype)
    rp, cp = padded_dims(mem, dtype, *mat.shape)
    full = np.zeros((rp, cp), dtype=mat.dtype)
    full[:mat.shape[0], :mat.shape[1]] = mat
    blocks = full.reshape(rp // fr, fr, cp // fc, fc)
    return blocks.transpose(_ORDER[fmt]).reshape(-1)


def from_fractal(flat: np.ndarray, fmt: str, mem: str, dtype: str, rows: int,
                 cols: int) -> np.ndarray:
    """Flat storage in ``fmt`` -> the logical ``rows x cols`` matrix."""
    fr, fc = fractal_of(mem, dtype)
    rp, cp = padded_dims(mem, dtype, rows, cols)
    order = _ORDER[fmt]
    shape = [(rp // fr, fr, cp // fc, fc)[i] for i in order]
    inverse = np.argsort(order)
    full = flat.reshape(shape).transpose(inverse).reshape(rp, cp)
    return full[:rows, :cols]
