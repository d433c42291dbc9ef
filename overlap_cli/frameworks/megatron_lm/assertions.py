"""What a Megatron-LM launch asserts, as data: one ``Check`` (a ``frameworks.raises.Raise`` of stage ``launch``)
per assertion or raise of megatron-core 0.19.2 that depends on a parallel size (TP, PP, VPP, CP, EP, ETP, DP,
the world size), an overlap flag, a precision flag or the launch environment (the target's GPU, Transformer
Engine / torch versions, the launch's variables).

Each check is a pure function of the values it declares in ``reads`` (argparse dests as validate_args
leaves them at that point, or the derived names below); it is evaluated only when every one of them is
known, so an unknown input makes its outcome unknown (no finding). It returns ``None`` when the launch
passes, else the fields of its ``message`` — the exact text the launch prints (``str.format`` fields).
``at`` is the upstream ``file:line`` of the assert / raise (the newest release's; a check only older releases
have is at its place in the newest release's order, and each release module gives the line it prints, cites.py);
a check of ``validate_args`` also has the
arguments.py ``line`` it runs at, so the resolver evaluates it between the same forcings as upstream
(``Runner.until``). ``code`` names the LM rule that reports it.

Derived names (the resolver fills them; ``UNKNOWN`` when not known): ``world_size``,
``data_parallel_size`` (arguments.py:446, the replicate degree), ``virtual_pipeline_model_parallel_size``,
``gtp_weight_remat_size`` / ``expert_gtp_weight_remat_size`` (arguments.py:416, 1468),
``use_dist_ckpt`` (update_use_dist_ckpt, training/utils/common_utils.py:556), ``cpu_offloading``
(arguments.py:1869), ``inference``, ``builds_optimizer`` (training.py:2031-2035: the DDP and optimizer
configs exist), ``te_version`` (``0.0.0`` without Transformer Engine, as megatron/core/utils.py:322),
``torch_version``, ``device_arch`` (the GPU's major compute capability, get_device_arch_version) and
``env:NAME`` (a launch variable: its value, None when the launch leaves it unset).

Deliberately left out (each needs something a launch script does not say, or cannot fail here):
- the data, checkpoint, RL, tokenizer and logging asserts of validate_args (``--data-path`` /
  ``--split``, ``--save-interval``, ``--load``, ``--perform-rl-step``, ``--fim-*``, ``--logits-save-*``,
  ``--replication``, ``--ckpt-convert-*``, ``--non-persistent-ckpt-type``): they read no parallel size,
  overlap or precision flag;
- model-shape asserts that read no parallel size (``hidden % heads`` without TP, MLA / GQA exclusivity,
  RoPE / position-embedding types, activation fusions, MoE router settings, MuP, MTP types);
- the CUDA-graph scope asserts (arguments.py:628-640, transformer_config.py:2330-2600): they need
  ``_normalize_cuda_graph_modules_args``'s enum normalisation of ``--cuda-graph-modules``, and the
  delayed-wgrad CUDA-graph asserts (arguments.py:1830-1845) read the same normalised scopes;
- ``Hybrid context parallelism not supported with CUDA Graph`` (arguments.py:1406): ``--enable-cuda-graph``
  is deleted from ``args`` at arguments.py:607, so the assert raises AttributeError or cannot fail;
- ``ModelParallelConfig``'s ``Cannot use sequence parallelism without tensor parallelism`` and
  ``pipeline_dtype must be specified`` (model_parallel_config.py:504, 529), TransformerConfig's
  ``fp16`` + ``bf16``, ``fp4`` + ``fp8``, ``fp4_param`` and EP-without-experts raises: validate_args has
  already turned sequence parallelism off at TP = 1, set ``pipeline_dtype = params_dtype``
  (argument_utils.py:304) and asserted the same conditions first;
- ``Number of layers should be divisible`` for ``account_for_*`` without VPP (transformer_config.py:2076):
  validate_args asserts it first (arguments.py:963);
- the FlashInfer / vLLM / inference-optimized MoE backend checks, ``--qk-clip`` and
  ``--log-max-attention-logit`` TE versions, MoE FP8 on TE < 1.7 / 1.11 (no supported install has
  them), the rotary-fusion TE 2.3 check: versions of libraries the target profile does not describe, or
  settings unrelated to parallelism and precision;
- asserts that can never be the first to fail, because an earlier one asserts whenever they would:
  ``--ckpt-format torch_dcp is not tested with megatron pipeline parallelism`` (arguments.py:1616: torch_dcp
  needs Torch-FSDP2, which asserts PP = 1 at :1000), ``Emerging optimizer does not support Megatron-FSDP``
  and ``... supports torch and torch_dist checkpoint format`` (arguments.py:1685-1686: Megatron-FSDP asserts
  adam / sgd at :1127, torch_dcp needs Torch-FSDP2 which :1684 rejects, fsdp_dtensor needs Megatron-FSDP),
  ``linear_num_value_heads must be a multiple of (TP * CP)`` (transformer_config.py:1379: the value heads
  are a multiple of the key heads, asserted at :1368, and the key heads of TP * CP at :1375);
- initialize_model_parallel (core/parallel_state.py) is the process grid: rule DP313 checks it for both
  frameworks (frameworks/process_grid.py).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

from overlap_cli.config.argv import UNKNOWN
from overlap_cli.frameworks.raises import LAUNCH, Raise
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

ARGS = "megatron/training/arguments.py"
TC = "megatron/core/transformer/transformer_config.py"
MPC = "megatron/core/model_parallel_config.py"
DDP = "megatron/core/distributed/distributed_data_parallel_config.py"
OPT = "megatron/core/optimizer/optimizer_config.py"
MBC = "megatron/core/num_microbatches_calculator.py"
PS = "megatron/core/parallel_state.py"
INIT = "megatron/training/initialize.py"
PPL = "megatron/core/transformer/pipeline_parallel_layer_layout.py"  # validate_layer_layout, from TransformerConfig

# Who raises, by the file of ``at`` (the words of a finding).
WHO = {ARGS: "validate_args", TC: "TransformerConfig", MPC: "ModelParallelConfig", DDP: "DistributedDataParallelConfig",
       OPT: "OptimizerConfig", MBC: "the microbatch calculator", PS: "initialize_model_parallel",
       INIT: "initialize_megatron", PPL: "TransformerConfig"}

# The flags a derived name comes from (an unknown expansion that could give one of them makes an
# assertion a "may hold" warning; rules/lm.py open_words_note).
DERIVED_FROM = {
    "data_parallel_size": ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                           "tensor_parallel_num_weight_shards"),
    "virtual_pipeline_model_parallel_size": ("num_layers_per_virtual_pipeline_stage",
                                             "num_virtual_stages_per_pipeline_rank", "pipeline_model_parallel_layout"),
    "gtp_weight_remat_size": ("tensor_parallel_num_weight_shards",),
    "expert_gtp_weight_remat_size": ("expert_tensor_parallel_num_weight_shards",),
    "use_dist_ckpt": ("ckpt_format",),
    "cpu_offloading": ("cpu_offloading_num_layers",),
    "builds_optimizer": ("skip_train",),
}
DERIVED = ("world_size", "inference", "te_version", "torch_version", "device_arch", *DERIVED_FROM)


@dataclass(frozen=True, kw_only=True)
class Check(Raise):
    """A launch check: a ``frameworks.raises.Raise`` met at a Megatron-LM launch's start-up, with what argparse's
    order needs (``fails`` reads ``Values``: the names in ``reads``; ``key`` is the dest the finding is at)."""

    code: str  # the rule that reports it
    reads: tuple  # names it reads (dests, derived names, env:NAME)
    line: int = 0  # validate_args: the arguments.py line it runs at; 0: after validate_args
    bare: bool = False  # an assert without a message: ``message`` is its source text

    @property
    def where(self) -> str:
        return self.key

    @property
    def who(self) -> str:
        name = WHO.get(self.at.rsplit(":", 1)[0], "the launch")
        return f"{name} {'raises' if self.raises else 'asserts'}"

    @property
    def flags(self) -> tuple:
        """The argparse dests behind it, ``where`` first."""
        out = [self.where] if self.where else []
        for name in self.reads:
            for dest in DERIVED_FROM.get(name, () if name in DERIVED or name.startswith("env:") else (name,)):
                if dest not in out:
                    out.append(dest)
        return tuple(out)


class Values:
    """What a check may read: exactly its declared names (reading another is a bug in the table)."""

    __slots__ = ("_check", "_ctx")

    def __init__(self, check: Check, ctx: dict):
        self._check, self._ctx = check, ctx

    def __getitem__(self, name: str):
        if name not in self._check.reads:
            raise KeyError(f"check {self._check.id} reads {name!r}, which it does not declare")
        return self._ctx.get(name)

    __getattr__ = __getitem__


TABLE: list = []


def check(id_: str, code: str, at: str, reads: str, message: str, line: int = 0, where: str = "", bare: bool = False,
          raises: bool = False):
    """Register the decorated predicate as a Check (``reads``: names separated by spaces)."""

    def register(fn):
        names = tuple(reads.split())
        TABLE.append(Check(id=id_, code=code, at=at, reads=names, message=message, fails=fn, line=line or _line_of(at),
                           key=where or _first_flag(names), bare=bare, kind="ValueError" if raises else "AssertionError",
                           stage=LAUNCH))
        return fn

    return register


def _line_of(at: str) -> int:
    path, _, line = at.rpartition(":")
    return int(line) if path == ARGS else 0


def _first_flag(names: tuple) -> str:
    return next((n for n in names if n not in DERIVED and not n.startswith("env:")), "")


def _below(have: str, need: str) -> bool:
    from overlap_cli.launch_profile import versions

    return versions.at_least(have, need) is False


def _version_known(have) -> bool:
    from overlap_cli.launch_profile import versions

    return isinstance(have, str) and versions.at_least(have, "0") is not None


class Runner:
    """Evaluates the table in launch order: ``until(line)`` runs the validate_args checks before that
    arguments.py line against the values as they are now; ``after_validate()`` runs the rest, then the
    configs built after validate_args. ``ctx()`` gives the current values (dests and derived names);
    ``fail(check, message)`` records an assertion. ``core``: the megatron-core release whose checks run
    (its module's CHECKS_ABSENT are left out, CHECKS_CHANGED's messages printed; cites.py)."""

    def __init__(self, ctx, fail, core: Optional[str] = None):
        from overlap_cli.frameworks.megatron_lm import cites

        self.ctx, self.fail, self.core = ctx, fail, core
        gone = cites.absent(core)
        self.table = [c for c in TABLE if c.id not in gone]
        self.pending = sorted((c for c in self.table if c.line), key=lambda c: c.line)

    def until(self, line: float) -> None:
        due = [c for c in self.pending if c.line < line]
        if not due:
            return
        self.pending = self.pending[len(due):]
        self._run(due)

    def after_validate(self) -> None:
        self.until(float("inf"))
        self._run([c for c in self.table if not c.line])

    def _run(self, checks: list) -> None:
        from overlap_cli.frameworks.megatron_lm.cites import check_message

        ctx = self.ctx()
        for c in checks:
            if any(ctx.get(n) is UNKNOWN for n in c.reads):
                continue
            fields = c.fails(Values(c, ctx))
            if fields is None or fields is False:
                continue
            message = check_message(c.id, c.message, self.core)
            self.fail(c, message.format(**fields) if isinstance(fields, dict) and fields else message)


def ids_of(code: str) -> tuple:
    return tuple(c.id for c in TABLE if c.code == code)


def by_id(id_: str) -> Optional[Check]:
    return next((c for c in TABLE if c.id == id_), None)


OK = None
FAIL: dict = {}


# ================================================================================================
# validate_args (megatron/training/arguments.py:388-1909), in the order it runs
# ================================================================================================

# -- the weight shards of generalized TP (arguments.py:416 -> model_parallel_config.py:29-40) --------
@check("gtp-shards-min", "LM106", f"{MPC}:32", "tensor_parallel_num_weight_shards tensor_model_parallel_size",
       "tensor_parallel_num_weight_shards ({shards}) must be >= tensor_model_parallel_size ({tp}).", line=416, raises=True)
def _(v):
    s, tp = v.tensor_parallel_num_weight_shards, v.tensor_model_parallel_size
    return {"shards": s, "tp": tp} if s is not None and s < tp else OK


@check("gtp-shards-divisible", "LM106", f"{MPC}:37", "tensor_parallel_num_weight_shards tensor_model_parallel_size",
       "tensor_parallel_num_weight_shards ({shards}) must be divisible by tensor_model_parallel_size ({tp}).",
       line=416, raises=True)
def _(v):
    s, tp = v.tensor_parallel_num_weight_shards, v.tensor_model_parallel_size
    return {"shards": s, "tp": tp} if s is not None and s >= tp and s % tp else OK


# -- context parallelism (arguments.py:562-567) --------------------------------------------------
@check("hcp-product", "LM801", f"{ARGS}:564", "hierarchical_context_parallel_sizes context_parallel_size",
       "assert args.context_parallel_size == prod(args.hierarchical_context_parallel_sizes)", bare=True)
def _(v):
    sizes = v.hierarchical_context_parallel_sizes
    if not sizes:
        return OK
    product = 1
    for s in sizes:
        product *= s
    return FAIL if product != v.context_parallel_size else OK


@check("a2a-p2p-hcp", "LM801", f"{ARGS}:566", "cp_comm_type hierarchical_context_parallel_sizes",
       "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm")
def _(v):
    return FAIL if "a2a+p2p" in (v.cp_comm_type or ()) and v.hierarchical_context_parallel_sizes is None else OK


# -- the evaluation batch (arguments.py:688-696; the global batch is the microbatch calculator's) ---
@check("eval-batch", "LM003", f"{ARGS}:694", "eval_global_batch_size eval_micro_batch_size data_parallel_size",
       "eval_global_batch_size ({gbs}) must be divisible by eval_micro_batch_size ({mbs}) * data_parallel_size ({dp})",
       where="eval_global_batch_size")
def _(v):
    gbs, mbs, dp = v.eval_global_batch_size, v.eval_micro_batch_size, v.data_parallel_size
    if not all(isinstance(x, int) for x in (gbs, mbs, dp)) or mbs * dp == 0:
        return OK
    return {"gbs": gbs, "mbs": mbs, "dp": dp} if gbs % (mbs * dp) else OK


# -- a hybrid layer pattern describes the pipeline split (arguments.py:776-812) -------------------
def _has_pipes(pattern) -> bool:
    return isinstance(pattern, str) and "|" in pattern.split("/")[0]


@check("hybrid-pipes-first", "LM203", f"{ARGS}:778", "hybrid_layer_pattern decoder_first_pipeline_num_layers",
       "If --hybrid-layer-pattern contains pipe separators, --decoder-first-pipeline-num-layers should not be "
       "specified as the pipeline layout is explicitly defined.", where="decoder_first_pipeline_num_layers")
def _(v):
    return FAIL if _has_pipes(v.hybrid_layer_pattern) and v.decoder_first_pipeline_num_layers is not None else OK


@check("hybrid-pipes-last", "LM203", f"{ARGS}:783", "hybrid_layer_pattern decoder_last_pipeline_num_layers",
       "If --hybrid-layer-pattern contains pipe separators, --decoder-last-pipeline-num-layers should not be "
       "specified as the pipeline layout is explicitly defined.", where="decoder_last_pipeline_num_layers")
def _(v):
    return FAIL if _has_pipes(v.hybrid_layer_pattern) and v.decoder_last_pipeline_num_layers is not None else OK


@check("hybrid-account-embedding", "LM203", f"{ARGS}:803", "hybrid_layer_pattern account_for_embedding_in_pipeline_split",
       "--account-for-embedding-in-pipeline-split should not be used with --hybrid-layer-pattern. Pipeline stage "
       "layout is defined by | separators in the pattern.", where="account_for_embedding_in_pipeline_split")
def _(v):
    return FAIL if v.hybrid_layer_pattern is not None and v.account_for_embedding_in_pipeline_split else OK


@check("hybrid-account-loss", "LM203", f"{ARGS}:808", "hybrid_layer_pattern account_for_loss_in_pipeline_split",
       "--account-for-loss-in-pipeline-split should not be used with --hybrid-layer-pattern. Pipeline stage layout "
       "is defined by | separators in the pattern.", where="account_for_loss_in_pipeline_split")
def _(v):
    return FAIL if v.hybrid_layer_pattern is not None and v.account_for_loss_in_pipeline_split else OK


# -- Torch-FSDP2 (arguments.py:997-1015; the distributed optimizer and the connections: LM306, LM502) -
@check("fsdp2-torch", "LM504", f"{ARGS}:998", "use_torch_fsdp2 torch_version",
       "FSDP2 requires PyTorch >= 2.4.0 with FSDP 2 support.")
def _(v):
    return FAIL if v.use_torch_fsdp2 and _below(v.torch_version, "2.4.0") else OK


@check("fsdp2-pp", "LM204", f"{ARGS}:1000", "use_torch_fsdp2 pipeline_model_parallel_size",
       "--use-torch-fsdp2 is not supported with pipeline parallelism")
def _(v):
    return FAIL if v.use_torch_fsdp2 and v.pipeline_model_parallel_size != 1 else OK


@check("fsdp2-ep", "LM701", f"{ARGS}:1002", "use_torch_fsdp2 expert_model_parallel_size",
       "--use-torch-fsdp2 is not supported with expert parallelism")
def _(v):
    return FAIL if v.use_torch_fsdp2 and v.expert_model_parallel_size != 1 else OK


@check("fsdp2-gaf", "LM310", f"{ARGS}:1006", "use_torch_fsdp2 gradient_accumulation_fusion",
       "--use-torch-fsdp2 is not supported with gradient accumulation fusion")
def _(v):
    return FAIL if v.use_torch_fsdp2 and v.gradient_accumulation_fusion else OK


@check("fsdp2-ckpt", "LM310", f"{ARGS}:1008", "use_torch_fsdp2 ckpt_format",
       "--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp")
def _(v):
    return FAIL if v.use_torch_fsdp2 and v.ckpt_format not in ("torch_dist", "torch_dcp") else OK


@check("fsdp2-untie", "LM310", f"{ARGS}:1010", "use_torch_fsdp2 untie_embeddings_and_output_weights",
       "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights")
def _(v):
    return FAIL if v.use_torch_fsdp2 and not v.untie_embeddings_and_output_weights else OK


@check("fsdp2-fp16", "LM401", f"{ARGS}:1012", "use_torch_fsdp2 fp16", "--use-torch-fsdp2 not supported with fp16 yet",
       where="fp16")
def _(v):
    return FAIL if v.use_torch_fsdp2 and v.fp16 else OK


# -- FP4 / FP8 (arguments.py:1064-1075) ------------------------------------------------------------
@check("fp4-with-fp8", "LM401", f"{ARGS}:1066", "fp4 fp8",
       "--fp4-format and --fp8-format cannot be used simultaneously. Please choose one.", raises=True)
def _(v):
    return FAIL if v.fp4 and v.fp8 else OK


@check("fp4-param-gather", "LM401", f"{ARGS}:1070", "fp4_param_gather fp4",
       "--fp4-param-gather must be used together with --fp4-format.", raises=True)
def _(v):
    return FAIL if v.fp4_param_gather and not v.fp4 else OK


@check("fp4-te", "LM504", f"{ARGS}:1074", "fp4 te_version",
       "--fp4-format requires Transformer Engine >= 2.7.0.dev0 for NVFP4BlockScaling support.", raises=True)
def _(v):
    return FAIL if v.fp4 and _below(v.te_version, "2.7.0.dev0") else OK


# -- Megatron-FSDP (arguments.py:1100-1168; the connections: LM502) ---------------------------------
@check("mfsdp-grouped", "LM310", f"{ARGS}:1120", "use_megatron_fsdp moe_single_grouped_weight moe_single_grouped_bias",
       "Megatron-FSDP does not currently support moe_single_grouped_weight or moe_single_grouped_bias. Disable single "
       "grouped MoE parameters or use the regular DDP/distributed optimizer path until Megatron-FSDP supports TE "
       "GroupedTensor param buffers.", raises=True)
def _(v):
    return FAIL if v.use_megatron_fsdp and (v.moe_single_grouped_weight or v.moe_single_grouped_bias) else OK


@check("mfsdp-optimizer", "LM310", f"{ARGS}:1127", "use_megatron_fsdp optimizer",
       "Megatron-FSDP does not support the {optimizer} optimizer yet.")
def _(v):
    return {"optimizer": v.optimizer} if v.use_megatron_fsdp and v.optimizer not in ("sgd", "adam") else OK


@check("mfsdp-weight-hash", "LM310", f"{ARGS}:1140",
       "use_megatron_fsdp data_parallel_sharding_strategy check_weight_hash_across_dp_replicas_interval",
       "check_weight_hash_across_dp_replicas_interval is not supported with optim_grads_params")
def _(v):
    return FAIL if (v.use_megatron_fsdp and v.data_parallel_sharding_strategy == "optim_grads_params"
                    and v.check_weight_hash_across_dp_replicas_interval is not None) else OK


@check("mfsdp-ckpt", "LM310", f"{ARGS}:1146", "use_megatron_fsdp ckpt_format",
       "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format.")
def _(v):
    return FAIL if v.use_megatron_fsdp and v.ckpt_format != "fsdp_dtensor" else OK


@check("mfsdp-meta-device", "LM310", f"{ARGS}:1161",
       "use_megatron_fsdp init_model_with_meta_device data_parallel_sharding_strategy",
       "Meta device initialization (init_model_with_meta_device=True) is not supported or necessary for the "
       "'no_shard' / 0 sharding strategy.", raises=True, where="init_model_with_meta_device")
def _(v):
    return FAIL if (v.use_megatron_fsdp and v.init_model_with_meta_device
                    and v.data_parallel_sharding_strategy == "no_shard") else OK


@check("fsdp-registration-mfsdp", "LM310", f"{ARGS}:1167", "fsdp_manual_registration use_megatron_fsdp",
       "FSDP manual registration is only supported with Megatron FSDP.")
def _(v):
    return FAIL if v.fsdp_manual_registration and not v.use_megatron_fsdp else OK


@check("fsdp-registration-ub", "LM310", f"{ARGS}:1168", "fsdp_manual_registration use_megatron_fsdp nccl_ub",
       "FSDP manual registration is only supported with --nccl-ub argument.")
def _(v):
    # Megatron-FSDP with --nccl-ub turns the registration on itself (arguments.py:1149-1152).
    return FAIL if v.fsdp_manual_registration and v.use_megatron_fsdp and not v.nccl_ub else OK


# -- the parameter and gradient dtypes (arguments.py:1170-1197) ------------------------------------
@check("fp16-with-bf16", "LM401", f"{ARGS}:1173", "fp16 bf16", "assert not args.bf16", bare=True, where="bf16")
def _(v):
    return FAIL if v.fp16 and v.bf16 else OK


@check("bf16-main-grads", "LM401", f"{ARGS}:1187", "bf16 accumulate_allreduce_grads_in_fp32 main_grads_dtype",
       "--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set", where="main_grads_dtype")
def _(v):
    return FAIL if v.bf16 and v.accumulate_allreduce_grads_in_fp32 and v.main_grads_dtype != "fp32" else OK


@check("full-iteration-nan-check", "LM401", f"{ARGS}:1196", "cuda_graph_impl check_for_nan_in_loss_and_grad",
       "--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration for training.")
def _(v):
    # fp16 with dynamic loss scaling has turned the check off already (arguments.py:1177-1178).
    return FAIL if v.cuda_graph_impl == "full_iteration" and v.check_for_nan_in_loss_and_grad else OK


# -- sequence length, precision of the loss, grouped GEMM (arguments.py:1295-1340) -----------------
@check("cp-seq-length", "LM801", f"{ARGS}:1296", "seq_length context_parallel_size",
       "seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > 1.")
def _(v):
    seq, cp = v.seq_length, v.context_parallel_size
    return FAIL if isinstance(seq, int) and cp > 1 and seq % (2 * cp) else OK


@check("fp16-lm-cross-entropy", "LM401", f"{ARGS}:1333", "fp16_lm_cross_entropy fp16",
       "lm cross entropy in fp16 only support in fp16 mode.")
def _(v):
    return FAIL if v.fp16_lm_cross_entropy and not v.fp16 else OK


@check("fp32-residual", "LM401", f"{ARGS}:1335", "fp32_residual_connection fp16 bf16",
       "residual connection in fp32 only supported when using fp16 or bf16.")
def _(v):
    return FAIL if v.fp32_residual_connection and not (v.fp16 or v.bf16) else OK


@check("grouped-gemm-arch", "LM504", f"{ARGS}:1340", "moe_grouped_gemm device_arch",
       "Unsupported compute capability for GroupedGEMM kernels.")
def _(v):
    return FAIL if v.moe_grouped_gemm and isinstance(v.device_arch, int) and v.device_arch < 8 else OK


# -- distributed activation recompute, hybrid CP (arguments.py:1370-1409) --------------------------
@check("distribute-saved-tp", "LM106", f"{ARGS}:1371", "distribute_saved_activations tensor_model_parallel_size",
       "can distribute recomputed activations only across tensor model parallel groups")
def _(v):
    return FAIL if v.distribute_saved_activations and v.tensor_model_parallel_size <= 1 else OK


@check("hybrid-cp-pp", "LM801", f"{ARGS}:1405", "hybrid_context_parallel pipeline_model_parallel_size",
       "Hybrid context parallelism not supported with pipeline parallelism")
def _(v):
    return FAIL if v.hybrid_context_parallel and v.pipeline_model_parallel_size > 1 else OK


@check("hybrid-cp-mfsdp", "LM801", f"{ARGS}:1407", "hybrid_context_parallel use_megatron_fsdp",
       "Hybrid context parallelism not supported with Megatron FSDP")
def _(v):
    return FAIL if v.hybrid_context_parallel and v.use_megatron_fsdp else OK


@check("hybrid-cp-dataloader", "LM801", f"{ARGS}:1408", "hybrid_context_parallel dataloader_type",
       "Hybrid context parallelism only supported with single dataloader type")
def _(v):
    return FAIL if v.hybrid_context_parallel and v.dataloader_type != "single" else OK


@check("hybrid-cp-per-token-loss", "LM801", f"{ARGS}:1409", "hybrid_context_parallel calculate_per_token_loss",
       "Hybrid context parallelism must be used with --calculate-per-token-loss")
def _(v):
    return FAIL if v.hybrid_context_parallel and not v.calculate_per_token_loss else OK


# -- generalized TP: the expert shards, then what GTP needs (arguments.py:1467-1547) ----------------
@check("expert-gtp-shards-min", "LM106", f"{MPC}:32", "expert_tensor_parallel_num_weight_shards expert_tensor_parallel_size",
       "tensor_parallel_num_weight_shards ({shards}) must be >= tensor_model_parallel_size ({tp}).", line=1468,
       raises=True, where="expert_tensor_parallel_num_weight_shards")
def _(v):
    # arguments.py:1468 passes no field names: the message names the dense fields with the expert values.
    s, tp = v.expert_tensor_parallel_num_weight_shards, v.expert_tensor_parallel_size
    return {"shards": s, "tp": tp} if s is not None and s < tp else OK


@check("expert-gtp-shards-divisible", "LM106", f"{MPC}:37",
       "expert_tensor_parallel_num_weight_shards expert_tensor_parallel_size",
       "tensor_parallel_num_weight_shards ({shards}) must be divisible by tensor_model_parallel_size ({tp}).",
       line=1468, raises=True, where="expert_tensor_parallel_num_weight_shards")
def _(v):
    s, tp = v.expert_tensor_parallel_num_weight_shards, v.expert_tensor_parallel_size
    return {"shards": s, "tp": tp} if s is not None and s >= tp and s % tp else OK


def _gtp(v) -> bool:
    return v.gtp_weight_remat_size > 1 or v.expert_gtp_weight_remat_size > 1


_GTP = "gtp_weight_remat_size expert_gtp_weight_remat_size"


@check("gtp-fp4", "LM106", f"{ARGS}:1477", f"{_GTP} fp4 fp4_param_gather",
       "GTP (--tensor-parallel-num-weight-shards / --expert-tensor-parallel-num-weight-shards > 1) with --fp4-format "
       "requires --fp4-param-gather so NVFP4 weights are all-gathered as native NVFP4.", raises=True, where="fp4")
def _(v):
    return FAIL if _gtp(v) and v.fp4 and not v.fp4_param_gather else OK


@check("gtp-node-priority", "LM504", f"{ARGS}:1501", f"{_GTP} device_arch cuda_graph_impl env:CUDA_GRAPHS_USE_NODE_PRIORITY",
       "GTP requires CUDA_GRAPHS_USE_NODE_PRIORITY=1 to make sure fine-grained GTP comms can be well overlapped with "
       "GEMMs when CudaGraph is enabled for Blackwell and later architecture.", where="cuda_graph_impl")
def _(v):
    return FAIL if (_gtp(v) and v.device_arch >= 10 and v.cuda_graph_impl != "none"
                    and v["env:CUDA_GRAPHS_USE_NODE_PRIORITY"] != "1") else OK


@check("gtp-average-in-collective", "LM106", f"{ARGS}:1513", f"{_GTP} ddp_average_in_collective",
       "GTP requires --ddp-average-in-collective off (the default); averaged collectives would need per-buffer "
       "1/gtp_remat scaling.", where="ddp_average_in_collective")
def _(v):
    return FAIL if _gtp(v) and v.ddp_average_in_collective else OK


@check("gtp-ckpt", "LM106", f"{ARGS}:1518", f"{_GTP} ckpt_format",
       "GTP supports only --ckpt-format 'torch' (legacy) or 'torch_dist', got '{ckpt}'.", where="ckpt_format")
def _(v):
    return {"ckpt": v.ckpt_format} if _gtp(v) and v.ckpt_format not in ("torch", "torch_dist") else OK


@check("gtp-reshardable", "LM106", f"{ARGS}:1522",
       f"{_GTP} dist_ckpt_optim_fully_reshardable distrib_optim_fully_reshardable_mem_efficient",
       "GTP does not support the distributed-optimizer fully-reshardable + mem-efficient checkpoint mode. Disable "
       "--distrib-optim-fully-reshardable-mem-efficient (or --dist-ckpt-optim-fully-reshardable).",
       where="distrib_optim_fully_reshardable_mem_efficient")
def _(v):
    return FAIL if (_gtp(v) and v.dist_ckpt_optim_fully_reshardable
                    and v.distrib_optim_fully_reshardable_mem_efficient) else OK


@check("gtp-mxfp8-param-gather", "LM106", f"{ARGS}:1536", f"{_GTP} fp8_recipe fp8_param_gather",
       "GTP + mxfp8 requires --fp8-param-gather (the optimizer maintains the fp8 shard; GTP does not keep or "
       "re-quantize a bf16 weight).", where="fp8_recipe")
def _(v):
    return FAIL if _gtp(v) and v.fp8_recipe == "mxfp8" and not v.fp8_param_gather else OK


@check("gtp-mxfp8-reuse", "LM106", f"{ARGS}:1543", f"{_GTP} fp8_recipe fp8_param_gather reuse_grad_buf_for_mxfp8_param_ag",
       "GTP + mxfp8 + --fp8-param-gather requires --reuse-grad-buf-for-mxfp8-param-ag (MXFP8 params keep their own "
       "quantized storage; mapping them into the param buffer via replace_raw_data is unsupported).", where="fp8_recipe")
def _(v):
    return FAIL if (_gtp(v) and v.fp8_recipe == "mxfp8" and v.fp8_param_gather
                    and not v.reuse_grad_buf_for_mxfp8_param_ag) else OK


# -- expert parallelism (arguments.py:1600-1603) ---------------------------------------------------
@check("ep-needs-experts", "LM701", f"{ARGS}:1601", "expert_model_parallel_size num_experts",
       "num_experts must be non None to use expert model parallelism")
def _(v):
    return FAIL if v.expert_model_parallel_size > 1 and not v.num_experts else OK  # 0 is None (arguments.py:1593)


@check("ep-experts-multiple", "LM701", f"{ARGS}:1602", "expert_model_parallel_size num_experts",
       "Number of experts should be a multiple of expert model parallel_size.", where="num_experts")
def _(v):
    ep, n = v.expert_model_parallel_size, v.num_experts
    return FAIL if ep > 1 and isinstance(n, int) and n and n % ep else OK


# -- checkpoint formats of the sharded data-parallel modes (arguments.py:1612-1621) -----------------
@check("dcp-fsdp2", "LM310", f"{ARGS}:1613", "ckpt_format use_torch_fsdp2",
       "--ckpt-format torch_dcp is only tested with FSDP.")
def _(v):
    return FAIL if v.ckpt_format == "torch_dcp" and not v.use_torch_fsdp2 else OK


@check("dcp-tp", "LM106", f"{ARGS}:1614", "ckpt_format tensor_model_parallel_size",
       "--ckpt-format torch_dcp is not tested with megatron tensor parallelism.", where="tensor_model_parallel_size")
def _(v):
    return FAIL if v.ckpt_format == "torch_dcp" and v.tensor_model_parallel_size > 1 else OK


@check("fsdp-dtensor-mfsdp", "LM310", f"{ARGS}:1621", "ckpt_format use_megatron_fsdp",
       "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP.")
def _(v):
    return FAIL if v.ckpt_format == "fsdp_dtensor" and not v.use_megatron_fsdp else OK


# -- --deterministic-mode before determinism.py (older releases: their validate_args asserts it itself; their
# release modules give the line, ``at`` here is the line in order of the newest release, arguments.py:1653) ---
@check("det-flash-attn", "LM310", f"{ARGS}:1653", "deterministic_mode use_flash_attn",
       "Flash attention can not be used in deterministic mode.", where="use_flash_attn")
def _(v):
    return FAIL if v.deterministic_mode and v.use_flash_attn else OK


@check("det-ce-fusion", "LM310", f"{ARGS}:1653", "deterministic_mode cross_entropy_loss_fusion",
       "Cross Entropy Fusion is currently not deterministic.", where="cross_entropy_loss_fusion")
def _(v):
    return FAIL if v.deterministic_mode and v.cross_entropy_loss_fusion else OK


_ALL_REDUCE_CHOICES = ["Tree", "Ring", "CollnetDirect", "CollnetChain", "^NVLS"]


@check("det-nccl-algo", "LM504", f"{ARGS}:1653", "deterministic_mode env:NCCL_ALGO",
       f"NCCL_ALGO must be one of {_ALL_REDUCE_CHOICES}.", where="deterministic_mode")
def _(v):
    return FAIL if v.deterministic_mode and v["env:NCCL_ALGO"] not in _ALL_REDUCE_CHOICES else OK


# -- Muon (older releases: asserts where newer ones use the layer-wise distributed optimizer; ``at`` in the
# newest release's order, arguments.py:1669). Its overlap-param-gather and checkpoint-format asserts are never
# the first to fail: --overlap-param-gather asserts --overlap-grad-reduce first (muon-ogr), a torch_dcp /
# fsdp_dtensor checkpoint needs an FSDP (muon-fsdp2, muon-mfsdp) ---------------------------------------------
def _muon(v) -> bool:
    return "muon" in v.optimizer


@check("muon-ogr", "LM310", f"{ARGS}:1669", "optimizer overlap_grad_reduce",
       "Muon optimizer does not support overlap grad reduce. Use dist_muon instead.", where="overlap_grad_reduce")
def _(v):
    return FAIL if v.optimizer == "muon" and v.overlap_grad_reduce else OK


@check("muon-distopt", "LM310", f"{ARGS}:1669", "optimizer use_distributed_optimizer",
       "Muon optimizer does not support distributed optimizer for now.", where="use_distributed_optimizer")
def _(v):
    return FAIL if _muon(v) and v.use_distributed_optimizer else OK


@check("muon-fsdp2", "LM310", f"{ARGS}:1669", "optimizer use_torch_fsdp2",
       "Muon optimizer does not support Torch-FSDP2 for now.", where="use_torch_fsdp2")
def _(v):
    return FAIL if _muon(v) and v.use_torch_fsdp2 else OK


@check("muon-mfsdp", "LM310", f"{ARGS}:1669", "optimizer use_megatron_fsdp",
       "Muon optimizer does not support Megatron-FSDP for now.", where="use_megatron_fsdp")
def _(v):
    return FAIL if _muon(v) and v.use_megatron_fsdp else OK


# -- emerging optimizers (arguments.py:1684-1686; the distributed optimizer turned off: LM307) ------
def _emerging(v) -> bool:
    return v.optimizer not in ("sgd", "adam")


@check("emerging-fsdp2", "LM310", f"{ARGS}:1684", "optimizer use_torch_fsdp2",
       "Emerging optimizer does not support Torch-FSDP2 for now.")
def _(v):
    return FAIL if _emerging(v) and v.use_torch_fsdp2 else OK


# -- without Gloo process groups (arguments.py:1691-1699) -------------------------------------------
@check("no-gloo-dist-ckpt", "LM310", f"{ARGS}:1695", "use_gloo_process_groups use_distributed_optimizer use_dist_ckpt",
       "assert args.use_dist_ckpt", bare=True, where="use_gloo_process_groups")
def _(v):
    return FAIL if not v.use_gloo_process_groups and v.use_distributed_optimizer and not v.use_dist_ckpt else OK


@check("no-gloo-reshardable", "LM310", f"{ARGS}:1698",
       "use_gloo_process_groups use_distributed_optimizer dist_ckpt_optim_fully_reshardable "
       "distrib_optim_fully_reshardable_mem_efficient use_dist_ckpt",
       "--distrib-optim-fully-reshardable-mem-efficient requires -enable-gloo-process-groups",
       where="distrib_optim_fully_reshardable_mem_efficient")
def _(v):
    return FAIL if (not v.use_gloo_process_groups and v.use_distributed_optimizer and v.use_dist_ckpt
                    and v.dist_ckpt_optim_fully_reshardable and v.distrib_optim_fully_reshardable_mem_efficient) else OK


# -- pipeline-parallel inference (arguments.py:1774-1779) -------------------------------------------
@check("inference-threshold-pp", "LM204", f"{ARGS}:1775", "inference_batch_times_seqlen_threshold pipeline_model_parallel_size",
       "--inference-batch-times-seqlen-threshold requires setting --pipeline-model-parallel-size > 1.")
def _(v):
    return FAIL if v.inference_batch_times_seqlen_threshold > -1 and v.pipeline_model_parallel_size <= 1 else OK


@check("inference-threshold-cuda-graph", "LM204", f"{ARGS}:1777", "inference_batch_times_seqlen_threshold cuda_graph_impl",
       "Pipeline-parallel microbatched inference is incompatible with CUDA graphs")
def _(v):
    return FAIL if v.inference_batch_times_seqlen_threshold > -1 and v.cuda_graph_impl != "none" else OK


# -- optimizer CPU offload (arguments.py:1803-1811) -------------------------------------------------
@check("cpu-offload-precision-aware", "LM401", f"{ARGS}:1804", "optimizer_cpu_offload use_precision_aware_optimizer",
       "The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer`, as the hybrid "
       "device optimizer reuses the code path of this flag.")
def _(v):
    return FAIL if v.optimizer_cpu_offload and not v.use_precision_aware_optimizer else OK


@check("cpu-offload-fp8-recipe", "LM401", f"{ARGS}:1808", "optimizer_cpu_offload fp8_param_gather fp8_recipe",
       "When `--fp8-param-gather` is enabled, the optimizer cpu offload must be used in conjunction with "
       "`--fp8-recipe delayed`.", where="fp8_param_gather")
def _(v):
    return FAIL if v.optimizer_cpu_offload and v.fp8_param_gather and v.fp8_recipe != "delayed" else OK


# -- delayed wgrad without fused accumulation, activation offloading, CUDA graphs -------------------
@check("delay-wgrad-no-gaf-te", "LM504", f"{ARGS}:1849",
       "delay_wgrad_compute transformer_impl gradient_accumulation_fusion te_version",
       "disabling gradient_accumulation_fusion is only supported with TE >= 2.7.0 when enabling delay_wgrad_compute",
       where="gradient_accumulation_fusion")
def _(v):
    return FAIL if (v.delay_wgrad_compute and v.transformer_impl == "transformer_engine"
                    and not v.gradient_accumulation_fusion and _below(v.te_version, "2.7.0")) else OK


@check("fine-grained-offload-te-impl", "LM504", f"{ARGS}:1855", "fine_grained_activation_offloading transformer_impl",
       "Fine-grained activation offloading is only supported with transformer_engine implementation")
def _(v):
    return FAIL if v.fine_grained_activation_offloading and v.transformer_impl != "transformer_engine" else OK


@check("fine-grained-offload-env", "LM504", f"{ARGS}:1858",
       "fine_grained_activation_offloading transformer_impl te_version env:NVTE_CPU_OFFLOAD_V1",
       "For fine-grained activation offloading with TE >= 2.10.0, NVTE_CPU_OFFLOAD_V1 should be set to 1 to avoid "
       "offloading weights.")
def _(v):
    te_210 = _version_known(v.te_version) and not _below(v.te_version, "2.10.0")
    return FAIL if (v.fine_grained_activation_offloading and v.transformer_impl == "transformer_engine" and te_210
                    and (v["env:NVTE_CPU_OFFLOAD_V1"] or "0") != "1") else OK


@check("cuda-graph-expandable-segments", "LM504", f"{ARGS}:1881",
       "cuda_graph_impl env:PYTORCH_CUDA_ALLOC_CONF env:NCCL_GRAPH_REGISTER",
       "Setting NCCL_GRAPH_REGISTER=0 to avoid illegal memory access when using CUDA Graph with "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.")
def _(v):
    return FAIL if (v.cuda_graph_impl == "transformer_engine"
                    and "expandable_segments:True" in (v["env:PYTORCH_CUDA_ALLOC_CONF"] or "")
                    and (v["env:NCCL_GRAPH_REGISTER"] or "") != "0") else OK


# ================================================================================================
# After validate_args: the microbatch calculator (set_global_variables, global_vars.py:127), the
# TransformerConfig (core_transformer_config_from_args, argument_utils.py:277), the DDP config
# (get_megatron_ddp_config, training.py:1977) and the optimizer config (training.py:1962)
# ================================================================================================

@check("global-batch", "LM003", f"{MBC}:381",
       "global_batch_size micro_batch_size data_parallel_size gtp_weight_remat_size decrease_batch_size_if_needed "
       "step_batch_size_schedule",
       "global batch size ({gbs}) is not divisible by micro batch size ({mbs}) times data parallel size ({dp})",
       where="global_batch_size")
def _(v):
    # global_vars.py:127-131: the calculator gets the data-parallel size times the GTP remat degree.
    gbs, mbs, dp = v.global_batch_size, v.micro_batch_size, v.data_parallel_size
    if v.step_batch_size_schedule is not None or v.decrease_batch_size_if_needed:
        return OK
    if not all(isinstance(x, int) for x in (gbs, mbs, dp)) or mbs * dp == 0:
        return OK
    dp *= v.gtp_weight_remat_size
    return {"gbs": gbs, "mbs": mbs, "dp": dp} if gbs % (mbs * dp) else OK


@check("microbatches-at-least-one", "LM003", f"{MBC}:389",
       "global_batch_size micro_batch_size data_parallel_size gtp_weight_remat_size decrease_batch_size_if_needed "
       "step_batch_size_schedule",
       "number of microbatches should be at least 1, got {n}.", where="global_batch_size")
def _(v):
    gbs, mbs, dp = v.global_batch_size, v.micro_batch_size, v.data_parallel_size
    if v.step_batch_size_schedule is not None or not v.decrease_batch_size_if_needed:
        return OK
    if not all(isinstance(x, int) for x in (gbs, mbs, dp)) or mbs * dp == 0:
        return OK
    per_step = mbs * dp * v.gtp_weight_remat_size
    n = gbs // per_step  # _round (num_microbatches_calculator.py:299-301), then // per_step
    return {"n": n} if n < 1 else OK


# -- ModelParallelConfig.__post_init__ (the deferral prerequisites of PP205 are shared rules) -------
@check("defer-wgrad-limit", "LM204", f"{MPC}:556", "defer_embedding_wgrad_compute pipeline_model_parallel_size "
       "gradient_accumulation_fusion wgrad_deferral_limit",
       "Wgrad deferral limit should be greater than or equal to 0 when it is enabled!", raises=True,
       where="wgrad_deferral_limit")
def _(v):
    # after the two raises PP205 reports (model_parallel_config.py:545-553)
    return FAIL if (v.defer_embedding_wgrad_compute and v.pipeline_model_parallel_size > 1
                    and v.gradient_accumulation_fusion and v.wgrad_deferral_limit < 0) else OK


# -- TransformerConfig.__post_init__ ---------------------------------------------------------------
@check("heads-tp", "LM106", f"{TC}:1324", "num_attention_heads tensor_model_parallel_size",
       "num_attention_heads ({heads}) must be a multiple of tensor_model_parallel_size ({tp}).", raises=True,
       where="tensor_model_parallel_size")
def _(v):
    heads, tp = v.num_attention_heads, v.tensor_model_parallel_size
    return {"heads": heads, "tp": tp} if isinstance(heads, int) and heads % tp else OK


@check("query-groups-tp", "LM106", f"{TC}:1342", "num_query_groups group_query_attention num_attention_heads "
       "tensor_model_parallel_size",
       "num_query_groups ({groups}) must be a multiple or divisor of tensor_model_parallel_size ({tp}).", raises=True,
       where="num_query_groups")
def _(v):
    # argument_utils.py:330-333: without --group-query-attention every head is its own group (tc.py:1335).
    groups = v.num_query_groups if v.group_query_attention else v.num_attention_heads
    tp = v.tensor_model_parallel_size
    if not isinstance(groups, int) or not groups or v.num_attention_heads % tp:
        return OK
    return {"groups": groups, "tp": tp} if groups % tp and tp % groups else OK


def _gdn(v, heads: str):
    if v.experimental_attention_variant != "gated_delta_net":
        return OK
    n, tp, cp = v[heads], v.tensor_model_parallel_size, v.context_parallel_size
    if not isinstance(n, int) or n % (tp * cp) == 0:
        return OK
    return {"n": n, "tp": tp, "cp": cp}


@check("gdn-key-heads", "LM106", f"{TC}:1375", "experimental_attention_variant linear_num_key_heads "
       "tensor_model_parallel_size context_parallel_size",
       "self.linear_num_key_heads={n} must be a multiple of (self.tensor_model_parallel_size={tp} * "
       "self.context_parallel_size={cp}).", where="linear_num_key_heads")
def _(v):
    return _gdn(v, "linear_num_key_heads")


# megatron-core 0.17: only TP divides the key heads (transformer_config.py:1107 there); ``at``: its place in
# the newest release's order, each release module giving its own line.
@check("gdn-key-heads-tp", "LM106", f"{TC}:1375", "experimental_attention_variant linear_num_key_heads "
       "tensor_model_parallel_size", "linear_num_key_heads must be a multiple of tensor_model_parallel_size.",
       where="linear_num_key_heads")
def _(v):
    n = v.linear_num_key_heads
    gdn = v.experimental_attention_variant == "gated_delta_net"
    return FAIL if gdn and isinstance(n, int) and n % v.tensor_model_parallel_size else OK


@check("fp8-bf16-layers-delayed", "LM401", f"{TC}:1403", "fp8 first_last_layers_bf16 fp8_recipe",
       "Delayed scaling does not support first / last layer in BF16.", raises=True, where="first_last_layers_bf16")
def _(v):
    return FAIL if v.fp8 and v.first_last_layers_bf16 and v.fp8_recipe == "delayed" else OK


def _bf16_layers(v, name: str):
    if not (v.fp8 and v.first_last_layers_bf16) or not isinstance(v.num_layers, int):
        return OK
    most, n = v.num_layers // v.pipeline_model_parallel_size, v[name]
    return {"n": n, "most": most} if n < 0 or n > most else OK


@check("fp8-bf16-layers-start", "LM204", f"{TC}:1416", "fp8 first_last_layers_bf16 num_layers "
       "pipeline_model_parallel_size num_layers_at_start_in_bf16",
       "num_layers_at_start_in_bf16 ({n}) must be between 0 and number of layers per pipeline stage ({most}).",
       raises=True, where="num_layers_at_start_in_bf16")
def _(v):
    return _bf16_layers(v, "num_layers_at_start_in_bf16")


@check("fp8-bf16-layers-end", "LM204", f"{TC}:1425", "fp8 first_last_layers_bf16 num_layers "
       "pipeline_model_parallel_size num_layers_at_end_in_bf16",
       "num_layers_at_end_in_bf16 ({n}) must be between 0 and number of layers per pipeline stage ({most}).",
       raises=True, where="num_layers_at_end_in_bf16")
def _(v):
    return _bf16_layers(v, "num_layers_at_end_in_bf16")


@check("fp8-custom-factory", "LM401", f"{TC}:1433", "fp8 fp8_recipe fp8_quantizer_factory",
       "fp8_quantizer_factory must be provided when fp8_recipe is 'custom'. Specify a Python import path (e.g., "
       "package.module.quantizer_factory) via --fp8-quantizer-factory.", raises=True, where="fp8_recipe")
def _(v):
    return FAIL if v.fp8 and v.fp8_recipe == "custom" and not v.fp8_quantizer_factory else OK


@check("fp8-param-without-fp8", "LM401", f"{TC}:1440", "fp8_param_gather fp8",
       "fp8_param must be used together with fp8 mode.", raises=True, where="fp8_param_gather")
def _(v):
    return FAIL if v.fp8_param_gather and not v.fp8 else OK  # fp8_param = fp8_param_gather (argument_utils.py:311)


@check("fp8-output-proj-fp8", "LM401", f"{TC}:1444", "fp8_output_proj fp8",
       "fp8_output_proj must be used together with fp8 mode.", raises=True)
def _(v):
    return FAIL if v.fp8_output_proj and not v.fp8 else OK


@check("fp8-output-proj-mxfp8", "LM401", f"{TC}:1446", "fp8_output_proj fp8 fp8_recipe",
       "fp8_output_proj requires fp8_recipe='mxfp8', got '{recipe}'.", raises=True)
def _(v):
    return {"recipe": v.fp8_recipe} if v.fp8_output_proj and v.fp8 and v.fp8_recipe != "mxfp8" else OK


@check("fp4-custom-factory", "LM401", f"{TC}:1459", "fp4 fp4_recipe fp4_quantizer_factory",
       "fp4_quantizer_factory must be provided when fp4_recipe is 'custom'. Specify a Python import path (e.g., "
       "package.module.quantizer_factory) via --fp4-quantizer-factory.", raises=True, where="fp4_recipe")
def _(v):
    return FAIL if v.fp4 and v.fp4_recipe == "custom" and not v.fp4_quantizer_factory else OK


@check("inference-moe-etp", "LM106", f"{TC}:1473", "transformer_impl num_experts expert_tensor_parallel_size",
       "Inference-optimized MoE layers does not support expert tensor parallelism.", raises=True,
       where="expert_tensor_parallel_size")
def _(v):
    return FAIL if (v.transformer_impl == "inference_optimized" and v.num_experts
                    and v.expert_tensor_parallel_size > 1) else OK


@check("moe-single-grouped-te", "LM504", f"{TC}:1563",
       "moe_single_grouped_weight moe_single_grouped_bias moe_grouped_gemm te_version",
       "moe_single_grouped_weight and moe_single_grouped_bias require transformer-engine>=2.14.0, but your version is "
       "{te}.", raises=True, where="moe_single_grouped_weight")
def _(v):
    wanted = v.moe_single_grouped_weight or v.moe_single_grouped_bias
    return {"te": v.te_version} if wanted and v.moe_grouped_gemm and _below(v.te_version, "2.14.0") else OK


# megatron-core 0.18 only: the single grouped MoE weight with fp8's mxfp8 recipe alone (transformer_config.py:1432
# there; ``at``: its place in the newest release's order).
@check("single-grouped-mxfp8", "LM401", f"{TC}:1563", "moe_single_grouped_weight fp4 fp8 fp8_recipe",
       "moe_single_grouped_weight is currently supported only with fp8 mode and fp8_recipe='mxfp8'.", raises=True,
       where="moe_single_grouped_weight")
def _(v):
    return FAIL if v.moe_single_grouped_weight and (v.fp4 or not v.fp8 or v.fp8_recipe != "mxfp8") else OK


@check("shared-expert-overlap-dispatcher", "LM701", f"{TC}:1648",
       "moe_shared_expert_intermediate_size moe_shared_expert_overlap moe_token_dispatcher_type",
       "moe_shared_expert_overlap only works with alltoall or flex token dispatcher.", raises=True,
       where="moe_shared_expert_overlap")
def _(v):
    return _shared_expert_overlap(v, ("alltoall", "flex"))


def _shared_expert_overlap(v, dispatchers: tuple):
    size = v.moe_shared_expert_intermediate_size
    return FAIL if (isinstance(size, int) and size > 0 and v.moe_shared_expert_overlap
                    and v.moe_token_dispatcher_type not in dispatchers) else OK


# megatron-core 0.17: alltoall only (transformer_config.py:1270-1274 there; ``at``: its place in the newest
# release's order).
@check("shared-expert-overlap-alltoall", "LM701", f"{TC}:1648",
       "moe_shared_expert_intermediate_size moe_shared_expert_overlap moe_token_dispatcher_type",
       "moe_shared_expert_overlap only works with alltoall token dispatcher.", raises=True,
       where="moe_shared_expert_overlap")
def _(v):
    return _shared_expert_overlap(v, ("alltoall",))


@check("cpu-offload-pp", "LM204", f"{TC}:1715", "cpu_offloading pipeline_model_parallel_size",
       "Currently there is no support for Pipeline parallelism with CPU offloading", raises=True,
       where="cpu_offloading_num_layers")
def _(v):
    return FAIL if v.cpu_offloading and v.pipeline_model_parallel_size > 1 else OK


@check("recompute-num-layers", "LM204", f"{TC}:1743", "recompute_granularity recompute_method recompute_num_layers "
       "num_layers pipeline_model_parallel_size",
       "When using recompute_granularity: {granularity} recompute_num_layers must be between 1 and "
       "num_layers_per_pipeline_rank: {per_rank}", raises=True, where="recompute_granularity")
def _(v):
    if v.recompute_granularity != "full" or v.recompute_method not in ("block", "uniform"):
        return OK
    if v.recompute_num_layers is not None or not isinstance(v.num_layers, int):
        return OK
    return {"granularity": "full", "per_rank": v.num_layers // v.pipeline_model_parallel_size}


@check("distribute-saved-sp", "LM106", f"{TC}:1758", "recompute_granularity recompute_method recompute_num_layers "
       "distribute_saved_activations sequence_parallel",
       "distribute_saved_activations: True must be false when sequence parallel is enabled: True", raises=True,
       where="distribute_saved_activations")
def _(v):
    ready = v.recompute_granularity == "full" and v.recompute_method in ("block", "uniform") and v.recompute_num_layers
    return FAIL if ready and v.distribute_saved_activations and v.sequence_parallel else OK


def _recompute_modules(v) -> list:
    return list(v.recompute_modules) if v.recompute_modules is not None else ["core_attn"]  # tc.py:1772


@check("shared-experts-recompute", "LM701", f"{TC}:1817", "recompute_granularity recompute_modules "
       "moe_shared_expert_intermediate_size moe_shared_expert_overlap",
       "shared_experts recompute cannot work with --moe-shared-expert-overlap.", raises=True,
       where="moe_shared_expert_overlap")
def _(v):
    return FAIL if (v.recompute_granularity == "selective" and "shared_experts" in _recompute_modules(v)
                    and v.moe_shared_expert_intermediate_size is not None and v.moe_shared_expert_overlap) else OK


def _fp8_act_recompute(v) -> bool:
    modules = _recompute_modules(v)
    return v.recompute_granularity == "selective" and bool(v.fp8) and ("moe_act" in modules or "layernorm" in modules)


@check("fp8-recompute-delayed", "LM401", f"{TC}:1824", "recompute_granularity recompute_modules fp8 fp8_recipe",
       "Delayed scaling does not support moe_act and layernorm recompute for fp8.", raises=True, where="fp8_recipe")
def _(v):
    return FAIL if _fp8_act_recompute(v) and v.fp8_recipe == "delayed" else OK


@check("fp8-recompute-te", "LM504", f"{TC}:1829", "recompute_granularity recompute_modules fp8 fp8_recipe te_version",
       "moe_act and layernorm recompute for fp8 needs transformer-engine>=2.6.0dev0, but your version is {te}.",
       raises=True, where="recompute_modules")
def _(v):
    return {"te": v.te_version} if (_fp8_act_recompute(v) and v.fp8_recipe != "delayed"
                                    and _below(v.te_version, "2.6.0dev0")) else OK


# The pipeline split TransformerConfig checks after validate_args (transformer_config.py:1922-2110).
_SPLIT = ("decoder_first_pipeline_num_layers decoder_last_pipeline_num_layers account_for_embedding_in_pipeline_split "
          "account_for_loss_in_pipeline_split")


def _uneven(v) -> bool:
    return v.decoder_first_pipeline_num_layers is not None or v.decoder_last_pipeline_num_layers is not None


def _accounted(v) -> bool:
    return bool(v.account_for_embedding_in_pipeline_split or v.account_for_loss_in_pipeline_split)


@check("uneven-with-accounting", "LM203", f"{TC}:1929", _SPLIT,
       "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot beset at the same time with "
       "account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split", raises=True,
       where="account_for_embedding_in_pipeline_split")
def _(v):
    return FAIL if _uneven(v) and _accounted(v) else OK


@check("layout-with-split-args", "LM203", f"{TC}:1946", f"pipeline_model_parallel_layout {_SPLIT}",
       "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments. "
       "self.num_layers_in_first_pipeline_stage={first!r}, self.num_layers_in_last_pipeline_stage={last!r}, "
       "self.account_for_embedding_in_pipeline_split={emb!r}, self.account_for_loss_in_pipeline_split={loss!r}.",
       raises=True, where="pipeline_model_parallel_layout")
def _(v):
    if v.pipeline_model_parallel_layout is None or (_uneven(v) and _accounted(v)) or not (_uneven(v) or _accounted(v)):
        return OK
    return {"first": v.decoder_first_pipeline_num_layers, "last": v.decoder_last_pipeline_num_layers,
            "emb": v.account_for_embedding_in_pipeline_split, "loss": v.account_for_loss_in_pipeline_split}




def _layout_layers(line: int):
    """validate_layer_layout's assert at ``line`` (TransformerConfig.__post_init__, transformer_config.py:1984),
    for a layout validate_args read (its stages divide over PP, arguments.py:911) with no other split flag."""
    def fails(v):
        from overlap_cli.frameworks.bridge.pipeline_layout import layer_layout_problem, read_layout

        if v.pipeline_model_parallel_layout is None or _uneven(v) or _accounted(v):
            return OK
        layout = read_layout(v.pipeline_model_parallel_layout)
        if layout is None or layout.stages is None or layout.stages % v.pipeline_model_parallel_size:
            return OK
        got = layer_layout_problem(v.pipeline_model_parallel_layout, v.num_layers, v.mtp_num_layers)
        return {"problem": got[1]} if got is not None and got[0] == line else OK
    return fails


def _layout_layers_checks():
    from overlap_cli.frameworks.bridge.pipeline_layout import LAYER_LAYOUT_LINES

    for line in LAYER_LAYOUT_LINES:
        check(f"layout-layers-{line}", "LM203", f"{PPL}:{line}",
              f"pipeline_model_parallel_layout {_SPLIT} num_layers mtp_num_layers pipeline_model_parallel_size",
              "{problem}", where="pipeline_model_parallel_layout")(_layout_layers(line))


_layout_layers_checks()

_UNEVEN = f"pipeline_model_parallel_layout {_SPLIT} num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size"


def _uneven_split(v) -> Optional[tuple]:
    """(stage, message fields) of the first raise of transformer_config.py:1989-2064 (uneven PP), or None."""
    if v.pipeline_model_parallel_layout is not None or not _uneven(v) or _accounted(v) or not isinstance(v.num_layers, int):
        return None
    pp, layers, vpp = v.pipeline_model_parallel_size, v.num_layers, v.virtual_pipeline_model_parallel_size
    for name, key in (("first", "decoder_first_pipeline_num_layers"), ("last", "decoder_last_pipeline_num_layers")):
        n = v[key]
        if n is None:
            continue
        if n <= 0:
            return f"{name}-positive", {}
        if vpp is not None and n % vpp:
            return f"{name}-vpp", {"n": n, "vpp": vpp}
        layers -= n
        pp -= 1
    if bool(layers) != bool(pp):
        return "mismatch", {"layers": layers, "pp": pp}
    if pp and layers % pp:
        return "middle", {"layers": layers, "pp": pp}
    if pp and vpp is not None and (layers // pp) % vpp:
        return "middle-vpp", {"per_rank": layers // pp, "vpp": vpp}
    return None


def _uneven_check(stage: str):
    def fails(v):
        got = _uneven_split(v)
        return got[1] if got is not None and got[0] == stage else OK

    return fails


for _stage, _line, _where, _message in (
    ("first-positive", 1998, "decoder_first_pipeline_num_layers", "num_layers_in_first_pipeline_stage must be larger than 0"),
    ("first-vpp", 2006, "decoder_first_pipeline_num_layers", "number of layers at first stage: {n}must be divisible by "
     "virtual pipelineparallel degree {vpp}"),
    ("last-positive", 2017, "decoder_last_pipeline_num_layers", "num_layers_in_last_pipeline_stage must be larger than 0"),
    ("last-vpp", 2025, "decoder_last_pipeline_num_layers", "number of layers at last stage: {n}must be divisible by "
     "virtual pipelineparallel degree {vpp}"),
    ("mismatch", 2036, "pipeline_model_parallel_size", "Mismatch: {layers} middle layers remaining but {pp} middle PP "
     "stages available."),
    ("middle", 2044, "pipeline_model_parallel_size", "number of layers at middle stage: {layers} must be divisible bythe "
     "middle pipeline model parallel size {pp}"),
    ("middle-vpp", 2058, "num_virtual_stages_per_pipeline_rank", "number of layers on each middle pipeline rank:"
     "{per_rank} must be divisible by virtualpipeline parallel degree {vpp}"),
):
    check(f"uneven-{_stage}", "LM203", f"{TC}:{_line}", _UNEVEN, _message, raises=True, where=_where)(_uneven_check(_stage))


def _accounted_layers(v) -> Optional[int]:
    if v.pipeline_model_parallel_layout is not None or _uneven(v) or not _accounted(v) or not isinstance(v.num_layers, int):
        return None
    return v.num_layers + int(bool(v.account_for_embedding_in_pipeline_split)) + int(bool(v.account_for_loss_in_pipeline_split))


@check("accounted-vpp-pp", "LM203", f"{TC}:2090", _UNEVEN,
       "num_layers: {layers} after enableaccount_for_embedding_in_pipeline_split or account_for_loss_in_pipeline_split "
       "must be divisibleby pipeline_model_parallel_size {pp}", raises=True, where="pipeline_model_parallel_size")
def _(v):
    layers = _accounted_layers(v)
    if layers is None or v.virtual_pipeline_model_parallel_size is None:
        return OK  # without VPP validate_args asserts first (arguments.py:963)
    pp = v.pipeline_model_parallel_size
    return {"layers": layers, "pp": pp} if layers % pp else OK


@check("accounted-vpp-per-rank", "LM203", f"{TC}:2103", _UNEVEN,
       "number of layers on each pipeline rank: {per_rank}(after enable account_for_embedding_in_pipeline_split or "
       "account_for_loss_in_pipeline_split) must be divisible byvirtual_pipeline_model_parallel_size{vpp}",
       raises=True, where="num_virtual_stages_per_pipeline_rank")
def _(v):
    layers, vpp, pp = _accounted_layers(v), v.virtual_pipeline_model_parallel_size, v.pipeline_model_parallel_size
    if layers is None or vpp is None or layers % pp:
        return OK
    return {"per_rank": layers // pp, "vpp": vpp} if (layers // pp) % vpp else OK


@check("moe-bias-etp", "LM106", f"{TC}:2280", "num_experts add_bias_linear expert_tensor_parallel_size",
       "Bias in Moe is only supported when ETP==1", where="expert_tensor_parallel_size")
def _(v):
    return FAIL if v.num_experts and v.add_bias_linear and v.expert_tensor_parallel_size != 1 else OK


@check("router-padding-quantization", "LM401", f"{TC}:2318",
       "moe_router_padding_for_quantization moe_router_padding_for_fp8 fp8 fp4",
       "fp8/fp4 must be specified when moe_router_padding_for_quantization is True.", raises=True)
def _(v):
    padding = v.moe_router_padding_for_quantization or v.moe_router_padding_for_fp8  # tc.py:2308-2314
    return FAIL if padding and v.fp8 is None and v.fp4 is None else OK


@check("cp-comm-type-length", "LM801", f"{TC}:2780", "context_parallel_size cp_comm_type num_layers",
       "Length of cp_comm_type ({n}) should equal to the total number of transformer layers ({layers})!",
       where="cp_comm_type")
def _(v):
    # argument_utils.py:337-338: a single value is passed as a string, several as the list.
    types, layers = v.cp_comm_type, v.num_layers
    if v.context_parallel_size <= 1 or not isinstance(types, list) or len(types) <= 1 or not isinstance(layers, int):
        return OK
    return {"n": len(types), "layers": layers} if len(types) != layers else OK


@check("dsa-cp-allgather", "LM801", f"{TC}:2845", "experimental_attention_variant hybrid_layer_pattern "
       "context_parallel_size cp_comm_type",
       "DSAttention context parallelism currently supports cp_comm_type=allgather only.", where="cp_comm_type")
def _(v):
    pattern = v.hybrid_layer_pattern
    dsa = v.experimental_attention_variant == "dsa" or (isinstance(pattern, str) and "D" in pattern)  # a.u.py:339-343
    if not dsa or v.context_parallel_size <= 1:
        return OK
    types = v.cp_comm_type if isinstance(v.cp_comm_type, list) else [v.cp_comm_type]
    return FAIL if any(t is None or str(t).replace("_", "").lower() != "allgather" for t in types) else OK


# megatron-core 0.17 / 0.18: DSAttention with no context parallelism at all (transformer_config.py:2230 / 2543
# there; ``at``: its place in the newest release's order).
@check("dsa-cp", "LM801", f"{TC}:2845", "experimental_attention_variant context_parallel_size",
       "Currently context parallelism is not supported by DSAttention!", bare=False, where="context_parallel_size")
def _(v):
    return FAIL if v.experimental_attention_variant == "dsa" and v.context_parallel_size != 1 else OK


@check("batch-invariant-cp", "LM801", f"{TC}:2890", "batch_invariant_mode context_parallel_size",
       "Batch invariant mode does not support context parallelism", where="context_parallel_size")
def _(v):
    return FAIL if v.batch_invariant_mode and v.context_parallel_size != 1 else OK


# -- DistributedDataParallelConfig.__post_init__ (training.py:1977-2014; not built for Torch-FSDP2) --
@check("reuse-grad-buf-needs-fp8-param", "LM401", f"{DDP}:254",
       "builds_optimizer use_torch_fsdp2 reuse_grad_buf_for_mxfp8_param_ag fp8_param_gather",
       "Reuse grad buffer only when keeping params in MXFP8.", where="reuse_grad_buf_for_mxfp8_param_ag")
def _(v):
    # Megatron-FSDP has turned the reuse off (arguments.py:1114).
    return FAIL if (v.builds_optimizer and not v.use_torch_fsdp2 and v.reuse_grad_buf_for_mxfp8_param_ag
                    and not v.fp8_param_gather) else OK


@check("nccl-ub-expandable-segments", "LM504", f"{DDP}:258",
       "builds_optimizer use_torch_fsdp2 nccl_ub torch_version env:PYTORCH_CUDA_ALLOC_CONF",
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is currently not supported with nccl_ub due to "
       "compatibility issue with torch.cuda.MemPool API.", raises=True, where="nccl_ub")
def _(v):
    conf = (v["env:PYTORCH_CUDA_ALLOC_CONF"] or "").split(",")
    return FAIL if (v.builds_optimizer and not v.use_torch_fsdp2 and v.nccl_ub and _below(v.torch_version, "2.11.0a0")
                    and "expandable_segments:True" in conf) else OK


@check("fp32-patterns-with-fp32-grads", "LM401", f"{DDP}:264",
       "builds_optimizer use_torch_fsdp2 ddp_param_name_patterns_for_fp32_local_accumulation "
       "accumulate_allreduce_grads_in_fp32",
       "Only need to explicitly specify param_name patterns for FP32 local accumulation if .main_grads aren't "
       "already in FP32", where="ddp_param_name_patterns_for_fp32_local_accumulation")
def _(v):
    # grad_reduce_in_fp32 = accumulate_allreduce_grads_in_fp32 (training.py:1988), as --bf16 left it.
    return FAIL if (v.builds_optimizer and not v.use_torch_fsdp2 and v.ddp_param_name_patterns_for_fp32_local_accumulation
                    and v.accumulate_allreduce_grads_in_fp32) else OK


@check("num-buckets-positive", "LM310", f"{DDP}:271", "builds_optimizer use_torch_fsdp2 ddp_num_buckets ddp_bucket_size",
       "num_buckets must be greater than 0", where="ddp_num_buckets")
def _(v):
    n = v.ddp_num_buckets
    return FAIL if (v.builds_optimizer and not v.use_torch_fsdp2 and isinstance(n, int) and v.ddp_bucket_size is None
                    and n <= 0) else OK


# -- OptimizerConfig.__post_init__ (get_megatron_optimizer_config, training.py:1962-1969) ------------
@check("reuse-grad-buf-with-ops", "LM310", f"{OPT}:425", "builds_optimizer reuse_grad_buf_for_mxfp8_param_ag "
       "overlap_param_gather_with_optimizer_step",
       "overlap_param_gather_with_optimizer_step is not supported with reuse_grad_buf_for_mxfp8_param_ag.", raises=True,
       where="overlap_param_gather_with_optimizer_step")
def _(v):
    return FAIL if (v.builds_optimizer and v.reuse_grad_buf_for_mxfp8_param_ag
                    and v.overlap_param_gather_with_optimizer_step) else OK


@check("precision-aware-adam", "LM401", f"{OPT}:431", "builds_optimizer use_precision_aware_optimizer optimizer",
       "--use-precision-aware-optimizer only supported with adam", where="use_precision_aware_optimizer")
def _(v):
    return FAIL if v.builds_optimizer and v.use_precision_aware_optimizer and v.optimizer != "adam" else OK


@check("precision-aware-distopt", "LM401", f"{OPT}:434", "builds_optimizer use_precision_aware_optimizer optimizer "
       "use_distributed_optimizer",
       "--use-precision-aware-optimizer only supported with distributed optimizer", where="use_precision_aware_optimizer")
def _(v):
    return FAIL if (v.builds_optimizer and v.use_precision_aware_optimizer and v.optimizer == "adam"
                    and not v.use_distributed_optimizer) else OK


@check("precision-aware-needs-te", "LM504", f"{OPT}:465", "builds_optimizer use_precision_aware_optimizer optimizer "
       "use_distributed_optimizer optimizer_cpu_offload te_version",
       "--use-precision-aware-optimizer requires FusedAdam from TransformerEngine, but not found.", raises=True,
       where="use_precision_aware_optimizer")
def _(v):
    # only an absent Transformer Engine (version 0.0.0) lacks FusedAdam; the offload path returns first
    return FAIL if (v.builds_optimizer and v.use_precision_aware_optimizer and v.optimizer == "adam"
                    and v.use_distributed_optimizer and not v.optimizer_cpu_offload and v.te_version == "0.0.0") else OK


for _name, _line in (("main_grads_dtype", 470), ("main_params_dtype", 473), ("exp_avg_dtype", 476),
                     ("exp_avg_sq_dtype", 479)):
    def _dtype_check(name):
        def fails(v):
            return FAIL if v.builds_optimizer and not v.use_precision_aware_optimizer and v[name] != "fp32" else OK

        return fails

    check(f"{_name.replace('_', '-')}-fp32", "LM401", f"{OPT}:{_line}",
          f"builds_optimizer use_precision_aware_optimizer {_name}",
          f"{_name} can only be fp32 when not using precision-aware optimizer", where=_name)(_dtype_check(_name))


# -- initialize_megatron -> _initialize_distributed (megatron/training/initialize.py:362-368) ---------
@check("gtp-needs-te", "LM504", f"{INIT}:365", f"{_GTP} te_version",
       "GTP requires TransformerEngine >= 2.19. Set both --gtp_remat-weight-remat-size and "
       "--expert-generalized-tensor-parallel-remat-size to 1 to disable GTP.", where="tensor_parallel_num_weight_shards")
def _(v):
    # HAVE_GTP is whether Transformer Engine's GTP symbols import (core/tensor_parallel/gtp_api.py:13-38): only
    # an absent Transformer Engine is certain to fail; which release first has them the message alone says.
    return FAIL if _gtp(v) and v.te_version == "0.0.0" else OK


# -- initialize_model_parallel's one environment check (core/parallel_state.py:1205) ----------------
@check("ucc-max-connections", "LM504", f"{PS}:1205", "pipeline_model_parallel_comm_backend env:CUDA_DEVICE_MAX_CONNECTIONS",
       "UCC-backend requires CUDA_DEVICE_MAX_CONNECTIONS > 1", where="pipeline_model_parallel_comm_backend")
def _(v):
    return FAIL if v.pipeline_model_parallel_comm_backend == "ucc" and v["env:CUDA_DEVICE_MAX_CONNECTIONS"] == "1" else OK
