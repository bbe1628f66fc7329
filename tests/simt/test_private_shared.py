"""The barrier pass's ownership check (simt/transform/private_shared.py) against a brute-force
count: generated statement lists (stores and loads of one shared buffer, in and out of loops,
under a condition on the thread, inside an enclosing loop) over every thread; "private" must hold
exactly when no element is touched by two threads for one value of the enclosing loop."""

from hypothesis import example, given, settings, strategies as st
from tvm import tirx

from tilelang_core.simt.transform.private_shared import private_to_threads

SIZE = 64


def _index(form, tx, i, j):
    """A TIR index and the Python function that computes it (tx, i, j -> element)."""
    kind, a, b, c = form
    if kind == "affine":
        return (tirx.FloorMod(tx * a + i * b + j * c, SIZE),
                lambda t, x, y: (t * a + x * b + y * c) % SIZE)
    # a swizzle TVM's analyzer cannot bound: the reason this check exists
    return (tirx.FloorMod(tirx.bitwise_xor(tx, c) * a + i * b + j, SIZE),
            lambda t, x, y: ((t ^ c) * a + x * b + y) % SIZE)


forms = st.tuples(st.sampled_from(["affine", "xor"]), st.integers(0, 5), st.integers(0, 9), st.integers(0, 7))
statements = st.lists(st.tuples(forms, st.booleans(), st.integers(0, 4)), min_size=1, max_size=6)


def _build(spec, shared, tx, j):
    """[(stmt, touched(t, j) -> set of elements)] from (index form, is a store, loop extent; 0: no
    loop, the statement alone)."""
    built = []
    for n, (form, store, extent) in enumerate(spec):
        i = tirx.Var(f"i{n}", "int32")
        index, compute = _index(form, tx, i if extent else tirx.const(0, "int32"), j)
        access = (tirx.BufferStore(shared, tirx.const(0.0, "float32"), [index]) if store
                  else tirx.Evaluate(tirx.BufferLoad(shared, [index])))
        stmt = tirx.For(i, 0, extent, tirx.ForKind.SERIAL, access) if extent else access
        built.append((stmt, lambda t, y, f=compute, e=extent: {f(t, x, y) for x in range(max(e, 1))}))
    return built


@settings(max_examples=60, deadline=None)
@example(spec=[(("affine", 0, 0, 3), True, 0)], threads=4, outer=1, limit=1)  # one thread runs it: private
@example(spec=[(("xor", 1, 0, 1), True, 3), (("affine", 1, 0, 0), False, 0)], threads=8, outer=2, limit=9)
@given(spec=statements, threads=st.integers(1, 8), outer=st.integers(1, 3), limit=st.integers(0, 9))
def test_private_is_exactly_no_element_shared_by_two_threads(spec, threads, outer, limit):
    shared = tirx.decl_buffer((SIZE,), "float32", name="S", scope="shared")
    tx, j = tirx.Var("tx", "int32"), tirx.Var("j", "int32")
    built = _build(spec, shared, tx, j)
    cond = tx < limit  # threads at or past the limit do not run the statements
    got = private_to_threads([s for s, _ in built], [(j, outer, 0)], [(tx, threads)], {}, {}, (cond,))
    want = True
    for y in range(outer):
        owner = {}
        for t in range(min(threads, limit)):
            for _, touched in built:
                for element in touched(t, y):
                    want &= owner.setdefault(element, t) == t
    assert got == want


def test_many_statements_beside_a_long_loop_are_checked_per_statement():
    """64 single stores of each thread's own (swizzled) element, then a loop of 8192 iterations
    over its own elements: private. One more store of another thread's element: not. (Each
    statement is evaluated over the axes it uses; evaluated over all of them the 64 stores took
    9 s and 0.5 GB here.)"""
    size = 128 * 64
    shared = tirx.decl_buffer((size,), "float32", name="S", scope="shared")
    tx, i = tirx.Var("tx", "int32"), tirx.Var("i", "int32")
    zero = tirx.const(0.0, "float32")
    stores = [tirx.BufferStore(shared, zero, [k * 128 + tirx.bitwise_and(tirx.bitwise_xor(tx, k % 8), 127)])
              for k in range(64)]
    loop = tirx.For(i, 0, 8192, tirx.ForKind.SERIAL,
                    tirx.Evaluate(tirx.BufferLoad(shared, [tirx.FloorMod(i, 64) * 128 + tx])))
    assert not private_to_threads(stores + [loop], [], [(tx, 128)], {}, {})  # the loop reads others' swizzled rows
    mine = tirx.For(i, 0, 8192, tirx.ForKind.SERIAL, tirx.Evaluate(tirx.BufferLoad(
        shared, [tirx.FloorMod(i, 64) * 128 + tirx.bitwise_and(tirx.bitwise_xor(tx, tirx.FloorMod(i, 64) % 8), 127)])))
    assert private_to_threads(stores + [mine], [], [(tx, 128)], {}, {})
    other = tirx.BufferStore(shared, zero, [tirx.FloorMod(tx + 1, 128)])
    assert not private_to_threads(stores + [mine, other], [], [(tx, 128)], {}, {})
