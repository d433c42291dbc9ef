"""Every rule code, in one table (ruff's ``codes.rs``): code -> the rule module and check function that
implement it, and its state. A code is taken here, on its own line, before any module registers it: two
changes that take the same code meet as a merge conflict on that line, not as a renumbering found at import.

``@rule`` (registry.py) refuses a code that is not here or names another module / function, and
``rules.all_rules`` refuses a table entry no module registered, unless it is ``REMOVED`` (a code once
shipped is never reused). ``PREVIEW`` marks a rule still settling its behaviour; it runs as the others do.

A family is one block: its prefix, its name in listings (``overlap rules``, SARIF tags), then its codes;
the blocks are in listing order (registry.code_sort_key). Adding a family is one more block here, the
import of its modules in ``rules.all_rules``, and its modules named after it (``rl``, ``rl_*``).
"""

from __future__ import annotations

STABLE, PREVIEW, REMOVED = "stable", "preview", "removed"
STATES = (STABLE, PREVIEW, REMOVED)

# (family prefix, family name, ((code, module in overlap_cli.rules, check function, state), ...)), in listing order
FAMILY_BLOCKS = (
    ("CFG", "structure", (
        ("CFG001", "cfg", "no_comm_overlap", STABLE),
        ("CFG002", "cfg", "missing_required", STABLE),
        ("CFG003", "cfg", "unknown_key", STABLE),
        ("CFG004", "cfg", "model_overwritten", STABLE),
        ("CFG005", "cfg", "dp_overwritten", STABLE),
        ("CFG006", "cfg_layers", "plain_dict_section", STABLE),
        ("CFG007", "cfg_model", "model_without_heads", STABLE),
        ("CFG009", "cfg_suppressions", "unused_suppression", STABLE),
        ("CFG010", "cfg_validate", "validate_rejects", STABLE),
    )),
    ("TP", "tensor parallel", (
        ("TP101", "tp", "tp_too_small", STABLE),
        ("TP102", "tp", "tp_needs_sp", STABLE),
        ("TP103", "tp", "tp_needs_te", STABLE),
        ("TP104", "tp", "tp_on_model_without_section", STABLE),
        ("TP105", "tp", "sp_dropped", STABLE),
        ("TP106", "tp", "tp_overlap_off_mla_mtp", STABLE),
    )),
    ("PP", "pipeline parallel", (
        ("PP201", "pp", "p2p_choice", STABLE),
        ("PP202", "pp", "overlap_without_vpp", STABLE),
        ("PP203", "pp", "overlap_and_batch", STABLE),
        ("PP204", "pp", "defer_without_limit", STABLE),
        ("PP205", "pp", "defer_prerequisites", STABLE),
        ("PP206", "pp", "warmup_flush", STABLE),
        ("PP207", "pp_layout", "vpp_implied_by_layout", STABLE),
        ("PP208", "pp_layout", "layout_conflict", STABLE),
        ("PP209", "pp_split", "pipeline_split", STABLE),
    )),
    ("DP", "data parallel", (
        ("DP301", "dp", "dp_defaults", STABLE),
        ("DP302", "dp", "ignored_without_distopt", STABLE),
        ("DP303", "dp", "distopt_out_of_sync", STABLE),
        ("DP304", "dp", "bad_bucket_size", STABLE),
        ("DP305", "dp", "num_buckets_conflict", STABLE),
        ("DP306", "dp", "dp_without_overlap", STABLE),
        ("DP307", "dp", "not_divisible", STABLE),
        ("DP308", "dp_param_gather", "ops_with_mxfp8_reuse", STABLE),
        ("DP309", "dp_param_gather", "ops_with_layer_wise", STABLE),
        ("DP310", "dp_param_gather", "ops_unsupported", STABLE),
        ("DP311", "dp_fsdp", "fsdp_forces", STABLE),
        ("DP312", "dp_fsdp", "fsdp_launch_errors", STABLE),
        ("DP313", "dp_grid", "process_grid", STABLE),
        ("DP314", "dp_eval", "eval_batch", STABLE),
        ("DP315", "dp_optimizer", "precision_aware_without_distopt", STABLE),
    )),
    ("MP", "mixed precision", (
        ("MP401", "mp", "ddp_overwritten", STABLE),
        ("MP402", "mp", "unknown_recipe", STABLE),
        ("MP403", "mp", "unknown_key", STABLE),
        ("MP404", "mp", "fp8_with_fp4", STABLE),
        ("MP405", "mp", "fp4_te_version", STABLE),
        ("MP406", "mp", "mxfp8_gather_without_reuse", STABLE),
        ("MP407", "mp", "reuse_without_param_gather", STABLE),
        ("MP408", "mp_model", "delayed_scaling_recompute", STABLE),
        ("MP409", "mp_model", "router_padding_without_quantization", STABLE),
    )),
    ("ENV", "launch environment", (
        ("ENV501", "env", "max_connections_missing", STABLE),
        ("ENV502", "env", "max_connections_mismatch", STABLE),
        ("ENV503", "env", "max_connections_one_fatal", STABLE),
        ("ENV504", "env", "max_connections_one_dp", STABLE),
        ("ENV505", "env", "layernorm_margin", STABLE),
        ("ENV506", "env", "high_priority", STABLE),
        ("ENV507", "env_section", "misplaced", STABLE),
        ("ENV508", "env_section", "not_scalar", STABLE),
        ("ENV509", "env_section", "bad_name", STABLE),
        ("ENV510", "env_section", "shell_overrides", STABLE),
    )),
    ("UB", "userbuffers presets", (
        ("UB601", "ub", "te_defaults", STABLE),
        ("UB602", "ub", "wgrad_beside_dgrad", STABLE),
        ("UB603", "ub", "not_buildable", STABLE),
        ("UB604", "ub", "fp8_buf_default", STABLE),
        ("UB605", "ub", "te_method_constraints", STABLE),
        ("UB606", "ub_config", "preset_mismatch", STABLE),
        ("UB607", "ub_config", "bootstrap_backend", STABLE),
        ("UB608", "ub_config", "cfg_unused", STABLE),
        ("UB609", "ub_config", "unknown_keys", STABLE),
    )),
    ("EP", "expert parallel", (
        ("EP701", "ep", "ep_overlap_prerequisites", STABLE),
        ("EP702", "ep", "ep_overlap_mcore_only", STABLE),
        ("EP703", "ep", "ncclep_dynamic_shape", STABLE),
        ("EP704", "ep_wgrad", "delay_without_ep_overlap", STABLE),
        ("EP705", "ep_wgrad", "ep_overlap_reset_trap", STABLE),
        ("EP706", "ep_wgrad", "delay_wgrad_te_version", STABLE),
        ("EP707", "ep_wgrad", "delay_wgrad_cuda_graph", STABLE),
        ("EP708", "ep_wgrad", "dispatch_backward_conflict", STABLE),
        ("EP709", "ep_wgrad", "early_attn_release", STABLE),
        ("EP710", "ep_wgrad", "ddp_delay_wgrad_not_set", STABLE),
        ("EP711", "ep_dispatcher", "conflicting_sm_knobs", STABLE),
        ("EP712", "ep_dispatcher", "flex_backend_gpu", STABLE),
    )),
    ("CP", "context parallel", (
        ("CP801", "cp", "a2a_p2p_without_sizes", STABLE),
        ("CP802", "cp", "hierarchical_sizes_product", STABLE),
        ("CP803", "cp", "seq_length_divisible", STABLE),
        ("CP804", "cp", "cp_comm_type_shape", STABLE),
    )),
    ("LM", "Megatron-LM launches", (
        ("LM001", "lm", "world_not_divisible", STABLE),
        ("LM002", "lm", "not_fully_known", STABLE),
        ("LM003", "lm_sizes", "batch_size_not_divisible", STABLE),
        ("LM101", "lm", "tp_overlap_without_sp", STABLE),
        ("LM102", "lm", "tp_overlap_at_tp1", STABLE),
        ("LM103", "lm", "sequence_parallel_dropped", STABLE),
        ("LM104", "lm", "tp_overlap_deterministic", STABLE),
        ("LM105", "lm", "tp_overlap_without_te", STABLE),
        ("LM106", "lm_sizes", "tensor_parallel_size_rejected", STABLE),
        ("LM201", "lm", "p2p_off_without_vpp", STABLE),
        ("LM202", "lm", "interleaved_pp_too_small", STABLE),
        ("LM203", "lm", "pipeline_split_rejected", STABLE),
        ("LM204", "lm_sizes", "pipeline_parallel_setting_rejected", STABLE),
        ("LM301", "lm_dp", "opg_needs_distopt", STABLE),
        ("LM302", "lm_dp", "opg_needs_ogr", STABLE),
        ("LM303", "lm_dp", "dp_overlap_off", STABLE),
        ("LM304", "lm_dp", "ops_prerequisites", STABLE),
        ("LM305", "lm_dp", "num_buckets_with_size", STABLE),
        ("LM306", "lm_dp", "fsdp2_with_distopt", STABLE),
        ("LM307", "lm_dp", "settings_turned_off", STABLE),
        ("LM308", "lm_dp", "fp8_param_gather_needs_distopt", STABLE),
        ("LM309", "lm_dp", "delay_wgrad_launch_checks", STABLE),
        ("LM310", "lm_sizes", "sharded_data_parallel_rejected", STABLE),
        ("LM401", "lm_precision", "precision_setting_rejected", STABLE),
        ("LM501", "lm_env", "max_connections_not_one", STABLE),
        ("LM502", "lm_env", "max_connections_one_with_fsdp", STABLE),
        ("LM503", "lm_env", "max_connections_conflict", STABLE),
        ("LM504", "lm_env", "launch_environment_rejected", STABLE),
        ("LM701", "lm_sizes", "expert_parallel_setting_rejected", STABLE),
        ("LM801", "lm_sizes", "context_parallel_setting_rejected", STABLE),
    )),
    ("RL", "NeMo-RL Megatron policies", (
        ("RL001", "rl", "both_policy_backends", STABLE),
        ("RL002", "rl", "world_size_does_not_hold_the_model", STABLE),
        ("RL101", "rl", "inference_optimized_without_sp", STABLE),
        ("RL301", "rl", "fused_logprobs_with_param_gather_overlap", STABLE),
        ("RL302", "rl", "cpu_offload_without_distributed_optimizer", STABLE),
        ("RL303", "rl", "ddp_key_not_passed", STABLE),
        ("RL401", "rl", "precision_aware_optimizer_dtype", STABLE),
        ("RL801", "rl", "context_parallel_needs_packing", STABLE),
    )),
)  # fmt: skip

FAMILIES = tuple(prefix.lower() for prefix, _, _ in FAMILY_BLOCKS)
FAMILY_NAMES = {prefix: name for prefix, name, _ in FAMILY_BLOCKS}


def _codes() -> dict:
    out: dict = {}
    for prefix, _, rows in FAMILY_BLOCKS:
        for code, module, function, state in rows:
            if code in out:
                raise RuntimeError(f"rule code {code} is in rules/codes.py twice")
            if not code.startswith(prefix) or not code[len(prefix):].isdigit():
                raise RuntimeError(f"rule code {code} is in the {prefix} block of rules/codes.py")
            out[code] = (module, function, state)
    return out


CODES = _codes()  # code -> (module, check function, state)
