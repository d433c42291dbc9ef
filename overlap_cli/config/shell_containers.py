"""Container runtimes a launch line runs through (``launchers.LaunchFinder.skip_prefix_command``): the words
of ``shifter``, ``apptainer|singularity exec``, ``docker|podman run``, ``enroot start`` and their options, up
to the command the container runs. The container runs that command with its arguments unchanged, so the
launch is read from there on; the image and the runtime's options decide nothing Megatron-LM reads.

Each runtime's options that take a value written apart (``--bind SRC:DST``) are listed from its usage;
``--opt=value`` is one word whatever the option. Pyxis' ``srun --container-image=...`` needs nothing here:
its options are srun's (``launchers._SRUN_VALUE``). ``bcprun --cmd STRING`` (NGC Base Command) hands a
string to a shell; ``bcprun_command`` finds it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

# shifter [-h] [-v] [--image=TYPE:TAG] [-E] [-e VAR=VALUE] [--env-file=FILE] [-V SRC:DST] [-m MODULES]
#         [--entrypoint[=CMD]] [--workdir[=DIR]] [--] COMMAND [ARGS] (shifter --help)
_SHIFTER_VALUE = frozenset(("--image", "-e", "--env", "--env-file", "-V", "--volume", "-m", "--module"))
# apptainer exec [exec options...] IMAGE COMMAND [ARGS] (apptainer exec --help; singularity's are the same)
_APPTAINER_VALUE = frozenset((
    "-B", "--bind", "--env", "--env-file", "-H", "--home", "-W", "--workdir", "--pwd", "-o", "--overlay",
    "-S", "--scratch", "--security", "--network", "--network-args", "--app", "--mount", "--hostname", "--dns",
    "--fusemount", "--drop-caps", "--add-caps", "--apply-cgroups", "--cpus", "--cpu-shares", "--cpuset-cpus",
    "--cpuset-mems", "--memory", "--memory-reservation", "--memory-swap", "--pids-limit", "--blkio-weight",
    "--blkio-weight-device", "--pem-path", "--passphrase", "--uid", "--gid", "--config", "--device", "--cdi-dirs",
))
# docker run [OPTIONS] IMAGE [COMMAND] [ARG...]: every option takes a value except these flags
# (docker run --help; podman's are the same for what a launch line uses)
_DOCKER_FLAGS = frozenset((
    "--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--privileged", "--init", "--read-only",
    "-P", "--publish-all", "--no-healthcheck", "--oom-kill-disable", "-q", "--quiet", "--help", "--sig-proxy",
    "--disable-content-trust", "--use-api-socket",
))
_DOCKER_SHORT_FLAGS = frozenset("ditPq")  # -it, -dit: short flags written together
# enroot start [--conf CONFIG] [--env ENV] [--mount MOUNT] [--root] [--rw] [--] NAME|IMAGE [COMMAND] [ARG...]
_ENROOT_VALUE = frozenset(("-c", "--conf", "-e", "--env", "-m", "--mount"))
# bcprun --nnodes N --npernode M [--env VAR=VALUE] [--workdir DIR] [--launcher CMD] --cmd STRING
_BCPRUN_COMMAND = ("-c", "--cmd")
CONTAINER_RUNTIMES = frozenset(("shifter", "apptainer", "singularity", "docker", "podman", "nvidia-docker", "enroot"))


def skip_container(finder, fields: list, i: int, base: str) -> Optional[int]:
    """The index of the command a container runtime at ``fields[i]`` (basename ``base``) runs, or None when
    ``fields[i]`` starts no container command (``docker pull``, ``apptainer build`` run nothing of the line)."""
    n = len(fields)
    sub = finder.static_text(fields[i + 1]) if i + 1 < n else None
    if base == "shifter":
        return _after_dashes(finder, fields, finder.skip_options(fields, i + 1, _SHIFTER_VALUE))
    if base in ("apptainer", "singularity") and sub == "exec":
        return _after_image(finder, fields, finder.skip_options(fields, i + 2, _APPTAINER_VALUE))
    if base in ("docker", "podman", "nvidia-docker") and sub == "run":
        return _after_image(finder, fields, _skip_docker_options(finder, fields, i + 2))
    if base == "enroot" and sub == "start":
        at = _after_dashes(finder, fields, finder.skip_options(fields, i + 2, _ENROOT_VALUE))
        return _after_dashes(finder, fields, _after_image(finder, fields, at))
    return None


def bcprun_command(finder, fields: list, i: int) -> Optional[int]:
    """The index of the string ``bcprun ... --cmd STRING`` runs (``fields[i]`` is ``bcprun``), or None."""
    for k in range(i + 1, len(fields) - 1):
        if finder.static_text(fields[k]) in _BCPRUN_COMMAND:
            return k + 1
    return None


def _after_dashes(finder, fields: list, at: int) -> int:
    return at + 1 if at < len(fields) and finder.static_text(fields[at]) == "--" else at


def _after_image(finder, fields: list, at: Optional[int]) -> Optional[int]:
    """The word after the image (or container name) at ``at``; None when the line ends there."""
    if at is None or at + 1 >= len(fields):
        return None
    return at + 1


def _skip_docker_options(finder, fields: list, i: int) -> int:
    n = len(fields)
    while i < n:
        t = finder.static_text(fields[i])
        if t is None:
            prefix = finder.known_prefix(fields[i])
            if prefix.startswith("-") and "=" in prefix:  # -e=$VAR / --env=$VAR: one word
                i += 1
                continue
            return i
        if not t.startswith("-") or t == "-":
            return i
        i += _docker_words(t)
    return i


def _docker_words(option: str) -> int:
    """How many words a docker run option takes: a flag or ``--opt=value`` one, any other option two."""
    if "=" in option or option in _DOCKER_FLAGS or (not option.startswith("--") and set(option[1:]) <= _DOCKER_SHORT_FLAGS):
        return 1
    return 2


def bcprun_sizes(finder, fields: list, upto: int) -> Optional[tuple]:
    """(the bcprun word's index, its --nnodes, its --npernode: literal integers or None) of the words before
    ``upto``, or None when no ``bcprun`` starts them."""
    at = next((k for k in range(upto) if (finder.static_text(fields[k]) or "").rsplit("/", 1)[-1] == "bcprun"), None)
    if at is None:
        return None
    sizes = {"--nnodes": None, "--npernode": None}
    short = {"-n": "--nnodes", "-p": "--npernode"}
    for k in range(at + 1, upto - 1):
        name = finder.static_text(fields[k]) or ""
        name = short.get(name, name)
        value = finder.static_text(fields[k + 1]) or ""
        if name in sizes and value.isdigit() and int(value) > 0:
            sizes[name] = int(value)
    return at, sizes["--nnodes"], sizes["--npernode"]


def docker_env(finder, fields: list, upto: int) -> Optional[tuple]:
    """``docker|podman run`` before ``upto``: (its index, [(NAME, value | None: the client's own NAME), ...],
    whether an ``--env-file`` adds more); None without one. The container starts with the image's environment
    and these only (docker run --help: -e, --env, --env-file), not the exported variables of the script."""
    at = next((k for k in range(upto - 1) if (finder.static_text(fields[k]) or "").rsplit("/", 1)[-1]
               in ("docker", "podman", "nvidia-docker") and finder.static_text(fields[k + 1]) == "run"), None)
    if at is None:
        return None
    given: list = []
    env_file = False
    k = at + 2
    while k < upto:
        t = finder.static_text(fields[k])
        if t is None or not t.startswith("-"):
            break
        name, eq, joined = t.partition("=")
        if name in ("-e", "--env"):
            value = joined if eq else (finder.static_text(fields[k + 1]) if k + 1 < upto else None)
            if value is not None:
                var, has, val = value.partition("=")
                given.append((var, val if has else None))
            k += 1 if eq else 2
            continue
        if name.startswith("-e") and not name.startswith("--") and len(name) > 2:  # -eNAME=VALUE
            var, has, val = t[2:].partition("=")
            given.append((var, val if has else None))
            k += 1
            continue
        env_file = env_file or name == "--env-file"
        k += _docker_words(t)
    return at, given, env_file
