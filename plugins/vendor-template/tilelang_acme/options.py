"""Compile options of the acme backend: frozen, validated, with a stable hash (part of the cache key).

Add a field per option your compiler takes; users set them with ``pass_configs={"<field>": ...}``
(``BackendOptions.from_pass_configs`` maps them and refuses unknown keys by name).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.backend import BackendOptions


@dataclass(frozen=True)
class AcmeOptions(BackendOptions):
    """Options of one acme compile.

    check_lanes: the simulator refuses a kernel whose threads disagree on a loop bound (an example
        of a bool option; validated like every field declared ``bool``).

    Example::

        AcmeOptions.from_pass_configs({"check_lanes": False})
    """

    check_lanes: bool = True

    def __post_init__(self):
        self.check_flags("acme")
