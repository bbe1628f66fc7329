"""Layout printer and PNG plots of a Fragment's thread/element mapping."""

import pytest

from tilelang_core.errors import LayoutError
from tilelang_core.layout import Fragment, make_swizzled_layout
from tilelang_core.layout.plot import format_fragment, format_layout, plot_fragment, plot_layout


def test_format_fragment_shows_the_mapping_and_per_thread_elements():
    frag = Fragment.spread((4, 8), num_threads=8, vector=2, name="C")
    text = format_fragment(frag)
    assert text.splitlines()[0].startswith("Fragment(C shape=[4, 8], threads=8")
    # every element appears as T<thread>:<local> exactly where thread_of/local_of put it
    assert f"T{frag.thread_of(1, 3)}:{frag.local_of(1, 3)}" in text.splitlines()[3]
    assert "thread 0: (0, 0) (0, 1)" in text


def test_format_of_big_and_high_rank_tiles():
    big = Fragment.spread((64, 64), num_threads=128, vector=4)
    assert "(showing 16 x 16 of 64 x 64)" in format_fragment(big)
    with pytest.raises(LayoutError, match="1-D and 2-D"):
        format_fragment(Fragment.spread((2, 2, 2), num_threads=2))


def test_format_layout_shows_the_swizzle():
    text = format_layout(make_swizzled_layout(8, 64, 16), max_cols=16)
    row1 = text.splitlines()[2].split()
    assert row1[:2] == ["72", "73"] and row1[8] == "64"  # row 1: 16-byte chunks XOR-ed by 1


def test_plot_fragment_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is optional (pip install matplotlib)")
    frag = Fragment.spread((16, 16), num_threads=32, vector=2, name="C_local")
    path = plot_fragment(frag, tmp_path / "frag.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    path = plot_layout(make_swizzled_layout(8, 64, 16), tmp_path / "sub" / "layout.png")
    assert path.stat().st_size > 1000


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch, tmp_path):
    import builtins

    from tilelang_core.errors import ConfigError

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ConfigError, match="pip install matplotlib"):
        plot_fragment(Fragment.spread((4, 4), num_threads=4), tmp_path / "x.png")
