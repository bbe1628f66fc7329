"""The vendor template passes the same conformance suite as the first-party backends."""

from tilelang_core.testing.conformance import BackendConformance


class TestConformance(BackendConformance):
    plugin_module = "tilelang_acme._plugin"
