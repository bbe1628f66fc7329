"""``tilelang.cuda``: TileLang's CUDA-only internals (hand-written MMA emitters such as
``tilelang.cuda.intrinsics.macro.mma_macro_generator.TensorCoreIntrinEmitter``, its swizzle
helpers, ``tilelang.cuda.language``).

TileLang-X generates the matrix instructions itself from ``T.gemm`` (see backends/cuda). Of this
machinery it provides what hand-written TileLang kernels build on most, written anew in
``tilelang_core.cuda.intrinsics``: the ``TensorCoreIntrinEmitter`` (ldmatrix / mma.sync macros over
``T.ptx_ldmatrix`` / ``T.ptx_mma``) and the shared-memory swizzles of ``mma_layout``. Everything else
imports, so that a test file or module that also holds portable kernels still loads; using any of
it raises a TileLangError that names it and says what to write instead.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

_PREFIX = __name__ + "."


def _refusal(name: str):
    from ..errors import TileLangError

    return TileLangError(f"tilelang.{name[len('tilelang_core.'):]} is TileLang's hand-written CUDA "
                         "machinery, which TileLang-X does not provide: write the kernel with T.gemm / "
                         "T.copy and the cuda backend picks ldmatrix/mma.sync or wgmma itself")


class _Unavailable:
    """A name that exists for imports and refuses every use."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise _refusal(self._name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise _refusal(f"{self._name}.{attr}")

    def __mro_entries__(self, bases):
        raise _refusal(self._name)

    def __repr__(self) -> str:
        return f"<unavailable {self._name}>"


class _ShimModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Unavailable(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(_PREFIX):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _ShimModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.append(_Finder())


def unavailable(module: str):
    """A module ``__getattr__`` for the modules TileLang-X does provide here
    (``tilelang_core.cuda.intrinsics``): a name they lack refuses every use, as in the shims."""
    def getattr_(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Unavailable(f"{module}.{attr}")

    return getattr_


__getattr__ = unavailable(__name__)
