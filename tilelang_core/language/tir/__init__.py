"""TileLang's ``tilelang.language.tir`` module path (its TIR-level builders and ops), for kernels
and tests that import from it: the same names as ``T``. ``ir`` holds them."""

from .ir import *  # noqa: F401,F403
