"""See a layout: text printers for any backend, and PNG plots (matplotlib, optional).

    from tilelang_core.layout import Fragment
    from tilelang_core.layout.plot import format_fragment, plot_fragment

    frag = Fragment.spread((16, 16), num_threads=32, vector=2, name="C_local")
    print(format_fragment(frag))              # header + a T<thread>:<local> grid + per-thread lists
    plot_fragment(frag, "C_local.png")        # one colour per thread, 'T<thread>/<local>' in cells

A fragment is drawn as its first two dimensions (1-D fragments as one row); larger tiles are cut
to ``max_rows`` x ``max_cols`` and say so. ``plot_layout`` colours a shared-memory ``Layout`` by
offset, with the offset written in each cell, which makes swizzles visible.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, LayoutError
from .fragment import Fragment
from .layout import Layout


def _grid_shape(shape) -> tuple[int, int]:
    if len(shape) == 1:
        return 1, shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    raise LayoutError(f"can only draw 1-D and 2-D tiles, got shape {list(shape)}; take a 2-D slice "
                      f"or a reduce() of the fragment first")


def _at(shape, i: int, j: int) -> tuple[int, ...]:
    return (j,) if len(shape) == 1 else (i, j)


def format_fragment(frag: Fragment, max_rows: int = 16, max_cols: int = 16,
                    threads_listed: int = 4) -> str:
    """Text picture of a fragment: its digits, a grid of ``T<thread>:<local>`` (replica 0) and,
    for the first threads, the elements they hold in register order."""
    rows, cols = _grid_shape(frag.shape)
    lines = [repr(frag)]
    shown_r, shown_c = min(rows, max_rows), min(cols, max_cols)
    if (shown_r, shown_c) != (rows, cols):
        lines.append(f"(showing {shown_r} x {shown_c} of {rows} x {cols})")
    header = "      " + " ".join(f"{j:>8}" for j in range(shown_c))
    lines.append(header)
    for i in range(shown_r):
        cells = []
        for j in range(shown_c):
            idx = _at(frag.shape, i, j)
            cells.append(f"T{frag.thread_of(*idx)}:{frag.local_of(*idx)}")
        lines.append(f"{i:>5} " + " ".join(f"{c:>8}" for c in cells))
    for t in range(min(threads_listed, frag.num_threads)):
        held = [tuple(int(v) for v in frag.index_of(t, k)) for k in range(frag.local_size)]
        more = "" if len(held) <= 8 else f" ... ({len(held)} in all)"
        lines.append(f"thread {t}: " + " ".join(str(h) for h in held[:8]) + more)
    return "\n".join(lines)


def format_layout(layout: Layout, max_rows: int = 16, max_cols: int = 16) -> str:
    """Text picture of a memory layout: the offset of every element of a 1-D or 2-D tile."""
    rows, cols = _grid_shape(layout.shape)
    lines = [repr(layout)]
    for i in range(min(rows, max_rows)):
        cells = [layout.offset(*_at(layout.shape, i, j)) for j in range(min(cols, max_cols))]
        lines.append(" ".join(f"{int(c):>5}" for c in cells))
    if rows > max_rows or cols > max_cols:
        lines.append(f"(showing {min(rows, max_rows)} x {min(cols, max_cols)} of {rows} x {cols})")
    return "\n".join(lines)


def print_layout(obj, **kwargs) -> None:
    """Print a Fragment or a Layout (``format_fragment`` / ``format_layout``)."""
    print(format_fragment(obj, **kwargs) if isinstance(obj, Fragment) else format_layout(obj, **kwargs))


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("plotting layouts needs matplotlib: pip install matplotlib "
                          "(format_fragment/format_layout print them without it)") from None
    matplotlib.use("Agg", force=False)  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


def _draw(values, labels, title: str, path, colormap: str, cell_inches: float,
          cycle: int | None = None):
    plt = _pyplot()
    rows, cols = len(values), len(values[0])
    fig, ax = plt.subplots(figsize=(max(3.0, cols * cell_inches), max(2.0, rows * cell_inches + 0.6)))
    if cycle:  # one colour per id, cycling through a qualitative map (neighbours always differ)
        values = [[v % cycle for v in row] for row in values]
        ax.imshow(values, cmap=colormap, vmin=0, vmax=cycle - 1, aspect="equal", interpolation="nearest")
    else:
        ax.imshow(values, cmap=colormap, aspect="equal", interpolation="nearest")
    if rows * cols <= 32 * 32:  # labels stay readable up to about this size
        for i in range(rows):
            for j in range(cols):
                ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=6, color="black")
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.tick_params(labelsize=6)
    ax.set_title(title, fontsize=8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def plot_fragment(frag: Fragment, path, max_rows: int = 64, max_cols: int = 64,
                  cell_inches: float = 0.45) -> Path:
    """Write a PNG of ``frag``'s thread/element mapping: each cell is coloured by the thread that
    holds it (replica 0) and labelled ``T<thread>/<local>``. Returns the path."""
    rows, cols = _grid_shape(frag.shape)
    rows, cols = min(rows, max_rows), min(cols, max_cols)
    threads = [[int(frag.thread_of(*_at(frag.shape, i, j))) for j in range(cols)] for i in range(rows)]
    labels = [[f"T{threads[i][j]}\n{int(frag.local_of(*_at(frag.shape, i, j)))}" for j in range(cols)]
              for i in range(rows)]
    title = f"{frag.name or 'fragment'} {list(frag.shape)}: {frag.num_threads} threads x {frag.local_size} regs"
    if frag.replicas > 1:
        title += f", {frag.replicas} replicas"
    return _draw(threads, labels, title, path, "tab20", cell_inches, cycle=20)


def plot_layout(layout: Layout, path, max_rows: int = 64, max_cols: int = 64,
                cell_inches: float = 0.45) -> Path:
    """Write a PNG of a memory layout, cells coloured and labelled by their offset."""
    rows, cols = _grid_shape(layout.shape)
    rows, cols = min(rows, max_rows), min(cols, max_cols)
    offsets = [[int(layout.offset(*_at(layout.shape, i, j))) for j in range(cols)] for i in range(rows)]
    labels = [[str(v) for v in row] for row in offsets]
    return _draw(offsets, labels, f"{layout.kind} {list(layout.shape)}", path, "viridis", cell_inches)
