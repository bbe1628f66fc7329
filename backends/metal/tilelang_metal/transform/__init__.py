"""The metal backend's own passes (one per file), run after the SIMT kit's lowering."""

from .static_threadgroup import static_threadgroup

__all__ = ["static_threadgroup"]
