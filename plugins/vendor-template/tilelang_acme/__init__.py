"""tilelang-acme: the vendor template backend of TileLang-X (see ../README.md)."""

__version__ = "0.1.0"
