"""The GPU tests' compile: the kernel for the device present, the compiler's schedule warnings
(notes about tile choices, not failures) silenced."""

import warnings

import tilelang_core as tl


def compiled(func, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tl.compile(func, target="cuda", **kwargs)
