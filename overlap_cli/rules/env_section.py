"""ENV507-ENV510 — the env_vars section itself: launch variables in the wrong section, values and names
Bridge rejects, and (with ``--env-from-shell``) exported variables that override it.
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge import launch_env as le
from overlap_cli.results import Edit, Fix
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding
from overlap_cli.rules.env_common import one_is_fatal, one_serialises_dp, shorten


@rule("ENV507", "launch-variable-misplaced", "error", "A launch variable is written under comm_overlap, ddp or model", fix="crash/unsafe", needs="HAS_ENV_VARS")
def misplaced(view):
    """
    ## What it does
    Flags an environment variable (an UPPER_CASE key, or a known launch variable in any case) written under
    `comm_overlap`, `ddp` or `model`.

    ## Why it matters
    These sections are dataclasses (`CommOverlapConfig`, `DistributedDataParallelConfig`, the model
    provider) with no such field: building them fails with `TypeError: ... got an unexpected keyword
    argument`. Launch variables belong in `env_vars`, which Bridge installs into the process environment
    before anything else runs.

    ## Example
    ```yaml
    comm_overlap:
      tp_comm_overlap: true
      CUDA_DEVICE_MAX_CONNECTIONS: 1
    ```

    ## Fix
    Moves the entry into `env_vars` (upper-casing a known name). **Safe (a) — removes a launch crash**: the value keeps its meaning and
    the section becomes constructible. When `env_vars` already sets the variable to another value the fix
    only removes the misplaced entry and is **unsafe** (which value you meant is your call).
    """
    present = dict(le.env_vars_items(view))
    for section, key, name, value in le.misplaced(view):
        remove_it = Edit("remove", f"{section}.{key}")
        if name in present:
            same = le.bridge_string(present[name]) == le.bridge_string(value)
            fix = Fix(
                "safe" if same else "unsafe",
                f"remove {section}.{key} (env_vars already sets {name}"
                + ("" if same else f"={le.bridge_string(present[name])}") + ")",
                (remove_it,),
            )
        elif "." in name:
            fix = None  # a dotted name cannot be addressed as one key
        else:
            fix = Fix(
                "safe",
                f"move {section}.{key} into env_vars.{name}",
                (Edit("set", f"env_vars.{name}", value, f"launch variable, moved from {section}"), remove_it),
            )
        yield finding(
            view,
            "ENV507",
            "error",
            f"{section}.{key} is a launch variable, not a {section} field: Bridge fails building the section "
            f"(TypeError: unexpected keyword argument); put it in env_vars.{name}",
            f"{section}.{key}",
            fix,
        )


@rule("ENV508", "env-value-not-scalar", "error", "An env_vars value is not a string, number or boolean", needs="HAS_ENV_VARS")
def not_scalar(view):
    """
    ## What it does
    Flags `env_vars` entries whose value is null, a list or a mapping.

    ## Why it matters
    `apply_environment_variables` is the first step of `runtime_config_update` and raises
    `TypeError: Environment variable 'NAME' must have a scalar value, got list.` (config.py:1849); entries
    before it are already installed.

    ## Example
    ```yaml
    env_vars:
      NCCL_SOCKET_IFNAME: [eth0, eth1]   # write "eth0,eth1"
    ```

    ## Fix
    None offered: how a list should be joined (commas, spaces, colons) depends on the variable. Write the
    value as the string the variable expects.
    """
    section = view.cfg.data.get("env_vars")
    if not isinstance(section, dict):
        return
    for name, value in section.items():
        if isinstance(name, str) and name and le.bridge_string(value) is None:
            yield finding(
                view,
                "ENV508",
                "error",
                f"env_vars.{name} is {type(value).__name__ if value is not None else 'null'}: Bridge raises "
                f"TypeError: Environment variable {name!r} must have a scalar value, got {type(value).__name__}.",
                f"env_vars.{name}",
            )


@rule("ENV509", "env-name-invalid", "error", "An env_vars name is empty or not a string", needs="HAS_ENV_VARS")
def bad_name(view):
    """
    ## What it does
    Flags `env_vars` keys that are empty, null or not strings (e.g. a number).

    ## Why it matters
    `apply_environment_variables` raises `ValueError: Environment variable names must be non-empty
    strings.` (config.py:1847) before anything else of the run is set up.

    ## Example
    ```yaml
    env_vars:
      "": 1
    ```

    ## Fix
    None offered: only you know which variable was meant. Name it, or remove the entry.
    """
    section = view.cfg.data.get("env_vars")
    if not isinstance(section, dict):
        return
    for name in section:
        if not isinstance(name, str) or not name:
            yield finding(
                view,
                "ENV509",
                "error",
                f"env_vars has the name {name!r}: Bridge raises ValueError: Environment variable names must be "
                "non-empty strings.",
                f"env_vars.{name}" if name not in (None, "") else "env_vars",
            )


@rule("ENV510", "shell-overrides-env-vars", "warning", "A variable exported in the shell overrides env_vars (--env-from-shell)", needs="HAS_ENV_VARS")
def shell_overrides(view):
    """
    ## What it does
    With `--env-from-shell` (or `env_from_shell = true` in `[tool.overlap]`): warns when a launch variable
    exported in this shell differs from what the target needs, and notes when it silently replaces a
    different `env_vars` value.

    ## Why it matters
    Bridge installs `env_vars` with `os.environ.setdefault` (config.py:1850): an exported value wins, with
    no log line. A `CUDA_DEVICE_MAX_CONNECTIONS=32` left in a login profile defeats the `1` in a Hopper
    recipe. The effective table shows the shell's value with source `shell`.

    ## Example
    Not checked automatically: it needs `CUDA_DEVICE_MAX_CONNECTIONS=32` exported in the shell, and is
    checked with `--gpu h100 --env-from-shell`:
    ```yaml
    model: {tensor_model_parallel_size: 8, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true}
    env_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 1}
    ```
    ```console
    $ export CUDA_DEVICE_MAX_CONNECTIONS=32
    $ overlap check llama3_70b_h100.yaml --gpu h100 --env-from-shell   # env_vars says 1
    ```

    ## Fix
    None offered: the file is right; the launch environment is not, and the tool does not edit shells.
    Unset or change the variable where the job is launched (`overlap env` prints what the target needs).
    """
    f = le.facts(view)
    for e in le.plan(view, all_variables=True):
        if e.shell_value is None:
            continue
        if e.name == le.MAX_CONNECTIONS and e.shell_value == "1" and (one_is_fatal(view, f) or one_serialises_dp(f)):
            continue  # ENV503 / ENV504
        need = e.need
        if need is not None and need.value is not None and not le.serves(need, e.shell_value):
            yield finding(
                view,
                "ENV510",
                "warning",
                f"{e.name}={shorten(e.shell_value)} is exported in the shell and wins over env_vars; the target needs "
                f"{need.value}: {need.reason}",
                f"env_vars.{e.name}",
            )
        elif e.in_file and e.file_value is not None and e.file_value != e.shell_value:
            yield finding(
                view,
                "ENV510",
                "info",
                f"env_vars.{e.name}={shorten(e.file_value)} is ignored: the shell exports "
                f"{e.name}={shorten(e.shell_value)}, and Bridge "
                "applies env_vars with setdefault",
                f"env_vars.{e.name}",
            )
