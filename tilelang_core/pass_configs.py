"""The pass-config keys of TileLang's public API.

A kernel ported from TileLang may pass any of these in ``pass_configs``. A backend applies the
ones it implements (fields of its options class, named without the ``tl.`` prefix, e.g.
``disable_tma_lower``); the others mean nothing for that backend (TMA on a CPU) and are accepted
without effect, so the kernel ports unchanged. Any other key is a typo and an error.
"""

from __future__ import annotations

import enum

_TL = (
    "Simplify", "disable_data_race_check", "disable_prelower_semantic_check", "disable_warp_specialized",
    "enable_fast_math", "disable_fast_math", "ptxas_register_usage_level", "enable_ptxas_verbose_output",
    "device_compile_flags", "config_index_bitwidth", "disable_tma_lower", "disable_safe_memory_legalize",
    "disable_vectorize_256", "enable_async_copy", "enable_lower_ldgstg", "enable_lower_ldgstg_predicated",
    "enable_vectorize_planner_verbose", "disable_wgmma", "debug_merge_shared_memory_allocations",
    "enable_aggressive_shared_memory_merge", "disable_shared_memory_reuse", "enable_hoist_copy_addresses",
    "enable_copy_staging_pad", "disable_shuffle_elect", "disable_loop_unswitching",
    "loop_unswitching_allow_non_trivial_else", "disable_thread_storage_sync", "force_let_inline",
    "ast_print_enable", "layout_visualization_enable", "layout_visualization_formats",
    "storage_rewrite_detect_inplace", "disable_out_of_bound_warning", "enable_dump_ir", "dump_ir_path",
    "pass_profile", "pass_profile_threshold_ms", "disable_dynamic_tail_split", "dynamic_alignment",
    "disable_remove_redundant_syncs", "disable_merge_loop", "disable_loop_peeling", "disable_gemm_pad",
    "disable_buffer_init_check", "emit_line_directives", "enable_reducer_plan_verbose", "layout_cost_model",
    "reducer_force_baseline", "if_stmt_binding_inline_replayable_binds",
)
# TileLang spelled TVM's own keys "tir.*" before TVM's TIRX rename and "tirx.*" after.
_TIR = ("enable_equiv_terms_in_cse_tir", "disable_cse_tir", "Simplify", "disable_storage_rewrite",
        "disable_vectorize", "use_async_copy", "enable_debug", "merge_static_smem", "noalias",
        "add_lower_pass")

TILELANG_PASS_CONFIGS: frozenset[str] = frozenset(
    [f"tl.{k}" for k in _TL] + [f"{p}.{k}" for p in ("tir", "tirx") for k in _TIR] + ["cuda.kernels_output_dir"])


def _member_name(key: str) -> str:
    prefix, _, rest = key.partition(".")
    return f"{'TIR' if prefix in ('tir', 'tirx') else prefix.upper()}_{rest.upper()}"


# TileLang's enum members whose names do not follow the key (kept for source compatibility)
_RENAMED = {"TL_DISABLE_SAFE_MEMORY_ACCESS": "tl.disable_safe_memory_legalize",
            "TL_DUMP_IR_DIR": "tl.dump_ir_path", "TIR_ENABLE_EQUIV_TERMS_IN_CSE": "tir.enable_equiv_terms_in_cse_tir",
            "TIR_DISABLE_CSE": "tirx.disable_cse_tir"}
# TileLang's members naming options *inside* its Simplify config (not pass-config keys themselves)
_SIMPLIFY_OPTIONS = {f"TL_SIMPLIFY_{name.upper()}": name for name in (
    "transitively_prove_inequalities", "convert_boolean_to_and_of_ors", "apply_constraints_to_boolean_branches",
    "propagate_knowns_to_prove_conditional", "propagate_knowns_to_simplify_expressions")}
_SIMPLIFY_OPTIONS["TL_SIMPLIFY_ENABLE_LET_INLINE"] = "enable_simplify_let_inline"

#: ``tilelang.PassConfigKey`` under the same member names, e.g. ``PassConfigKey.TL_DISABLE_TMA_LOWER``
PassConfigKey = enum.Enum("PassConfigKey", {
    **{_member_name(k): k for k in sorted(TILELANG_PASS_CONFIGS) if not k.startswith("tir.")},
    **_RENAMED, **_SIMPLIFY_OPTIONS}, type=str, module=__name__)


#: the key that carries device compiler flags (TileLang's ``compile_flags``) to a backend
DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"


def compile_flag_list(flags) -> list[str] | None:
    """TileLang's ``compile_flags`` (a list of strings, or one string of them) as a list; None
    when an element is not a string (the caller says which option was wrong)."""
    listed = flags.split() if isinstance(flags, str) else list(flags)
    return listed if all(isinstance(f, str) for f in listed) else None
