"""Testing helpers for tilelang-core and for backend packages.

``tilelang_core.testing.conformance`` is the backend conformance suite (a pytest plugin).
"""
