"""T.copy's instruction hints (TileLang's prefer_instruction and annotations): accepted, kept in
the op's config, and without effect on what the copy computes, on every reference path."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def hinted_copy(**hints):
    @T.prim_func
    def k(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[bx * 32, 0], s, **hints)
            T.copy(s, B[bx * 32, 0], prefer_instruction="sync")

    return k


HINTS = [dict(prefer_instruction="tma"), dict(prefer_instruction="cp_async"),
         dict(annotations={"prefer_instruction": "tma", "test.copy": "sync"}),
         dict(prefer_instruction="tma", annotations={"prefer_instruction": "sync", "disable_tma": True})]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("hints", HINTS, ids=["tma", "cp_async", "annotations", "annotation-wins"])
def test_hints_do_not_change_the_copy(path, hints):
    a = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float32)
    out = run(path, hinted_copy(**hints), A=a, B=np.zeros_like(a))
    np.testing.assert_array_equal(out["B"], a)


def test_hints_are_kept_in_the_config():
    def first_copy(hints):
        return next(line for line in hinted_copy(**hints).script().splitlines() if "copy(" in line)

    assert 'disable_tma=True, prefer_instruction="sync"' in first_copy(HINTS[3])  # the annotation wins
    assert 'prefer_instruction="tma", test.copy="sync"' in first_copy(HINTS[2])


@pytest.mark.parametrize("hints, message", [(dict(prefer_instruction="ldsm"), "prefer_instruction must be one of"),
                                            (dict(annotations=[1]), "annotations must be a dict")])
def test_bad_hints_are_refused(hints, message):
    with pytest.raises(FrontendError, match=message):
        hinted_copy(**hints)
