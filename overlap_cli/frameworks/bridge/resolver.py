"""Resolve a config into the settings Megatron-Bridge hands to Megatron-Core — a pure function.

Mirrors ``runtime_config_update`` (megatron/bridge/training/config.py:1853 in megatron-bridge 0.6.2):

1. ``apply_environment_variables``: ``env_vars`` installed with ``os.environ.setdefault``;
2. mixed precision: a recipe name becomes its ``MixedPrecisionConfig``; ``finalize()``; ``setup()``
   overwrites every same-named field of model / optimizer / ddp;
3. ``set_data_parallel_size``: ``world_size // (TP * PP * CP)``, asserted divisible;
4. ``comm_overlap.finalize()`` + ``comm_overlap.setup(model, optimizer, ddp)`` (comm_overlap.py:376-643);
5. ``validate()``: among much else, distributed-optimizer and overlap_param_gather flags are synced
   between ddp and optimizer (config.py:1945-1981).

Every effective value carries a provenance and a reason. Rules read this view; they never re-derive it.
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge import facts as bridge
from overlap_cli.frameworks.bridge import pipeline_layout
from overlap_cli.frameworks.bridge.comm_overlap_setup import setup_comm_overlap
from overlap_cli.config.document import Config
from overlap_cli.results import BRIDGE_AUTO, DEFAULT, FORCED_OFF, MIXED_PRECISION, UNKNOWN, USER, Value
from overlap_cli.frameworks.bridge.schema import validate_types
from overlap_cli.frameworks.bridge.view import Overwrite, Resolved, user_wrote
from overlap_cli.launch_profile.profile import Target

def resolve(cfg: Config, target: Target) -> Resolved:
    from overlap_cli.frameworks.bridge import releases

    release = releases.of(target)
    effective_keys = release.EFFECTIVE_KEYS  # the keys every result's ``effective`` holds
    validate_types(cfg)
    r = Resolved(cfg=cfg, target=target)

    # Start from what the file says, falling back to the dataclass defaults.
    final: dict = {}
    for section, defaults in release.SECTION_DEFAULTS.items():
        sec = cfg.section(section) or {}
        merged = dict(defaults)
        merged.update(sec)
        if "_target_" in sec:  # the class, not a field: the default's (if any) stays
            if "_target_" in defaults:
                merged["_target_"] = defaults["_target_"]
            else:
                del merged["_target_"]
        final[section] = merged
    r.final = final
    prov: dict = {}  # dotted key -> Value

    def from_file(section: str, key: str) -> Value:
        if cfg.has((section, key)):
            if cfg.layered:  # Config.where of a merged run is its label, in words
                layer = cfg.label((section, key))
                where = "the command line" if layer == "command line" else layer
            else:
                where, layer = cfg.where((section, key)), None
            if (section, key) in cfg.interpolated_paths:
                where += f" through the interpolation {cfg.raw_interpolations.get((section, key), '${...}')}"
            return Value(final[section][key], USER, f"set {'on' if where == 'the command line' else 'in'} {where}", layer)
        default = release.SECTION_DEFAULTS[section].get(key)
        return Value(default, DEFAULT, "not in the file: Megatron-Core/Bridge class default")

    for key in effective_keys:
        section, name = key.split(".", 1)
        prov[key] = from_file(section, name)

    model, ddp, opt = final["model"], final["ddp"], final["optimizer"]
    _gradient_accumulation_fusion(r, cfg, target, model)
    r.tp = model["tensor_model_parallel_size"]
    r.pp = model["pipeline_model_parallel_size"]
    r.vpp = model["virtual_pipeline_model_parallel_size"]
    r.cp = model["context_parallel_size"]

    # -- 2. mixed precision ---------------------------------------------------------------------
    mp_raw = cfg.data.get("mixed_precision")
    if isinstance(mp_raw, str):
        recipe = bridge.lookup_mp_recipe(mp_raw, release)
        r.mp_name = mp_raw
        if recipe is None:
            r.mp_unknown_name = mp_raw  # Bridge raises ValueError; nothing is applied
        else:
            r.mp = bridge.finalize_mp(recipe)
    elif isinstance(mp_raw, dict):
        mp = dict(release.MP_DEFAULTS)
        mp.update({k: v for k, v in mp_raw.items() if k in release.MP_DEFAULTS})
        # __setattr__ keeps fp8_param == fp8_param_gather (and fp4) once both exist: the later field wins.
        if "fp8_param_gather" in mp_raw or mp.get("fp8_param") is None:
            mp["fp8_param"] = mp["fp8_param_gather"]
        if "fp4_param_gather" in mp_raw or mp.get("fp4_param") is None:
            mp["fp4_param"] = mp["fp4_param_gather"]
        r.mp_name = "the mixed_precision mapping"
        r.mp = bridge.finalize_mp(mp)
    if r.mp is not None:
        for section, keys in bridge.MP_LANDS_ON.items():
            for key in keys:
                new = r.mp.get(key)
                old = final[section].get(key)
                if key in final[section] and old == new:
                    continue
                if cfg.has((section, key)) and user_wrote(cfg, section, key) and old != new:
                    r.mp_overwrites.append(Overwrite(section, key, old, new, "mixed_precision"))
                final[section][key] = new
        for key in ("ddp.grad_reduce_in_fp32", "ddp.fp8_param_gather"):
            section, name = key.split(".")
            prov[key] = Value(
                final[section][name],
                MIXED_PRECISION,
                f"written by mixed precision ({r.mp_name}) before comm_overlap runs",
            )

    # -- 3. data-parallel size ------------------------------------------------------------------
    ws = target.world_size
    if ws is not None:
        model_size = r.tp * r.pp * r.cp
        if ws % model_size:
            r.dp_error = (
                f"world size {ws} is not divisible by TP*PP*CP = {r.tp}*{r.pp}*{r.cp} = {model_size}"
            )
        else:
            r.dp = ws // model_size

    # -- 4. comm_overlap finalize + setup --------------------------------------------------------
    # Bridge's EP-overlap and delayed-wgrad pre-checks read these values, before setup overwrites them.
    r.model_at_setup, r.ddp_at_setup = dict(model), dict(ddp)
    co = cfg.data.get("comm_overlap")
    r.comm_overlap_present = isinstance(co, dict)
    co = _energon_packing_clears(r, release, co, model)
    if r.comm_overlap_present:
        setup_comm_overlap(r, co, prov)
    for key in r.energon_cleared:
        prov[f"model.{key}"] = Value(False, FORCED_OFF, "Bridge clears it for Energon sequence packing before "
                                     f"comm_overlap runs ({release.ENERGON_PACKING_CLEARS_EP_OVERLAP['at']})")

    # -- 5. validate(): Megatron-FSDP forcing (config.py:1345 -> 1065-1116), then the distributed-
    # optimizer and overlap_param_gather sync. FSDP runs after comm_overlap, so its distopt comes too late
    # for Bridge's DP defaults.
    r.megatron_fsdp = cfg.get(("dist", "use_megatron_fsdp")) is True or ddp.get("use_megatron_fsdp") is True
    if r.megatron_fsdp and release.FSDP_FORCES_DISTRIBUTED_OPTIMIZER:
        for section in ("ddp", "optimizer"):
            if final[section]["use_distributed_optimizer"] is not True:
                final[section]["use_distributed_optimizer"] = True
                if f"{section}.use_distributed_optimizer" in prov:
                    prov[f"{section}.use_distributed_optimizer"] = Value(
                        True,
                        BRIDGE_AUTO,
                        "Megatron-FSDP forces the distributed optimizer on in validate(), after comm_overlap ran",
                    )
    if ddp["use_distributed_optimizer"] or opt["use_distributed_optimizer"]:
        if ddp["use_distributed_optimizer"] != opt["use_distributed_optimizer"]:
            ddp_was_off = not ddp["use_distributed_optimizer"]
            ddp["use_distributed_optimizer"] = opt["use_distributed_optimizer"] = True
            if ddp_was_off:
                # Only the ddp flag is reported; when it was already on, the ddp value stands as written
                # and validate() merely turns the optimizer's flag on to match (config.py:1955-1967).
                prov["ddp.use_distributed_optimizer"] = Value(
                    True,
                    BRIDGE_AUTO,
                    "validate() turns the distributed optimizer on in ddp because optimizer.use_distributed_optimizer "
                    "is true — after comm_overlap ran, so Bridge's DP defaults were skipped",
                )
    if release.SYNCS_OVERLAP_PARAM_GATHER and (ddp["overlap_param_gather"] is True or opt["overlap_param_gather"] is True):
        for section, other in (("ddp", "optimizer"), ("optimizer", "ddp")):
            if final[section]["overlap_param_gather"] is not True:
                final[section]["overlap_param_gather"] = True
                prov[f"{section}.overlap_param_gather"] = Value(
                    True, BRIDGE_AUTO, f"validate() syncs it with {other}.overlap_param_gather=true"
                )

    # Bridge's TransformerConfig.finalize drops sequence_parallel silently when TP <= 1
    # (megatron/bridge/models/transformer_config.py), before Megatron-Core would reject it.
    if model["sequence_parallel"] and r.tp <= 1:
        model["sequence_parallel"] = False
        prov["model.sequence_parallel"] = Value(
            False, FORCED_OFF, "Bridge's model finalize turns sequence_parallel off when TP <= 1"
        )

    # Megatron-Core derives VPP from pipeline_model_parallel_layout at model finalize (transformer_config.py
    # :1936-1985), after comm_overlap chose its p2p / align_param_gather defaults from the null value.
    r.layout = pipeline_layout.read_layout(model.get("pipeline_model_parallel_layout"))
    r.layout_vpp = pipeline_layout.derived_vpp(r.layout, r.pp)
    r.vpp_final = r.vpp
    if r.vpp is None and r.layout_vpp is not None and r.layout_vpp > 1:
        r.vpp_final = model["virtual_pipeline_model_parallel_size"] = r.layout_vpp
        prov["model.virtual_pipeline_model_parallel_size"] = Value(
            r.layout_vpp,
            BRIDGE_AUTO,
            f"derived by Megatron-Core from pipeline_model_parallel_layout ({r.layout.stages} stages / PP {r.pp}) "
            "at model finalize, after comm_overlap ran",
        )

    for key in effective_keys:
        section, name = key.split(".", 1)
        v = prov[key]
        if v.source not in (UNKNOWN,):
            v.value = final[section].get(name, v.value)
    _describe_ub_cfg(r, prov)
    r.effective = prov
    return r


def _energon_packing_clears(r: Resolved, release, co, model: dict):
    """The comm_overlap mapping setup reads. A release whose runtime_config_update clears EP overlap and
    delayed wgrad for an Energon dataset that packs sequences (release.ENERGON_PACKING_CLEARS_EP_OVERLAP:
    main's config.py:1218-1253, before comm_overlap's setup at 2024) sets them false on the model and on
    comm_overlap; otherwise ``co`` as it is."""
    clears = release.ENERGON_PACKING_CLEARS_EP_OVERLAP
    dataset = r.cfg.section("dataset") or {}
    if not clears or dataset.get("_target_") != clears["dataset"] or dataset.get("packing_buffer_size") is None:
        return co
    asked = [k for k in clears["fields"] if model.get(k) is True or (isinstance(co, dict) and co.get(k) is True)]
    if not asked:
        return co
    r.energon_cleared = tuple(clears["fields"])
    for key in clears["fields"]:
        model[key] = False
    return {**co, **{k: False for k in clears["fields"] if k in co}} if isinstance(co, dict) else co


def _gradient_accumulation_fusion(r: Resolved, cfg: Config, target: Target, model: dict) -> None:
    """``model.gradient_accumulation_fusion`` as the launch has it.

    GPTModelProvider's default is computed on the machine that builds the config: true when Transformer
    Engine (or apex's fused kernel) imports (megatron/bridge/models/gpt_provider.py:205,
    utils/fusions.py:34-63). Built on the target -- the key in no file, or a ``--recipe`` run whose catalog
    recipe holds false (no recipe function of the catalog assigns the field; the catalog's false is the
    dumping machine's answer) -- the target's Transformer Engine decides. Written in a file (a dump checked
    as the config, a ``--base``, an override file, a dotlist), Bridge passes the value as it stands:
    ``ConfigContainer.from_yaml`` instantiates the provider with it and the ``--config-file`` merge writes it
    over the recipe's. A dump's false where the class computes the default is then most likely the mark
    of a dump made without Transformer Engine (``gaf_dumped``).
    """
    from overlap_cli.config.layers import RECIPE

    path = ("model", "gradient_accumulation_fusion")
    section = cfg.section("model") or {}
    machine = bridge.gaf_default_is_machine_dependent(section.get("_target_"))
    value = cfg.get(path)
    # The layer that wrote this very key: a mapping merged into the recipe's model (an override file's
    # ``model:``) wrote only the keys it holds, and a value no layer wrote (a key the recipe leaves unknown,
    # filled by frameworks/bridge/unknowns.py) is the recipe's to build, as with dotlist words.
    exact = cfg.layers.get(path) if cfg.layered else None
    layer = cfg.layer_list[exact] if exact is not None else None
    built_on_target = not cfg.has(path) or (
        value is False and cfg.layered and (layer is None or layer.kind == RECIPE))
    if built_on_target:
        if machine:
            model["gradient_accumulation_fusion"] = bool(target.transformer_engine)
            r.gaf_from_provider = True
        return
    r.gaf_dumped = value is False and machine and "_target_" in section


def _describe_ub_cfg(r: Resolved, prov: dict) -> None:
    """Recognise the userbuffers config against the shipped presets (for the UB6xx rules).

    The effective ``model.tp_comm_overlap_cfg`` becomes ``{"preset": NAME | "custom" | null, "matches":
    [...], "te_config": {...}}`` -- ``te_config`` is what Transformer Engine receives, None unless TP
    overlap is effective -- or stays null when nothing is given (Transformer Engine defaults).
    """
    from overlap_cli.frameworks.bridge.preset_fit import describe_cfg, training_shape

    if r.comm_overlap_present:
        key = "comm_overlap.tp_comm_overlap_cfg"
        given = r.cfg.data["comm_overlap"].get("tp_comm_overlap_cfg")
    else:
        key = "model.tp_comm_overlap_cfg"
        given = r.cfg.get(("model", "tp_comm_overlap_cfg"))
    r.ub = describe_cfg(given, key, training_shape(r), tp_effective=bool(r.final["model"].get("tp_comm_overlap")))
    if r.ub.kind != "null":
        prov["model.tp_comm_overlap_cfg"].value = r.ub.effective_value()
