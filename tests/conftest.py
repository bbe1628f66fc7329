import warnings

import pytest

from tilelang_core.plugin.manager import set_plugin_manager
from tilelang_core.target import reset_notices


@pytest.fixture(autouse=True)
def _fresh_plugin_state(monkeypatch):
    """Each test discovers plugins afresh and sees one-time notices again."""
    for name in ("TILELANG_TARGET", "TILELANG_PROBE_ORDER", "TILELANG_AUTO_STRICT", "TILELANG_DISABLE_PLUGINS",
                 "TILELANG_PROBE_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    previous = set_plugin_manager(None)
    reset_notices()
    yield
    set_plugin_manager(previous)
    reset_notices()
