"""``python -m tilelang_core compile``: print any stage of a kernel from the command line.

    python -m tilelang_core compile examples/gemm/gemm.py:gemm --args 256 256 256 block_M=64 \\
        --target cpu --emit lowered
    python -m tilelang_core compile kernels.py:add_one --target cpu --emit source -o add.ll
    python -m tilelang_core compile mypkg.kernels:matmul --args '[1024, 1024, 1024]' --emit ptx

``KERNEL`` is ``file.py:name`` or ``package.module:name``; ``name`` is a ``T.prim_func``, a ``@jit``
function (lazy: its compile-time arguments; eager: sizes, as for ``f.compile(M=..., N=...)``) or
an ``@autotune`` function (compiled with the given arguments, not tuned). ``--args`` tokens are
JSON values (``128``, ``'"float16"'``, ``true``), ``key=value`` pairs (value JSON, else a plain
string: ``dtype=float16``), a JSON list of positional arguments or a JSON object of keywords.
The stages are whatever the target's backend keeps in ``kernel.asm`` (tirx, lowered, source on
every backend; ptx, sass from cuda); asking for another one lists those available.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import sys
from pathlib import Path

from .errors import ConfigError, TileLangError

COMMON_STAGES = ("tirx", "lowered", "source", "ptx", "sass")


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile a kernel and print one stage (tirx, lowered, source, ptx, sass)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("kernel", help="file.py:name or package.module:name")
    p.add_argument("--args", nargs="*", default=[], metavar="ARG",
                   help="compile-time arguments: JSON values, key=value, a JSON list or object")
    p.add_argument("--target", default=None, help="target (default: the kernel's own, else 'auto')")
    p.add_argument("--emit", default="source", help=f"stage to print: {', '.join(COMMON_STAGES)} (default source)")
    p.add_argument("-o", "--output", default=None, help="write the stage to this file instead of stdout")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        text = emit(args.kernel, args.args, args.target, args.emit)
    except TileLangError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def parse_args(tokens) -> tuple[list, dict]:
    """``--args`` tokens -> (positional, keyword) compile-time arguments.

        >>> parse_args(["128", "dtype=float16", "block_M=64"])
        ([128], {'dtype': 'float16', 'block_M': 64})
    """
    positional, keywords = [], {}
    for token in tokens:
        key, eq, rest = token.partition("=")
        if eq and key.isidentifier():
            keywords[key] = _value(rest)
            continue
        value = _value(token)
        if isinstance(value, list) and len(tokens) == 1:
            positional.extend(value)
        elif isinstance(value, dict):
            keywords.update(value)
        else:
            positional.append(value)
    return positional, keywords


def _value(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word: float16, bfloat16, ...


def load_object(reference: str):
    """The object ``file.py:name`` or ``module:name`` refers to."""
    where, colon, name = reference.rpartition(":")
    if not colon or not where or not name:
        raise ConfigError(f"kernel {reference!r} must be file.py:name or package.module:name")
    path = Path(where)
    if where.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ConfigError(f"kernel file {where} does not exist")
        sys.path.insert(0, str(path.resolve().parent))  # so the file's sibling imports work
        spec = importlib.util.spec_from_file_location("__tilelang_inspect__", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)  # not __main__: its `if __name__ == "__main__"` stays off
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise ConfigError(f"cannot import {where!r} ({exc}); give a file path or a module on "
                              f"sys.path") from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            found = sorted(n for n in vars(module) if not n.startswith("_"))[:20]
            raise ConfigError(f"{where} has no {name!r}; it defines: {', '.join(found)}")
        obj = getattr(obj, part)
    return obj


def compile_reference(obj, positional: list, keywords: dict, target: str | None):
    """Compile what ``obj`` is (PrimFunc, @jit, @autotune) -> JITKernel, or the PrimFunc only
    (``None`` kernel) when only its tirx is wanted."""
    from .jit.compiler import compile as _compile

    if hasattr(obj, "jit") and hasattr(obj, "tune"):  # @autotune: its @jit, not tuned
        obj = obj.jit
    if hasattr(obj, "params") and hasattr(obj, "script"):  # a PrimFunc
        if positional or keywords:
            raise ConfigError("a T.prim_func takes no compile-time arguments; drop --args")
        return _compile(obj, target=target or "auto")
    if hasattr(obj, "get_tir"):  # lazy @jit
        func = obj.get_tir(*positional, **keywords)
        return _compile(func, out_idx=obj.out_idx, target=target or obj.target,
                        pass_configs=obj.pass_configs, _backend=obj._backend)
    if hasattr(obj, "program") and hasattr(obj, "compile"):  # eager @jit
        if target is not None:
            obj = copy.copy(obj)  # a private copy (empty memo) with the requested target
            obj.target = target
        return obj.compile(*positional, **keywords)
    raise ConfigError(f"{type(obj).__name__} is not a kernel: give a T.prim_func, a @jit or an "
                      f"@autotune function")


def emit(reference: str, tokens, target: str | None, stage: str) -> str:
    """The text of ``stage`` for the kernel ``reference`` (see the module docstring)."""
    obj = load_object(reference)
    positional, keywords = parse_args(tokens)
    kernel = compile_reference(obj, positional, keywords, target)
    if stage in kernel.asm.stages:  # ptx/sass are produced now, not on every compile
        return kernel.asm[stage]
    kind = getattr(kernel.target, "kind", kernel.target)
    hint = " (ptx and sass come from the cuda backend: --target cuda)" if stage in ("ptx", "sass") else ""
    raise ConfigError(f"target '{kernel.target}' does not produce stage '{stage}'{hint}; the "
                      f"{kind} backend produces: {', '.join(kernel.asm.stages)}")
