"""Config spaces: what ``@autotune(configs=...)`` accepts, normalized to a list of dicts.

Three forms (the first two are TileLang's):

    configs=[{"block_M": 64, "block_N": 64}, {"block_M": 128, "block_N": 64}]    # explicit list
    configs=lambda M, N, K: [...]                     # called with the kernel's call arguments
    configs={"block_M": [64, 128], "block_N": [64, 128]}   # a space: the cartesian product (4)

Example::

    >>> expand_configs({"a": [1, 2], "b": [3]})
    [{'a': 1, 'b': 3}, {'a': 2, 'b': 3}]
"""

from __future__ import annotations

import inspect
import itertools
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError


def expand_configs(configs: Any, args: Sequence = (), kwargs: Mapping | None = None,
                   name: str = "kernel") -> list[dict]:
    """The list of config dicts that ``configs`` stands for (see the module docstring)."""
    if callable(configs) and not isinstance(configs, (list, tuple, dict)):
        configs = _call_with_fitting_args(configs, args, dict(kwargs or {}), name)
    if isinstance(configs, Mapping):
        keys = list(configs)
        values = []
        for key in keys:
            choices = configs[key]
            if isinstance(choices, (str, bytes)) or not isinstance(choices, Sequence):
                choices = [choices]  # a fixed value in a space
            if not choices:
                raise ConfigError(f"autotune of '{name}': config space entry {key!r} has no values")
            values.append(list(choices))
        out = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    elif isinstance(configs, (list, tuple)):
        out = []
        for i, config in enumerate(configs):
            if not isinstance(config, Mapping):
                raise ConfigError(f"autotune of '{name}': config {i} is a {type(config).__name__}, "
                                  f"not a dict of keyword arguments ({config!r})")
            out.append(dict(config))
    else:
        raise ConfigError(f"autotune of '{name}': configs must be a list of dicts, a dict of lists "
                          f"or a function returning one of them, got {type(configs).__name__}")
    if not out:
        raise ConfigError(f"autotune of '{name}': the config space is empty")
    return out


def _call_with_fitting_args(fn: Callable, args: Sequence, kwargs: dict, name: str):
    """Call a config generator with as much of the kernel's call as it accepts: TileLang passes
    the call's arguments, and generators often take only some of them (or none)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    params = sig.parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params) or any(p.kind is p.VAR_KEYWORD for p in params):
        return fn(*args, **kwargs)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
    call_kwargs = {k: v for k, v in kwargs.items() if k in names}
    try:
        return fn(*args[:len(positional)], **call_kwargs)
    except TypeError as exc:
        raise ConfigError(f"autotune of '{name}': the configs function {fn.__name__}{sig} cannot "
                          f"take the call's arguments ({exc})") from exc


def check_config_keys(configs: Sequence[Mapping], fn: Callable, name: str) -> None:
    """Every config key must be a parameter of the kernel factory: a typo would otherwise fail
    every candidate with the same TypeError, after compiling nothing."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    valid = set(sig.parameters)
    for config in configs:
        unknown = sorted(set(config) - valid)
        if unknown:
            raise ConfigError(f"autotune of '{name}': config keys {unknown} are not parameters of "
                              f"{name}{sig}; fix the config space")


def config_label(config: Mapping) -> str:
    """Short text of a config for progress bars and reports."""
    return ", ".join(f"{k}={v}" for k, v in config.items())
