"""tilelang-metal passes the backend conformance suite of tilelang-core."""

from tilelang_core.testing.conformance import BackendConformance


class TestConformance(BackendConformance):
    plugin_module = "tilelang_metal._plugin"
