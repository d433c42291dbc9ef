"""The ways a training run is written, as a registry: one module per input form, each with the same small
surface, so that everything after reading a file — the engine, the fix loop, the annotator, the reports —
exists once (check-jsonschema keeps each file format in one parser keyed by file type the same way).

A form module defines:

- ``NAME`` (the form, as ``overlap check --format json`` reports it) and ``FRAMEWORK`` (which rules check
  it: ``rules.registry`` BRIDGE / MEGATRON_LM / ...);
- ``recognise(path, head) -> bool``: whether a file is written in this form, from its path and the head of
  its text (``head`` is None when the file cannot be read: the form that claims the path then reports it);
- ``load(path, text, target, overrides, lower) -> forms.base.Run``: the one input model — what runs, where
  it runs, where each value was written. A form may hand the file to another form (a launch script that
  runs Bridge's ``run_recipe.py`` is loaded by ``recipe_launch``); the run names the form that loaded it;
- ``resolve(run, findings_for) -> forms.base.Answer``: the effective values, the resolved view the rules
  read, and the findings (``findings_for(view)`` runs the rules and the selection), placed in the file;
- ``edit_round(current, findings, checked, comments) -> (text, applied, skipped)`` and
  ``FIX_TEXT`` hooks: how ``overlap fix`` places a fix's edits in this form and proves them
  (``fix.loop`` drives the rounds for every form);
- ``annotate(checked) -> str``: ``overlap check --annotate``'s copy of the file;
- ``discover(path, explicit, context) -> Verdict``: what a folder walk (or a file named explicitly) does
  with a file of this form.

``FORMS`` lists them in the order they are asked: the first whose ``recognise`` says yes reads the file.
A form added later is one module here plus one line in ``FORMS``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

# In the order they are asked, each with the file names it can claim (the registry skips a form whose
# names cannot match before importing it: a YAML check imports no launch reader): "py" a Python run spec,
# "yaml" a *.yaml / *.yml file, "not-yaml" any other file, "any" everything. bridge_yaml comes last: a
# file no other form claims is read as a Megatron-Bridge config (the loader then says what is wrong with it).
FORMS = (
    ("python_run", "py"),  # a Bridge run written in Python: FILE.py, FILE.py::FUNCTION
    ("launch_script", "not-yaml"),  # a launch script (hands run_recipe.py launches to recipe_launch)
    ("mlm_test_yaml", "yaml"),  # Megatron-LM's functional-test YAML (MODEL_ARGS)
    ("nemo_rl", "yaml"),  # NeMo-RL's configs whose policy trains with Megatron (policy.megatron_cfg)
    ("bridge_yaml", "any"),  # a Bridge dump, override file or the GPTModelConfig form
)
# Forms no file is recognised as: another form hands a file to them after reading it.
HANDED_OVER = ("recipe_launch",)

def module(name: str):
    """The form module ``name``, imported on first use (a check imports only the forms it meets)."""
    if name == "python_run":
        from overlap_cli.forms import python_run as form
    elif name == "launch_script":
        from overlap_cli.forms import launch_script as form
    elif name == "mlm_test_yaml":
        from overlap_cli.forms import mlm_test_yaml as form
    elif name == "nemo_rl":
        from overlap_cli.forms import nemo_rl as form
    elif name == "recipe_launch":
        from overlap_cli.forms import recipe_launch as form
    elif name == "bridge_yaml":
        from overlap_cli.forms import bridge_yaml as form
    else:
        raise KeyError(name)
    return form


def _kind(path: Optional[str]) -> str:
    """Which names of FORMS ``path`` is: "py", "yaml" or "not-yaml"."""
    if path is None:
        return "none"
    from overlap_cli.frameworks.detect import is_python

    if is_python(path):
        return "py"
    low = path.lower()
    return "yaml" if low.endswith((".yaml", ".yml")) else "not-yaml"


def file_of(spec: str) -> str:
    """The file a run spec names: ``FILE.py::FUNCTION`` names FILE; any other spec is its file."""
    from overlap_cli.frameworks.detect import split_spec

    return split_spec(spec)[0]


def form_of(path: Optional[str], text: Optional[str] = None, forced: Optional[str] = None):
    """The form module that reads ``path`` (``text``: its content when already read). ``forced``: the
    framework the user named (``--framework bridge|megatron-lm``): a Megatron-LM input is then a
    functional-test YAML by its suffix, else a launch script; a Bridge input a Python run or a YAML config."""
    from overlap_cli.frameworks.detect import BRIDGE, MEGATRON_LM, YAML_SUFFIXES, head_of

    if forced == MEGATRON_LM:
        yaml = path is not None and path.lower().endswith(YAML_SUFFIXES)
        return module("mlm_test_yaml" if yaml else "launch_script")
    if forced == BRIDGE:
        return module("python_run" if module("python_run").recognise(path, None) else "bridge_yaml")
    kind = _kind(path)
    head = None
    if text is not None:
        head = text
    elif kind not in ("py", "none"):
        raw = head_of(path)
        head = raw.decode("utf-8", "replace") if raw is not None else None
    for name, names in FORMS:
        if names not in ("any", kind):
            continue
        form = module(name)
        if form.recognise(path, head):
            return form
    return module("bridge_yaml")


def by_name(name: str):
    """The form module whose NAME is ``name`` (JSON, docs)."""
    for n in [n for n, _ in FORMS] + list(HANDED_OVER):
        if module(n).NAME == name:
            return module(n)
    raise KeyError(name)
