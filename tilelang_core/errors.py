"""The one exception hierarchy of TileLang-X.

Every message says what failed, where (kernel, op, parameter, source line) and what to do.
Backends raise these too, so a user catches ``TileLangError`` and gets everything.
"""

from __future__ import annotations


class TileLangError(RuntimeError):
    """Base of every error TileLang-X raises on purpose. A RuntimeError, as TileLang's are (TVM's
    errors derive from it): code written for TileLang that catches RuntimeError catches ours."""


class ConfigError(TileLangError):
    """A TILELANG_* environment variable or a pass config has a value we cannot use."""


class ConfigValueError(ConfigError, ValueError):
    """A ConfigError where TileLang raises ValueError (conflicting output indices)."""


class PluginError(TileLangError):
    """A backend plugin is missing, broken, incompatible or ambiguous."""


class TargetError(TileLangError):
    """A target string or dict is malformed, unknown, or not available on this machine."""


class FrontendError(TileLangError):
    """Kernel source is wrong: carries the user's file, line and a caret."""

    def __init__(self, message: str, *, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None, source_line: str | None = None, kernel: str | None = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.kernel = kernel
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.kernel:
            where.append(f"in kernel '{self.kernel}'")
        if self.filename:
            where.append(f"{self.filename}:{self.lineno}" + (f":{self.col}" if self.col else ""))
        head = f"{self.message}" + (f"\n  --> {', '.join(where)}" if where else "")
        if self.source_line is not None:
            line = self.source_line.rstrip("\n")
            caret = " " * max((self.col or 1) - 1, 0) + "^"
            head += f"\n   | {line}\n   | {caret}"
        return head


class FrontendValueError(FrontendError, ValueError):
    """A FrontendError for an argument value TileLang itself refuses with ValueError (a memory
    order an access cannot take), so ``except ValueError`` written for TileLang still catches it."""


class FrontendAssertionError(FrontendError, AssertionError):
    """A FrontendError for a check TileLang makes with ``assert`` (a view that does not cover its
    buffer), so test code written against TileLang's AssertionError keeps working."""


class LayoutError(TileLangError):
    """Layout inference found no layout, or two that conflict, for a buffer."""


class LoweringError(TileLangError):
    """A tile op could not be lowered for the chosen target."""


class CompileError(TileLangError):
    """The backend toolchain failed; ``log`` holds its full output."""

    def __init__(self, message: str, *, log: str = "", command: list[str] | None = None):
        self.log = log
        self.command = command
        text = message
        if command:
            text += "\n  command: " + " ".join(command)
        if log:
            text += "\n" + log
        super().__init__(text)


class NoToolchainError(CompileError):
    """The kernel's source was generated, but this machine lacks the toolchain that builds it
    (the vendor's compiler). Backends raise it from ``build``; ``compile`` then returns the kernel
    with every stage up to the source (``get_kernel_source()`` works), no binary and nothing in
    the disk cache; calling it raises this error."""


class LaunchError(TileLangError):
    """Arguments do not fit the compiled kernel, or the launch itself failed."""


class NoDeviceError(LaunchError):
    """The kernel compiled, but this machine cannot run it (no device or runtime of its target).

    Backends raise it from ``load``; ``compile`` then returns the kernel anyway (its source and
    every stage can be read, ``export_library`` works) and the first call raises this error."""


class CacheError(TileLangError):
    """The on-disk kernel cache could not be read or written."""


class ResultMismatchError(TileLangError, AssertionError):
    """A kernel's outputs differ from the reference beyond the tolerances (profiler, autotuner).

    An AssertionError too, so test code that expects TileLang's assert semantics keeps working."""


class AutotuneError(TileLangError):
    """No candidate of an autotune search compiled, passed the reference check and ran."""


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by the caller point at the user's code: the
    first frame outside tilelang_core and the backend packages (modules named ``tilelang_*``)."""
    import re
    import sys

    ours = re.compile(r"tilelang_\w+(\.|$)|importlib\.")
    frame, level = sys._getframe(1), 1
    while frame is not None:
        if not ours.match(str(frame.f_globals.get("__name__", ""))):
            return level
        frame, level = frame.f_back, level + 1
    return 1


class PerformanceWarning(UserWarning):
    """A vendor toolchain said a kernel will run slower than its code asks for (ptxas's "Potential
    Performance Loss" advisories: every wgmma serialized, setmaxnreg ignored). The kernel is still
    correct; the message names the kernel and the advisory's code."""
