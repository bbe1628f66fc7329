"""Compile options of the cpu backend: frozen, validated, with a stable hash (BackendOptions)."""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.backend import BackendOptions
from tilelang_core.errors import ConfigError

#: LLVM CPU names we accept for ``mcpu`` (portable x86-64 levels; never "native", which TVM rejects)
MCPU_LEVELS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "generic")


@dataclass(frozen=True)
class CpuOptions(BackendOptions):
    """Options of one cpu compile.

    num_threads: 0 runs blocks in parallel on TVM's thread pool (its size is TVM_NUM_THREADS, or the
        number of cores); 1 runs them one after another (deterministic, easiest to debug). Kernels
        with atomics on global memory always run their blocks serially (see pipeline.py).
    vectorize: vectorize the inner loop of lowered gemms explicitly (LLVM vectorizes the rest on its
        own where it can).
    mcpu: the LLVM CPU to compile for; None picks the best x86-64 level the host supports.

    Example::

        CpuOptions.from_pass_configs({"tl.num_threads": 1, "vectorize": False})
    """

    num_threads: int = 0
    vectorize: bool = True
    mcpu: str | None = None

    def __post_init__(self):
        if isinstance(self.num_threads, bool) or not isinstance(self.num_threads, int) \
                or self.num_threads < 0:
            raise ConfigError(f"cpu option num_threads={self.num_threads!r} must be an integer >= 0 "
                              f"(0: all cores, 1: serial blocks)")
        if self.num_threads > 1:
            raise ConfigError(f"cpu option num_threads={self.num_threads} is not supported per kernel: "
                              f"use 0 (thread pool, sized by TVM_NUM_THREADS) or 1 (serial)")
        self.check_flags("cpu")
        if self.mcpu is not None and self.mcpu not in MCPU_LEVELS:
            raise ConfigError(f"cpu option mcpu={self.mcpu!r} is not one of {', '.join(MCPU_LEVELS)} "
                              f"(leave it unset to pick from the host CPU)")

    @property
    def parallel_blocks(self) -> bool:
        return self.num_threads != 1
