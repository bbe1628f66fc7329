"""``T.print`` (TileLang's debug print, language/debug_print.py): a value from every thread that
reaches it, a message, or a buffer's elements (a shared tile or a fragment from one thread, a
local array or a global tensor from each). The printed lines and values are checked on the cpu
backend and the CUDA SIMT interpreter; HIP and Metal refuse it by name; the CUDA source compiles
for sm_80 and sm_90a (the device's printf: tests/gpu/test_gpu_print.py). Printing changes no result."""

import re

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LoweringError
from tilelang_core.testing.oracle import PATHS, run

PRINTS = [p for p in PATHS if p == "cpu" or p.startswith("cuda")]
REFUSES = [p for p in PATHS if p not in PRINTS]
LINE = re.compile(r"msg='(?P<msg>[^']*)' BlockIdx=\((?P<b>[-\d, ]+)\), ThreadIdx=\((?P<t>[-\d, ]+)\)"
                  r"(?:: (?:buffer=(?P<buf>\w+), index=(?P<index>\d+), )?dtype=(?P<dtype>\w+) value=(?P<value>\S+))?$")


def printing(rows=2, cols=4, threads=(4, 2), warp_id=0):
    """Two blocks, a 2-D thread block: each prints a value and a message from one thread, its
    shared tile, its fragment (scaled), a local array and the bool of a comparison, and copies its
    rows of A to B (what printing must not change)."""

    @T.prim_func
    def kernel(A: T.Tensor((2 * rows, cols), "float32"), B: T.Tensor((2 * rows, cols), "float32"),
               C: T.Tensor((3,), "uint8")):
        with T.Kernel(2, threads=threads) as bx:
            s = T.alloc_shared((rows, cols), "float32")
            f = T.alloc_fragment((rows, cols), "float32")
            loc = T.alloc_local((2,), "bfloat16")
            T.copy(A[bx * rows, 0], s)
            T.copy(s, f)
            for i, j in T.Parallel(rows, cols):
                f[i, j] = f[i, j] * 2.0
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            if tx == 1 and ty == 1:
                T.print(bx * 10 + tx)
                T.print("here")  # a positional string is the message
                T.print(msg="there")
                for k in T.serial(2):
                    loc[k] = T.cast(k + 0.5, "bfloat16")
                T.print(loc)
                T.print(C[2], msg="c2")
                T.print(A[bx * rows, 0] > 1.0, msg="big")
            T.print(s)
            T.print(f, msg="doubled", warp_id=warp_id)
            T.copy(s, B[bx * rows, 0])

    return kernel


def _lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, f"not a T.print line: {line!r}"
        out.append(m.groupdict())
    return out


@pytest.mark.parametrize("path", PRINTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_values_messages_and_buffers_print_what_the_kernel_holds(path, seed, capsys):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    c = rng.integers(0, 256, 3).astype(np.uint8)
    b = np.full((4, 4), np.nan, np.float32)
    out = run(path, printing(), A=a, B=b, C=c)
    np.testing.assert_array_equal(out["B"], a)  # printing changes nothing
    lines = _lines(capsys.readouterr().out)
    for block in (0, 1):
        mine = [x for x in lines if x["b"] == f"{block}, 0, 0"]
        one = [x for x in mine if x["t"] == "1, 1, 0"]  # the thread under the `if`
        assert [(x["msg"], x["dtype"], x["value"]) for x in one if not x["buf"]] == [
            ("expr<bx * 10 + tx>", "int32", str(block * 10 + 1)), ("here", None, None), ("there", None, None),
            ("c2", "uint8", str(c[2])), ("big", "bool", "true" if a[2 * block, 0] > 1.0 else "false")]
        assert [(x["buf"], x["index"], x["value"]) for x in one if x["buf"]] == [
            ("loc", "0", "0.5"), ("loc", "1", "1.5")]
        for name, msg, expected in (("s", "buffer<s, float32>", a[2 * block:2 * block + 2]),
                                    ("f", "doubled", 2 * a[2 * block:2 * block + 2])):
            rows = [x for x in mine if x["buf"] == name]
            assert {x["t"] for x in rows} == {"0, 0, 0"} and {x["msg"] for x in rows} == {msg}
            assert [int(x["index"]) for x in rows] == list(range(8))
            np.testing.assert_array_equal([np.float32(x["value"]) for x in rows], expected.ravel())


@pytest.mark.parametrize("path", PRINTS)
def test_a_print_in_a_parallel_loop_prints_each_element(path, capsys):
    """TileLang's register-file print (``T.print(buf[i, j])`` in T.Parallel): one line per element;
    on the GPU paths from the thread holding it, on cpu (one loop, no thread) ThreadIdx -1."""

    @T.prim_func
    def kernel(A: T.Tensor((8,), "float16")):
        with T.Kernel(1, threads=4):
            r = T.alloc_fragment((8,), "float16")
            T.copy(A, r)
            for i in T.Parallel(8):
                T.print(r[i])

    a = (np.arange(8) + 0.25).astype(np.float16)
    run(path, kernel, A=a)
    lines = _lines(capsys.readouterr().out)
    assert sorted(float(x["value"]) for x in lines) == sorted(a.astype(float).tolist())
    threads = {x["t"] for x in lines}
    assert threads == ({"-1, -1, -1"} if path == "cpu" else {f"{t}, 0, 0" for t in range(4)})


def test_the_thread_that_prints_a_tile_is_the_one_named(capsys):
    run("cpu", printing(threads=(32, 2), warp_id=1), A=np.ones((4, 4), np.float32), B=np.zeros((4, 4), np.float32),
        C=np.zeros(3, np.uint8))
    lines = _lines(capsys.readouterr().out)
    assert {x["t"] for x in lines if x["buf"] == "f"} == {"0, 1, 0"}  # warp 1: thread 32, (0, 1) in 32 x 2
    assert {x["t"] for x in lines if x["buf"] == "s"} == {"0, 0, 0"}


@pytest.mark.parametrize("path", REFUSES)
def test_targets_without_printf_refuse_it_by_name(path):
    @T.prim_func
    def kernel(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            T.print(A[T.get_thread_binding()])

    with pytest.raises(LoweringError, match=r"T.print in kernel 'kernel'.*no printf"):
        run(path, kernel, A=np.ones(4, np.float32))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_prints_with_printf_and_compiles(arch, tmp_path):
    from test_printer_limits import _cuda_source

    kernel = _cuda_source(printing(), arch, tmp_path)
    for helper in ("tl_print_int(", "tl_print_msg(", "tl_print_float(", "tl_print_uint(", "tl_print_bool("):
        assert helper in kernel, helper


def test_bad_calls_are_refused_at_the_line():
    with pytest.raises(FrontendError, match=r"T.print\(\) has nothing to print"):
        @T.prim_func
        def nothing(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                T.print()

    with pytest.raises(FrontendError, match="msg must be a string"):
        @T.prim_func
        def not_text(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                T.print(A[0], msg=3)

    with pytest.raises(FrontendError, match="one lane at a time"):
        @T.prim_func
        def vector(A: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=4):
                T.print(T.Ramp(0, 1, 2))

    with pytest.raises(FrontendError, match="T.print must be used inside|inside 'with T.Kernel"):
        @T.prim_func
        def outside(A: T.Tensor((4,), "float32")):
            T.print(A[0])


def test_a_kernel_that_reads_no_tensor_prints_a_large_tile_on_cpu(capsys):
    """TileLang's print test: a 16 x 16 int32 tile (a workspace on cpu, next to the print's packed
    call) in a kernel that reads none of its tensors; TVM's codegen stopped on it ("Unknown device
    id") until the cpu backend gave such functions the cpu device."""

    @T.prim_func
    def kernel(Q: T.Tensor((16, 16), "int32")):
        with T.Kernel(2, threads=64):
            s = T.alloc_shared((16, 16), "int32")
            for i, j in T.Parallel(16, 16):
                s[i, j] = i * 16 + j
            T.print(s)

    run("cpu", kernel, Q=np.zeros((16, 16), np.int32))
    lines = _lines(capsys.readouterr().out)
    assert [int(x["value"]) for x in lines if x["b"] == "1, 0, 0"] == list(range(256))
