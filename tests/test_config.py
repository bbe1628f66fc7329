"""config.py is the only reader of TILELANG_* variables, and reads them with clear errors."""

import re
from pathlib import Path

import pytest

from tilelang_core import config
from tilelang_core.errors import ConfigError
from tilelang_core.plugin.host import HostView, visible_indices

ROOT = Path(__file__).resolve().parents[1]
ENV_READ = re.compile(r"(os\.environ|os\.getenv|getenv\()[^\n]*TILELANG_|TILELANG_\w+[\"']\s*\]")


def test_no_module_but_config_reads_tilelang_variables():
    offenders = []
    for path in [*ROOT.glob("tilelang_core/**/*.py"), *ROOT.glob("backends/*/tilelang_*/**/*.py"),
                 *ROOT.glob("plugins/*/tilelang_*/**/*.py")]:
        if path.name == "config.py" and path.parent.name == "tilelang_core":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if ENV_READ.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "read TILELANG_* through tilelang_core.config:\n" + "\n".join(offenders)


def test_every_variable_config_reads_is_documented():
    source = (ROOT / "tilelang_core/config.py").read_text()
    used = set(re.findall(r'"(TILELANG_[A-Z_]+)"', source))
    assert used == set(config.VARIABLES)


def test_values_are_parsed_with_errors_that_name_the_variable():
    assert config.probe_order({"TILELANG_PROBE_ORDER": " hip, cuda "}) == ("hip", "cuda")
    assert config.probe_order({}) == ("cuda", "hip", "ascend", "metal")
    assert config.auto_strict({"TILELANG_AUTO_STRICT": "yes"}) is True
    assert config.cache_disabled({"TILELANG_DISABLE_CACHE": "0"}) is False
    assert config.cache_dir({"TILELANG_CACHE_DIR": "/x/y"}) == Path("/x/y")
    with pytest.raises(ConfigError, match="TILELANG_PROBE_TIMEOUT"):
        config.probe_timeout({"TILELANG_PROBE_TIMEOUT": "-1"})
    with pytest.raises(ConfigError, match="TILELANG_PROBE_ORDER"):
        config.probe_order({"TILELANG_PROBE_ORDER": ","})


@pytest.mark.parametrize("value, count, expected", [
    (None, 4, None), ("", 4, []), ("-1", 4, []), ("0,2", 4, [0, 2]), ("3,9,1", 4, [3]),
    ("GPU-aaaa,GPU-bbbb", 4, [0, 1]),
])
def test_visible_devices_rules(value, count, expected):
    assert visible_indices(value, count) == expected


def test_device_nodes_match_whole_names_in_numeric_order(tmp_path):
    (tmp_path / "dev").mkdir()
    for name in ("nvidia10", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia0"):
        (tmp_path / "dev" / name).write_text("")
    host = HostView.fake(tmp_path)
    assert host.device_nodes(r"nvidia\d+") == ["/dev/nvidia0", "/dev/nvidia2", "/dev/nvidia10"]
