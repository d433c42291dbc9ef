"""What differs between the Megatron-Bridge releases, read from each release's data by the resolver and the
rules (never a version test in code): the same config resolved under each release gives that release's
answer. The releases' own code is the differential's (test_release_differential.py); this holds the
behaviour without any environment."""

from __future__ import annotations

import pytest

from overlap_cli.frameworks.bridge.releases import BRIDGE

VERSIONS = BRIDGE.versions()


def _target(version: str, world: int = 8):
    from overlap_cli.launch_profile.profile import build_target

    target = build_target({"world_size": world})
    target.set("bridge_version", version, "flag")  # ``main`` too, which the settings' spelling check may refuse
    target.set("torch_version", "2.7", "flag")  # EP overlap's torch requirement met
    return target


def _resolve(text: str, version: str, world: int = 8):
    """(view, notes) of a Bridge YAML under ``version``, as forms.bridge_run resolves one."""
    from overlap_cli.config.loader import load_config
    from overlap_cli.frameworks.bridge import releases
    from overlap_cli.frameworks.bridge.dotlist_shape import shape_of
    from overlap_cli.frameworks.bridge.release_fields import drop_absent
    from overlap_cli.frameworks.bridge.resolver import resolve

    target = _target(version, world)
    release = releases.of(target)
    cfg = load_config("run.yaml", text=text, shape=shape_of(release))
    cfg, notes = drop_absent(cfg, release)
    return resolve(cfg, target), notes


def _codes(view) -> list:
    from overlap_cli.rules import run_rules

    return [f.code for f in run_rules(view)]


_ENERGON = """
model: {expert_model_parallel_size: 4, num_moe_experts: 8, moe_token_dispatcher_type: alltoall, bf16: true}
mixed_precision: bf16_mixed
dataset: {_target_: megatron.bridge.data.builders.energon.EnergonDatasetConfig, packing_buffer_size: 64}
comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_energon_packing_clears_ep_overlap_only_where_the_release_does(version):
    view, _ = _resolve(_ENERGON, version)
    clears = BRIDGE.get(version).ENERGON_PACKING_CLEARS_EP_OVERLAP is not None
    ep = view.effective["model.overlap_moe_expert_parallel_comm"]
    assert ep.value is (not clears)
    assert (ep.source == "forced-off") is clears
    assert view.effective["model.delay_wgrad_compute"].value is (not clears)
    assert (view.requested("overlap_moe_expert_parallel_comm") is True) is (not clears)
    assert "EP701" not in _codes(view)  # a valid EP-overlap request either way


@pytest.mark.parametrize("version", VERSIONS)
def test_a_key_the_release_lacks_is_dropped_with_a_note(version):
    release = BRIDGE.get(version)
    view, notes = _resolve("ddp: {num_buckets: 4, use_distributed_optimizer: true}\nenv_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 1}\n",
                           version)
    dropped = {n.split(" ")[0] for n in notes}
    assert ("env_vars" in dropped) is (not release.HAS_ENV_VARS)
    assert ("ddp.num_buckets" in dropped) is (("ddp", "num_buckets") in release.ABSENT_FIELDS)
    assert all(release.BRIDGE_VERSION in n for n in notes)
    assert (view.cfg.get(("ddp", "num_buckets")) == 4) is ("ddp.num_buckets" not in dropped)
    assert ("env_vars" in view.cfg.data) is release.HAS_ENV_VARS


@pytest.mark.parametrize("version", VERSIONS)
def test_a_dotlist_on_a_field_the_release_lacks_is_refused(version):
    from overlap_cli.config.loader import load_config
    from overlap_cli.config.overrides import parse_override
    from overlap_cli.frameworks.bridge.dotlist_shape import shape_of
    from overlap_cli.problems import InputError

    release = BRIDGE.get(version)
    text = "ddp: {num_buckets: null}\n"  # a dump of a release that has the field
    words = [parse_override("ddp.num_buckets=4")]
    if ("ddp", "num_buckets") in release.ABSENT_FIELDS:
        with pytest.raises(InputError) as err:
            load_config("run.yaml", overrides=words, text=text, shape=shape_of(release))
        assert "ddp.num_buckets" in err.value.problem.message
    else:
        assert load_config("run.yaml", overrides=words, text=text, shape=shape_of(release)).get(("ddp", "num_buckets")) == 4
    added = load_config("run.yaml", overrides=[parse_override("++ddp.num_buckets=4")], text=text, shape=shape_of(release))
    assert added.get(("ddp", "num_buckets")) == 4  # ``++`` adds it; the release then drops it (release_fields)


@pytest.mark.parametrize("version", VERSIONS)
def test_validate_syncs_and_fsdp_forcing_follow_the_release(version):
    release = BRIDGE.get(version)
    view, _ = _resolve("ddp: {use_distributed_optimizer: true, overlap_param_gather: true}\n"
                       "optimizer: {use_distributed_optimizer: true, overlap_param_gather: false}\n", version)
    assert view.final["optimizer"]["overlap_param_gather"] is release.SYNCS_OVERLAP_PARAM_GATHER
    view, _ = _resolve("ddp: {use_megatron_fsdp: true, use_distributed_optimizer: false}\n", version)
    assert view.effective["ddp.use_distributed_optimizer"].value is release.FSDP_FORCES_DISTRIBUTED_OPTIMIZER


@pytest.mark.parametrize("version", VERSIONS)
def test_ep_overlap_checks_are_the_release_tables(version):
    from overlap_cli.rules.ep import ep_tables

    release = BRIDGE.get(version)
    precheck, core = ep_tables(release)
    order = ("ep", "experts-null", "experts", "dispatcher", "half", "torch", "vpp", "full", "method", "num-layers",
             "moe-module", "shared", "mtp")
    assert [r.id for r in precheck if r.id in release.EP_PRECHECK_LINES] == [k for k in order if k in release.EP_PRECHECK_LINES]
    assert all(r.at.endswith(f":{release.EP_PRECHECK_LINES[r.id]}") for r in precheck if r.id in release.EP_PRECHECK_LINES)
    # a check the pre-check lacks follows it at the core's line
    assert all(r.at.startswith("megatron/core/") for r in precheck if r.id not in release.EP_PRECHECK_LINES)
    assert ("mtp-pp" in [r.id for r in core]) is (release.EP_CORE_MTP_NEEDS_PP_LINE is not None)
    view, _ = _resolve("model: {expert_model_parallel_size: 4, num_moe_experts: 8, moe_token_dispatcher_type: alltoall, "
                       "mtp_num_layers: 0, pipeline_model_parallel_size: 2, virtual_pipeline_model_parallel_size: 2, "
                       "num_layers: 8}\nmixed_precision: bf16_mixed\n"
                       "comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true}\n", version, 16)
    from overlap_cli.rules.ep import ep_overlap_prerequisites

    refused = [f.message for f in ep_overlap_prerequisites(view) if f.severity == "error"]
    assert bool(refused) is (0 not in release.EP_MTP_LAYERS)
    assert all(release.EP_MTP_MESSAGE in m for m in refused)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_unknown_env_vars_is_no_input_of_a_release_without_it(version):
    from overlap_cli.config.loader import load_config
    from overlap_cli.frameworks.bridge.release_fields import drop_absent

    release = BRIDGE.get(version)
    cfg = load_config("run.yaml", text="model: {tensor_model_parallel_size: 2}\n")
    cfg.unknown = {("env_vars",): "a recipe's env_vars read from source", ("model", "num_layers"): "from a HF config"}
    dropped, _ = drop_absent(cfg, release)
    assert (("env_vars",) in dropped.unknown) is release.HAS_ENV_VARS
    assert ("model", "num_layers") in dropped.unknown and ("env_vars",) in cfg.unknown  # the run's own config is left as read
