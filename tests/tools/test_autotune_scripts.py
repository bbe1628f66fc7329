"""Autotuning from a plain script (issue 24): TileLang's scripts tune at module level. A spawned
compile worker runs such a script again and dies in its bootstrap (every config failed after
minutes: "the compile worker process died twice"); those calls now compile in the calling process,
with a note that says how to get parallel compiles."""

import os
import subprocess
import sys
from pathlib import Path

from tilelang_core.autotune.local import _inside_main_guard

HERE = Path(__file__).parent


def test_a_script_tuning_at_top_level_tunes_in_this_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")}
    env.update(TILELANG_AUTOTUNE_WORKERS="2", TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(HERE / "tune_at_top_level.py")], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TUNED {'block_M'" in done.stdout
    assert "compiling in this process (the tuning runs at the top level of the script" in done.stderr
    assert "died" not in done.stderr


def test_the_main_guard_is_recognised_in_either_spelling(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("x = 1\n"                      # 1
                      "if __name__ == '__main__':\n"  # 2
                      "    tune()\n"                  # 3
                      "if '__main__' == __name__:\n"  # 4
                      "    tune()\n"                  # 5
                      "tune()\n")                     # 6
    assert [_inside_main_guard(str(script), line) for line in (1, 3, 5, 6)] == [False, True, True, False]
