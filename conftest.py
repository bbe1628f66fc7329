"""Session-wide test settings for every test folder (tests/, backends/*/tests, plugins/*/tests)."""

import os
import tempfile

from hypothesis import HealthCheck, settings

# `pytest --hypothesis-profile=nightly`: the generated tests (tests/fuzz above all) run hundreds of
# random examples each instead of their bounded, seeded CI share.
settings.register_profile("nightly", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def pytest_configure(config):
    # Kernels compiled by tests go to a throwaway cache, never the user's ~/.cache/tilelang_core.
    if "TILELANG_CACHE_DIR" not in os.environ:
        os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilelang-test-cache-")
