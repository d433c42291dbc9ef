"""NeMo-RL's configs whose policy trains with Megatron (``policy.megatron_cfg``; NeMo-RL's
``examples/configs/**/*.yaml``): NeMo-RL builds Bridge's ConfigContainer itself, without a
CommOverlapConfig, a mixed-precision recipe or ``runtime_config_update`` (nemo_rl/models/megatron/setup.py),
so this form resolves with NeMo-RL's own rules (frameworks/nemo_rl/) and the RL rule family checks it.

Recognised from the file's shape and its ``defaults:`` chain (frameworks/nemo_rl/recognise.py); a NeMo-RL
config of the DTensor policy is skipped with the reason. The world size is what the cluster section gives the
policy (or a flag / directive, which rank above it). No edit is placed (NeMo-RL's YAML is its launch's input,
and the RL rules offer no fix); ``overlap env`` and ``overlap estimate`` say why they do not apply.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.forms.base import Answer, Run
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.results import Note

NAME = "nemo-rl"
FORM = __name__.rpartition(".")[2]
FRAMEWORK = "nemo-rl"
_YAML = (".yaml", ".yml")


def verdict(path: str, head: Optional[str]):
    """("run", None) | ("skip", reason) for a NeMo-RL config, None for any other file."""
    from overlap_cli.frameworks.nemo_rl.recognise import looks_like_nemo_rl, recognise

    if path is None or not path.lower().endswith(_YAML) or head is None or not looks_like_nemo_rl(head):
        return None
    from overlap_cli.config.safe_read import read_text

    try:
        text = read_text(path)
    except InputError:
        return "run", None  # the check reports what is wrong with the file
    return recognise(path, text)


def recognise(path: Optional[str], head: Optional[str]) -> bool:
    return verdict(path, head) is not None


def discover(path: str, explicit: bool, context) -> tuple:
    """Checked when its policy trains with Megatron; skipped with the deciding key's FILE:LINE when it does
    not (the DTensor policy, a generation-only evaluation config)."""
    from overlap_cli.frameworks.nemo_rl.recognise import sniff

    found = verdict(path, sniff(path))
    if found is not None and found[0] == "skip":
        return "skip", found[1]
    return "check", [path]


def base_problem(target) -> Optional[InputProblem]:
    """The problem of ``--base FILE`` naming a NeMo-RL config (its values are not a Bridge dump's: NeMo-RL
    builds the ConfigContainer itself), or None."""
    from overlap_cli.frameworks.nemo_rl.recognise import sniff

    base = target.get("base") if target is not None else None
    if not base or verdict(base, sniff(base)) is None:
        return None
    return InputProblem(base, "is a NeMo-RL config, not a Megatron-Bridge dump: --base would read it as Bridge's "
                              f"ConfigContainer (class defaults where NeMo-RL sets its own); check it as a file: "
                              f"overlap check {base}", key="--base")


def load(path: str, text: Optional[str], target, overrides, lower) -> Run:
    from overlap_cli.frameworks.nemo_rl.loader import load as load_nemo_rl
    from overlap_cli.frameworks.nemo_rl.recognise import verdict as backend

    if text is None:
        from overlap_cli.config.safe_read import read_text

        text = read_text(path)
    target = target.for_file(path, text)
    if target.get("recipe") or target.get("base"):
        raise InputError(InputProblem(path, "a NeMo-RL config starts from its own `defaults:` chain; --recipe / "
                                            "--base name Megatron-Bridge runs"))
    cfg = load_nemo_rl(path, text, tuple(overrides or ()))
    kind, reason = backend(cfg)
    if kind == "skip":  # the dotlist words turned the Megatron backend off
        raise InputError(InputProblem(path, f"not checked: {reason}"))
    return Run(form=FORM, file=path, text=text, target=target, config=cfg)


def resolve(run: Run, findings_for) -> Answer:
    from overlap_cli.frameworks.nemo_rl.resolver import resolve as resolve_nemo_rl
    from overlap_cli.launch_profile.profile import for_run

    view = resolve_nemo_rl(run.config, run.target)
    target = run.target
    world_note = None
    if view.world_size is None:
        world_note = Note(f"world size not known: {view.world_reason}", "world-size")
    elif view.world_reason.startswith("cluster"):  # the cluster section states the scale, as a launch line does
        target = for_run(target, launch_world_size=view.world_size)
    findings = findings_for(view)
    return Answer(view, dict(view.effective), findings, target, view.dp, world_note=world_note,
                  notes=[Note(n, "left-off") for n in view.notes])


def launch_env(view) -> list:
    raise InputError(InputProblem(
        view.file, "overlap env plans a Megatron-Bridge or Megatron-LM launch; NeMo-RL sets its workers' environment "
                   "itself (policy.megatron_cfg.env_vars, nemo_rl/models/policy/lm_policy.py:147): check it with "
                   "overlap check"))


def edit_round(current: str, findings: list, checked, comments: bool):
    """No RL rule offers a fix; a shared rule's edit is not placed in NeMo-RL's YAML."""
    from overlap_cli.fix.common import Skipped

    return current, [], [Skipped(f, "a NeMo-RL config is edited by hand") for f in findings]


def fix_session(text: str):
    from overlap_cli.fix.common import Session

    return Session(text)


def annotate(checked) -> str:
    from overlap_cli.report.annotate import annotate_after

    return annotate_after(checked, comment="#", spell="yaml")
