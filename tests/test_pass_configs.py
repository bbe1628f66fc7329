"""pass_configs: TileLang's keys port unchanged; a backend's own keys set its options; typos fail."""

from dataclasses import dataclass
from typing import ClassVar, Mapping

import pytest

from tilelang_core.backend import BackendOptions
from tilelang_core.errors import ConfigError


@dataclass(frozen=True)
class AcmeOptions(BackendOptions):
    RETIRED: ClassVar[Mapping[str, str]] = {"enable_fold": "folding is the default; tl.disable_fold turns it off"}

    disable_tma_lower: bool = False
    num_threads: int = 0


def test_keys_the_backend_implements_set_its_options():
    options = AcmeOptions.from_pass_configs({"tl.disable_tma_lower": True, "num_threads": 4})
    assert options == AcmeOptions(disable_tma_lower=True, num_threads=4)


def test_tilelang_keys_the_backend_does_not_use_are_accepted_without_effect():
    configs = {"tl.disable_warp_specialized": True, "tir.disable_vectorize": True, "tirx.noalias": False,
               "tl.enable_fast_math": True}
    assert AcmeOptions.from_pass_configs(configs) == AcmeOptions()


def test_a_misspelled_key_is_an_error_naming_the_closest_and_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown pass config 'tl.disable_tma_lowr' for AcmeOptions "
                                          r"\(did you mean 'tl.disable_tma_lower'\?\).*num_threads"):
        AcmeOptions.from_pass_configs({"tl.disable_tma_lowr": True})


def test_a_retired_key_says_what_replaced_it():
    with pytest.raises(ConfigError, match="'tl.enable_fold' is gone from AcmeOptions: folding is the default"):
        AcmeOptions.from_pass_configs({"tl.enable_fold": True})


def test_options_hash_is_stable_and_sensitive():
    assert AcmeOptions().stable_hash() == AcmeOptions().stable_hash()
    assert AcmeOptions(num_threads=1).stable_hash() != AcmeOptions().stable_hash()


def test_a_flag_given_anything_but_a_bool_is_an_error_naming_it():
    """check_flags: every field declared bool, whichever backend declares it (each backend's
    __post_init__ calls it). A "1" from a config file would otherwise turn the feature on."""
    @dataclass(frozen=True)
    class Checked(AcmeOptions):
        def __post_init__(self):
            self.check_flags("acme")

    assert Checked.from_pass_configs({"tl.disable_tma_lower": True}).disable_tma_lower is True
    for value in ("1", 1, None):
        with pytest.raises(ConfigError, match=f"acme option disable_tma_lower={value!r} must be True or False"):
            Checked.from_pass_configs({"tl.disable_tma_lower": value})


@pytest.mark.parametrize("module,cls", [
    ("tilelang_cuda.options", "CudaOptions"), ("tilelang_hip.options", "HipOptions"),
    ("tilelang_metal.options", "MetalOptions"), ("tilelang_cpu.options", "CpuOptions"),
    ("tilelang_ascend.options", "AscendOptions")])
def test_every_backends_flags_refuse_non_bools(module, cls):
    import dataclasses

    options = getattr(pytest.importorskip(module), cls)
    flags = [f.name for f in dataclasses.fields(options) if f.type in (bool, "bool")]
    assert flags
    for name in flags:
        with pytest.raises(ConfigError, match=f"option {name}='yes' must be True or False"):
            options(**{name: "yes"})


def test_keys_of_the_newest_tilelang_are_accepted():
    from tilelang_core import PassConfigKey

    from tilelang_core.pass_configs import TILELANG_PASS_CONFIGS

    for key in ("tl.reducer_force_baseline", "tl.layout_cost_model", "tl.emit_line_directives",
                "tl.disable_buffer_init_check", "tirx.disable_cse_tir"):
        assert key in TILELANG_PASS_CONFIGS
    assert PassConfigKey.TL_REDUCER_FORCE_BASELINE == "tl.reducer_force_baseline"
    assert PassConfigKey.TIR_DISABLE_CSE == "tirx.disable_cse_tir"
    # the Simplify option names are members, not pass-config keys
    assert PassConfigKey.TL_SIMPLIFY_ENABLE_LET_INLINE == "enable_simplify_let_inline"
    assert "enable_simplify_let_inline" not in TILELANG_PASS_CONFIGS
