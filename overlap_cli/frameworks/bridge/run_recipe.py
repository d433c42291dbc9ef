"""A launch of Megatron-Bridge's recipe runner, ``scripts/training/run_recipe.py``, read as the runner reads it.

Its argument parser (Megatron-Bridge v0.6.0 ``scripts/training/run_recipe.py:160-260``, ``allow_abbrev=False``,
``parse_known_args`` at :448): ``--recipe NAME`` or ``--model STEM`` (one of them, required), ``--mode``,
``--step-func``, ``--dataset``, the convenience flags of ``COMMON_OVERRIDE_FIELDS`` (:133-151: ``-tp``
-> ``model.tensor_model_parallel_size`` ...), ``--dry-run`` / ``--deterministic`` / ``--dump-env``. Every
word argparse does not take is a trailing override: one that starts with ``-`` is refused ("Unknown
option", :268), one without ``=`` too ("Expected override in KEY=VALUE form", :270). The overrides applied
are the convenience ones first, in the table's order, then the trailing ones in order (:450), through
``process_config_with_overrides`` (recipe_runner.py:293) — the merge ``config.layers`` models.

The recipe: ``--recipe NAME``, or ``{model}_{task}_config`` with task ``peft`` for ``--mode lora|dora``
(:418, recipe_metadata.py:209); a ``--recipe`` without ``--mode`` takes the mode its name encodes
(recipe_metadata.py:214). There is no ``--config-file``: this runner refuses it as an unknown option.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

# (dest, flags, config field or None, type) of run_recipe.py's parser (:168-259).
_OPTIONS = (
    ("model", ("--model",), None, str),
    ("recipe", ("--recipe",), None, str),
    ("mode", ("--mode",), None, str),
    ("step_func", ("--step-func", "--step_func"), None, str),
    ("dataset", ("--dataset",), None, str),
    ("max_steps", ("-ms", "--max_steps"), "train.train_iters", int),
    ("global_batch_size", ("-gb", "--global_batch_size"), "train.global_batch_size", int),
    ("micro_batch_size", ("-mb", "--micro_batch_size"), "train.micro_batch_size", int),
    ("seq_length", ("-sl", "--seq_length"), "dataset.seq_length", int),
    ("tensor_model_parallel_size", ("-tp", "--tensor_model_parallel_size"), "model.tensor_model_parallel_size", int),
    ("pipeline_model_parallel_size", ("-pp", "--pipeline_model_parallel_size"), "model.pipeline_model_parallel_size", int),
    ("context_parallel_size", ("-cp", "--context_parallel_size"), "model.context_parallel_size", int),
    ("virtual_pipeline_model_parallel_size", ("-vp", "--virtual_pipeline_model_parallel_size"),
     "model.virtual_pipeline_model_parallel_size", int),
    ("expert_model_parallel_size", ("-ep", "--expert_model_parallel_size"), "model.expert_model_parallel_size", int),
    ("expert_tensor_parallel_size", ("-etp", "--expert_tensor_parallel_size"), "model.expert_tensor_parallel_size", int),
    ("lr", ("--lr",), "optimizer.lr", float),
    ("min_lr", ("--min_lr",), "optimizer.min_lr", float),
    ("warmup_iters", ("--warmup_iters",), "scheduler.lr_warmup_iters", int),
    ("pretrained_checkpoint", ("--pretrained_checkpoint",), "checkpoint.pretrained_checkpoint", str),
    ("save_dir", ("--save_dir",), "checkpoint.save", str),
    ("load_dir", ("--load_dir",), "checkpoint.load", str),
    ("save_interval", ("--save_interval",), "checkpoint.save_interval", int),
)
_SWITCHES = {"--dry-run": "dryrun", "--dry_run": "dryrun", "--deterministic": "deterministic",
             "--dump-env": "dump_env", "--dump_env": "dump_env", "-h": "help", "--help": "help"}
_MODES = ("pretrain", "sft", "lora", "dora")
_BY_FLAG = {flag: opt for opt in _OPTIONS for flag in opt[1]}
# The config fields an unknown word may set, when it is known to be a convenience flag's value.
RUNNER = "scripts/training/run_recipe.py"


@dataclass
class RecipeLaunch:
    recipe: Optional[str] = None  # the recipe function's name as the runner forms it (None: not known)
    recipe_line: Optional[int] = None
    overrides: list = field(default_factory=list)  # (dotlist text, line), in the order the runner applies them
    unknown_keys: list = field(default_factory=list)  # (dotted key or "" for any key, sentence)
    notes: list = field(default_factory=list)
    mode: Optional[str] = None
    switches: dict = field(default_factory=dict)


def _problem(found, token, message: str) -> InputError:
    return InputError(InputProblem(found.file, f"{RUNNER}: {message}", line=token.line if token else found.launch_line,
                                   column=token.column if token else None))


def read(found) -> RecipeLaunch:
    """The run of a ``LaunchText`` whose training script is run_recipe.py (InputError: what the runner
    itself refuses, with its message)."""
    out = RecipeLaunch()
    values: dict = {}  # dest -> (value or None when unknown, token)
    trailing: list = []
    tokens = list(found.tokens)
    i = 0
    while i < len(tokens):
        t = tokens[i]
        text = t.text
        if text is None:
            if t.multi:
                out.unknown_keys.append(("", f"line {t.line}: {t.what or 'an expansion'} on the run_recipe.py line is "
                                             "not known statically: it may hold any flag or override"))
            else:
                trailing.append((None, t))
            i += 1
            continue
        name, eq, joined = text.partition("=")
        if text.startswith("-") and name in _SWITCHES:
            out.switches[_SWITCHES[name]] = True
            i += 1
            continue
        opt = _BY_FLAG.get(name) if text.startswith("-") else None
        if opt is not None:
            if eq:
                value, vtok, i = joined, t, i + 1
            elif i + 1 < len(tokens):
                vtok = tokens[i + 1]
                value, i = vtok.text, i + 2
                if value is not None and value.startswith("-") and not _number(value):
                    raise _problem(found, t, f"argument {'/'.join(opt[1])}: expected one argument")
            else:
                raise _problem(found, t, f"argument {'/'.join(opt[1])}: expected one argument")
            if value is not None and opt[3] is not str:
                try:
                    opt[3](value)
                except ValueError:
                    raise _problem(found, vtok, f"argument {'/'.join(opt[1])}: invalid {opt[3].__name__} value: {value!r}") from None
            values[opt[0]] = (value, t)
            continue
        trailing.append((text, t))
        i += 1
    if "help" in out.switches:
        out.notes.append("run_recipe.py --help prints its help and exits: nothing is trained")
    if ("model" in values) == ("recipe" in values):
        which = "both" if "model" in values else "neither"
        raise _problem(found, None, f"give one of --model and --recipe ({which} given: the runner's parser requires exactly one)")
    mode_value = values.get("mode", (None, None))[0]
    if "mode" in values and mode_value is not None and mode_value not in _MODES:
        raise _problem(found, values["mode"][1], f"argument --mode: invalid choice: {mode_value!r} (choose from {', '.join(map(repr, _MODES))})")
    if "recipe" in values:
        name, tok = values["recipe"]
        out.recipe, out.recipe_line = name, tok.line
        if name is not None and mode_value is None and "mode" not in values:
            mode_value = infer_mode(name)
            if mode_value is None:
                raise _problem(found, tok, "Unable to infer training mode; pass --mode or use a conventional --recipe name.")
    else:
        stem, tok = values["model"]
        out.recipe_line = tok.line
        if "mode" not in values:
            raise _problem(found, tok, "Unable to infer training mode; pass --mode or use a conventional --recipe name.")
        if stem is not None and mode_value is not None:
            out.recipe = f"{stem}_{'peft' if mode_value in ('lora', 'dora') else mode_value}_config"
    out.mode = mode_value
    if values.get("dataset"):
        out.notes.append(f"--dataset {values['dataset'][0]}: the runner replaces the recipe's dataset section "
                         "(dataset_utils.build_dataset_config); dataset.* are not modelled")
    for dest, _flags, key, kind in _OPTIONS:  # the convenience overrides first, in the table's order
        if key is None or dest not in values:
            continue
        value, tok = values[dest]
        if value is None:
            out.unknown_keys.append((key, f"line {tok.line}: {'/'.join(_flags)} {tok.what or 'value'} is not known statically"))
            continue
        shown = _json_string(value) if kind is str else str(kind(value))
        out.overrides.append((f"{key}={shown}", tok.line))
    for text, tok in trailing:
        if text is None:
            prefix = _known_key(tok)
            if prefix:
                out.unknown_keys.append((prefix, f"line {tok.line}: {prefix}={tok.what or '...'}: its value is not known statically"))
            else:
                out.unknown_keys.append(("", f"line {tok.line}: {tok.what or 'a word'} on the run_recipe.py line is not "
                                             "known statically: it may be any override"))
            continue
        if text.startswith("-"):
            raise _problem(found, tok, f"Unknown option: {text}")
        if "=" not in text:
            raise _problem(found, tok, f"Expected override in KEY=VALUE form, got {text!r}")
        out.overrides.append((text, tok.line))
    return out


def sync_sequence_length(cfg) -> None:
    """What the runner does to the merged config before it validates it: ``sync_model_dataset_sequence_length``
    (Megatron-Bridge 067f987 ``scripts/training/recipe_runner.py:471-486``, called at ``run_recipe.py:515``, after
    the overrides): with a model and a dataset, the model's ``seq_length`` becomes the dataset's (``seq_length``,
    else ``sequence_length``) when that is not None. The value keeps the layer that wrote the dataset's; an
    unknown dataset length leaves the model's unknown too."""
    model, dataset = cfg.data.get("model"), cfg.data.get("dataset")
    if not isinstance(model, dict) or not isinstance(dataset, dict):
        return
    for key in ("seq_length", "sequence_length"):
        path = ("dataset", key)
        if path in cfg.unknown:
            cfg.unknown = {**cfg.unknown, ("model", "seq_length"): cfg.unknown[path]}
            return
        if dataset.get(key) is not None:
            model["seq_length"] = dataset[key]
            if path in cfg.layers:
                cfg.layers[("model", "seq_length")] = cfg.layers[path]
            return


def infer_mode(recipe: str) -> Optional[str]:
    """The training mode a conventional recipe name encodes (recipe_metadata.py:214-225)."""
    n = f"_{recipe.lower().strip('_')}_"
    if "_pretrain_" in n:
        return "pretrain"
    if "_sft_" in n or "_finetune_" in n:
        return "sft"
    if "_dora_" in n:
        return "dora"
    if "_peft_" in n or "_lora_" in n:
        return "lora"
    return None


def _json_string(value: str) -> str:
    import json

    return json.dumps(value)


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _known_key(token) -> str:
    """``model.x`` of an override word ``model.x=$UNKNOWN`` (its known text before the ``=``), else ''."""
    head, eq, _ = (token.prefix or "").partition("=")
    return head if eq and head and not head.startswith("-") else ""



def mode_note(mode: Optional[str], recipe_scheme: Optional[str]) -> Optional[str]:
    """A note when ``--mode lora|dora`` makes the runner build a PEFT recipe with another scheme than the
    catalog's recipe was built with (``recipe_scheme``: the recipe's default ``peft_scheme``; None when the
    recipe has no PEFT section: recipe_runner.py ``_load_with_optional_kwargs`` passes ``peft_scheme`` only to
    a recipe that takes it), else None: the catalog's recipe is then exactly what the runner builds."""
    if mode not in ("lora", "dora") or recipe_scheme is None or mode == recipe_scheme:
        return None
    return (f"--mode {mode}: the runner builds the recipe with peft_scheme={mode!r}; the catalog's recipe was "
            f"built with its default {recipe_scheme!r}: its peft section is not what runs")
