"""TILELANG_DUMP_IR=dir: every stage, the IR after every pass (the cpu backend's own passes too),
and pass timing."""

import pytest

import tools_kernels as K


def test_dump_ir_writes_stages_every_pass_and_timing(tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("TILELANG_DUMP_IR", str(dump))
    K.scale(256, block=32)
    (folder,) = list(dump.iterdir())
    assert folder.name.startswith("main-")
    stages = sorted(p.name for p in folder.glob("*.txt") if p.name != "pass-timing.txt")
    assert stages == ["0-tirx.txt", "1-lowered.txt", "2-source.txt"]
    passes = sorted(p.name for p in (folder / "passes").iterdir())
    names = [n.split("_", 1)[1].rsplit(".py", 1)[0] for n in passes]
    # our passes, in pipeline order, before TVM's own
    ours = [n for n in names if n.startswith("cpu.")]
    assert ours == ["cpu.ThreadsToLoops", "cpu.LowerAtomicCalls", "cpu.LowerTileOps", "cpu.BlocksToLoops",
                    "cpu.GuardParallelGlobals", "cpu.ExactFp8Casts", "cpu.LegalizeForCpu",
                    "cpu.Bf16BindsToRegisters", "cpu.RefuseSubbyteFloatScalars", "cpu.VerifyNoTileOps"]
    assert "tirx.MakePackedAPI" in names
    lowered_tiles = (folder / "passes" / passes[names.index("cpu.LowerTileOps")]).read_text()
    assert "tl.tile" not in lowered_tiles and "for" in lowered_tiles
    timing = (folder / "pass-timing.txt").read_text()
    assert "cpu.LowerTileOps:" in timing and "us" in timing


def test_a_pass_error_keeps_its_type_while_dumping(tmp_path):
    import tvm
    from tvm.ir.instrument import PassTimingInstrument

    from tilelang_core.errors import LoweringError
    from tilelang_core.transform.instrumented import run_pass

    def broken(func):
        raise LoweringError("no rule for tl.tile.frobnicate on cpu")

    func = K.add_one
    with tvm.transform.PassContext(instruments=[PassTimingInstrument()]):
        with pytest.raises(LoweringError, match="frobnicate"):
            run_pass("cpu.Broken", broken, func)
    assert run_pass("cpu.Identity", lambda f: f, func).same_as(func)  # no instruments: a plain call
