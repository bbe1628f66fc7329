"""``tilelang.engine.callback``: TileLang's hooks that rewrite generated device source.

Importing them works (TileLang examples import them and leave the decorator commented out);
registering one is refused: TileLang-X does not run user code over its generated source, and a
registered callback that silently did nothing would change no code while the user believes it
did. Edit a kernel through the language, or compile the source you want with your toolchain.
"""

from __future__ import annotations

from ..errors import TileLangError


def _refuse(name: str):
    def register(func=None, override: bool = True):
        raise TileLangError(f"tilelang.engine.callback.{name}: post-processing the generated source with a "
                            "Python callback is not supported by TileLang-X; express the change in the kernel")
    register.__name__ = name
    return register


register_cuda_postproc_callback = _refuse("register_cuda_postproc_callback")
register_hip_postproc_callback = _refuse("register_hip_postproc_callback")
register_cuda_postproc = _refuse("register_cuda_postproc")
register_hip_postproc = _refuse("register_hip_postproc")
register_c_postproc = _refuse("register_c_postproc")

__all__ = ["register_c_postproc", "register_cuda_postproc", "register_cuda_postproc_callback",
           "register_hip_postproc", "register_hip_postproc_callback"]
