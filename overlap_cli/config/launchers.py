"""The launcher of a Megatron-LM launch line: which command runs the training script, and torchrun's sizes.

``find_program`` looks through the expanded words of a command for the wrappers a launch line may carry
(``srun [options]``, ``exec``, ``env NAME=value``, ``nohup``, ``time``, ``numactl``, ``uv run [options]``,
``nsys profile [options]``, container runtimes (``shell_containers``: ``shifter``, ``apptainer exec IMAGE``,
``docker run IMAGE``, ``enroot start NAME``), an unknown unquoted expansion such as ``$PROFILE_CMD``) and then ``torchrun``,
``python -m torch.distributed.run`` / ``.launch``, or ``python[3] ... pretrain_*.py`` (the script's
directory may be anything: ``${MEGATRON}/pretrain_gpt.py``). ``torchrun_options`` reads
torchrun's own options (torch/distributed/run.py ``get_args_parser``: argparse with prefix abbreviations
allowed) up to the training script, and the world size is ``--nproc-per-node`` x ``--nnodes`` when both
are known integers (``determine_local_world_size``, ``parse_min_max_nnodes``).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.config.argv import LaunchText
    from overlap_cli.config.shell_lex import Lexer as Reader  # config.shell_eval.Reader: a script's text, read
    from overlap_cli.config.shell_values import Field



# torch.distributed.run's options that take no value (torch/distributed/run.py get_args_parser); every
# other option takes one. Its parser allows prefix abbreviations (argparse's default).
_TORCHRUN_NO_VALUE = frozenset((
    "--module", "-m", "--no-python", "--no_python", "--run-path", "--run_path", "--standalone",
    "--virtual-local-rank", "--virtual_local_rank", "-h", "--help",
    "--use-env", "--use_env",  # torch.distributed.launch's own (torch/distributed/launch.py)
))
_TORCHRUN_VALUE = (
    "--nnodes", "--nproc-per-node", "--nproc_per_node", "--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint",
    "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--rdzv-conf", "--rdzv_conf", "--max-restarts", "--max_restarts",
    "--monitor-interval", "--monitor_interval", "--start-method", "--start_method", "--role", "--log-dir",
    "--log_dir", "-r", "--redirects", "-t", "--tee", "--local-ranks-filter", "--local_ranks_filter", "--node-rank",
    "--node_rank", "--master-addr", "--master_addr", "--master-port", "--master_port", "--local-addr",
    "--local_addr", "--logs-specs", "--logs_specs", "--numa-binding", "--numa_binding", "--event-log-handler",
    "--event_log_handler", "--signals-to-handle", "--signals_to_handle", "--shutdown-timeout", "--shutdown_timeout",
    "--duplicate-stdout-filters", "--duplicate_stdout_filters", "--duplicate-stderr-filters", "--duplicate_stderr_filters",
)
_TORCHRUN_ALL = tuple(sorted(_TORCHRUN_NO_VALUE | set(_TORCHRUN_VALUE)))
# Python's own options that take a value (python -h).
_PYTHON_VALUE = frozenset(("-W", "-X", "-c", "--check-hash-based-pycs"))
# srun options that take a value when written apart (``-N 2``); long ones as ``--opt=value`` are one word.
_SRUN_VALUE = frozenset((
    "-N", "-n", "-c", "-p", "-t", "-J", "-o", "-e", "-A", "-G", "-w", "-x", "-D", "-C", "-d", "-q", "-m", "-i",
    "--nodes", "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--partition", "--time", "--job-name",
    "--output", "--error", "--account", "--gpus", "--gpus-per-node", "--gpus-per-task", "--gres", "--nodelist",
    "--exclude", "--chdir", "--constraint", "--dependency", "--qos", "--distribution", "--mem", "--mem-per-cpu",
    "--mem-per-gpu", "--mpi", "--export", "--cpu-bind", "--gpu-bind", "--reservation", "--container-image",
    "--container-mounts", "--container-workdir", "--container-name", "--container-env", "--input", "--label-format",
    "--signal", "--network", "--overcommit-limit", "--ntasks-per-socket", "--sockets-per-node", "--threads-per-core",
))



from overlap_cli.config.shell_containers import CONTAINER_RUNTIMES, bcprun_command, skip_container

_WRAPPERS = frozenset(("exec", "nohup", "time", "command", "stdbuf", "setsid", "taskset", "chrt", "nice", "ionice"))
# nsys profile's options that take no value (nsys profile --help); every other option takes one, written
# apart (``-o out``) or joined (``--trace=cuda``).
_NSYS_NO_VALUE = frozenset(("--help", "-h", "--kill-all", "--version", "-v"))
_NUMACTL_VALUE = frozenset(("-N", "-n", "-C", "-m", "-p", "-np", "--cpunodebind", "--membind", "--physcpubind",
                            "--preferred"))


class LaunchFinder:
    """Launch-line recognition over a command's expanded words (``shell_values.Field``), for the shell
    reader (``shell_eval.Reader`` holds one)."""

    @staticmethod
    def static_text(field) -> Optional[str]:
        """A word's text when it is known."""
        return None if field is None else field.text

    def is_launch(self, fields: list) -> bool:
        return self.find_program(fields) is not None

    def find_program(self, fields: list) -> Optional[tuple]:
        """(kind, index of the program word) where kind is "torchrun", "python" or "script" (the index is
        then the training script's word; "script": the launcher before it is not known); None: not a launch.
        An unknown unquoted expansion before the launcher (``$PROFILE_CMD torchrun ...``) is passed over:
        the words after it still name what runs; when they start with the training script itself
        (``${LAUNCHER} ${ROOT}/pretrain_gpt.py``), the words after the script are its arguments whatever
        the launcher is."""
        i, n = 0, len(fields)
        while i < n:
            t = self.static_text(fields[i])
            if t is None:
                if fields[i].multi and i + 1 < n:
                    if self.script_name(fields[i + 1], strict=True):
                        return ("script", i + 1)
                    i += 1
                    continue
                # an interpreter not known statically ("${PYTHON_BIN}" -m torch.distributed.run ...): what it
                # runs is named by the words after it
                if i + 2 < n and self.static_text(fields[i + 1]) == "-m" and \
                        self.static_text(fields[i + 2]) in ("torch.distributed.run", "torch.distributed.launch"):
                    return ("torchrun", i + 2)
                if i + 1 < n and self.script_name(fields[i + 1], strict=True):
                    return ("script", i + 1)
                return None
            base = t.rsplit("/", 1)[-1]
            after = self.skip_prefix_command(fields, i, base)
            if after is not None:
                i = after
                continue
            if base == "nsys" and i + 1 < n and self.static_text(fields[i + 1]) in ("profile", "launch"):
                i = self.skip_nsys_options(fields, i + 2)
                continue
            if base == "uv" and i + 1 < n and self.static_text(fields[i + 1]) == "run":
                i += 2
                while i < n and (self.static_text(fields[i]) or "").startswith("-"):
                    opt = self.static_text(fields[i])
                    i += 2 if opt in ("--extra", "--with", "--group", "--python", "-p", "--project", "--directory",
                                      "--package", "--env-file", "--index") else 1
                continue
            if base == "torchrun":
                return ("torchrun", i)
            if re.fullmatch(r"python(?:\d+(?:\.\d+)?)?", base):
                j = i + 1
                while j < n:
                    tj = self.static_text(fields[j])
                    if tj is None:
                        break
                    if tj == "-m":
                        mod = self.static_text(fields[j + 1]) if j + 1 < n else None
                        if mod in ("torch.distributed.run", "torch.distributed.launch"):
                            return ("torchrun", j + 1)
                        return None
                    if tj.startswith("-m") and tj[2:] in ("torch.distributed.run", "torch.distributed.launch"):
                        return ("torchrun", j)
                    if tj in _PYTHON_VALUE:
                        j += 2
                        continue
                    if tj.startswith("-"):
                        j += 1
                        continue
                    break
                if j < n and self.script_name(fields[j], strict=True):
                    return ("python", j)
                return None
            return None
        return None

    def find_shell_c(self, fields: list) -> Optional[int]:
        """The index of the command string of ``[srun ...] bash|sh [-opts] -c STRING`` (the words before the
        shell as ``find_program`` passes over them: ``srun``, ``env``, ``exec``...), or None."""
        i, n = 0, len(fields)
        while i < n:
            t = self.static_text(fields[i])
            if t is None:
                # an unknown unquoted expansion before the shell (``${SRUN_CMD} --nodes=$N bash -c ...``): passed
                # over with the options after it, as find_program passes over ``$PROFILE_CMD`` (the reader says so)
                if not fields[i].multi:
                    return None
                i += 1
                while i < n and (self.static_text(fields[i]) or self.known_prefix(fields[i])).startswith("-"):
                    i += 1
                continue
            base = t.rsplit("/", 1)[-1]
            after = self.skip_prefix_command(fields, i, base)
            if after is not None:
                i = after
                continue
            if base == "bcprun":
                return bcprun_command(self, fields, i)
            if base in ("bash", "sh"):
                j = i + 1
                while j < n:
                    o = self.static_text(fields[j])
                    if o is None or not o.startswith("-") or o == "--":
                        return None
                    if "c" in o[1:] and not o.startswith("--"):
                        return j + 1 if j + 1 < n else None
                    j += 2 if o in ("-o", "+o", "-O", "+O") else 1
                return None
            return None
        return None

    @staticmethod
    def known_prefix(field) -> str:
        """The word's known characters before its first unknown stretch (``--output=`` of ``--output=$LOG``)."""
        out = []
        for c in field.chars if field is not None else ():
            if c.__class__ is not str:
                break
            out.append(c)
        return "".join(out)

    def skip_prefix_command(self, fields, i: int, base: str):
        """The index after a command that runs the rest of the line (a wrapper such as ``uv run``,
        ``env VAR=... -i``, ``srun`` / ``numactl`` / ``mpirun`` with their options) at ``fields[i]``,
        whose basename is ``base``; None when ``fields[i]`` is no such prefix."""
        n = len(fields)
        if base in _WRAPPERS and i + 1 < n:
            i += 1
            while i < n and (self.static_text(fields[i]) or "").startswith("-"):
                i += 1
            return i
        if base == "env":
            i += 1
            while i < n and (_ENV_ASSIGN.match(self.static_text(fields[i]) or "")
                             or (self.static_text(fields[i]) or "").startswith("-")):
                i += 1
            return i
        if base in ("srun", "numactl", "mpirun"):
            return self.skip_options(fields, i + 1, _SRUN_VALUE if base == "srun" else _NUMACTL_VALUE)
        if base in CONTAINER_RUNTIMES:
            return skip_container(self, fields, i, base)
        return None

    def skip_options(self, fields: list, i: int, with_value: frozenset) -> int:
        n = len(fields)
        while i < n:
            t = self.static_text(fields[i])
            if t is None and not fields[i].multi and self.known_prefix(fields[i]).startswith("-") \
                    and "=" in self.known_prefix(fields[i]):
                i += 1  # --output=$LOG: an option with its value joined, whatever the value is
                continue
            if t is None or not t.startswith("-"):
                return i
            i += 2 if (t in with_value and "=" not in t) else 1
        return i

    def skip_nsys_options(self, fields: list, i: int) -> int:
        n = len(fields)
        while i < n:
            t = self.static_text(fields[i])
            if t is None or not t.startswith("-"):
                return i
            i += 1 if ("=" in t or t in _NSYS_NO_VALUE) else 2
        return i

    @staticmethod
    def script_name(field, strict: bool) -> Optional[str]:
        """The training script's file name: the word's tail after its last ``/`` when that is known
        (``$MEGATRON/pretrain_gpt.py``, ``"${ROOT}"/pretrain_gpt.py``); the file name decides what runs, the
        directory does not. A name joined to an unknown without a ``/`` (``$DIR"pretrain_gpt.py"``) is not
        known. ``strict``: only ``pretrain_*.py`` or Megatron-Bridge's ``run_recipe.py`` (a ``python`` launch:
        any other ``python FILE.py`` is not a training launch line)."""
        if field is None or not field.chars:
            return None
        chars = field.chars
        k = len(chars)
        while k > 0 and chars[k - 1] != "/":
            if chars[k - 1].__class__ is not str:
                return None
            k -= 1
        tail = "".join(chars[k:])
        if not tail.endswith(".py"):
            return None
        if strict and not (re.fullmatch(r"pretrain_\w*\.py", tail) or tail == "run_recipe.py"):
            return None
        return tail


_ENV_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def torchrun_options(reader: Reader, found: LaunchText, fields: list, i: int) -> Optional[int]:
    """Read torchrun's own options from field i; returns the index of the training script's field."""
    values: dict = {}
    unknown_opts = False
    n = len(fields)
    while i < n:
        f = fields[i]
        t = f.text
        if t is None and "=" in reader.known_prefix(f) and reader.known_prefix(f).startswith("-"):
            name = reader.known_prefix(f).partition("=")[0]  # --master_addr=$ADDR: an option, its value unknown
            full = _torchrun_option(name)
            if full is not None and full not in _TORCHRUN_NO_VALUE:
                values[full.replace("_", "-")] = (None, f, len(name) + 1)
                i += 1
                continue
        if t is None:
            if f.multi and reader.script_name(f, False) is None:  # ($DIR/pretrain_gpt.py is the script)
                unknown_opts = True
                i += 1
                continue
            break  # an unknown single word where the script goes
        if not t.startswith("-"):
            break
        name, eq, val = t.partition("=")
        full = _torchrun_option(name)
        if full is None:
            found.unknowns.append(f"line {_line(reader, f)}: torchrun option {name} is not one torchrun knows")
            i += 1
            continue
        if full in _TORCHRUN_NO_VALUE:
            i += 1
            if full in ("--no-python", "--no_python", "-m", "--module"):
                pass
            continue
        if eq:
            values[full.replace("_", "-")] = (val, f, len(name) + 1)
            i += 1
            continue
        if i + 1 < n:
            values[full.replace("_", "-")] = (fields[i + 1].text, fields[i + 1], 0)
        i += 2
    _world_size(reader, found, values, unknown_opts)
    return None if i >= n else i


def _world_size(reader: Reader, found: LaunchText, values: dict, unknown_opts: bool) -> None:
    """torchrun's --nproc-per-node x --nnodes (torch/distributed/run.py: determine_local_world_size,
    parse_min_max_nnodes), when both are known integers."""
    sizes: list = []
    lines: list = []
    for option, default in (("--nproc-per-node", None), ("--nnodes", "1")):
        got = values.get(option)
        if got is None:
            if unknown_opts:
                found.unknowns.append(f"{option}: not on the launch line; an expansion not known statically may give it, so the world size is unknown")
                return
            if default is None:
                found.unknowns.append("torchrun has no --nproc-per-node: one process per node unless PET_NPROC_PER_NODE is set; world size unknown")
                return
            sizes.append(int(default))
            continue
        text, f, skip = got
        first = next((o for o in f.offsets if o is not None), None)
        offset = None if first is None else first + skip
        line = reader.pos(offset)[0] if offset is not None else None
        if text is None:
            found.unknowns.append(f"line {line}: {option} {f.what or 'value'} is not known statically; world size unknown")
            return
        text = text[skip:] if skip and f.text == text else text
        if option == "--nnodes" and ":" in text:
            low, _, high = text.partition(":")
            if low.isdigit() and high.isdigit() and low == high:
                text = low
            elif low.isdigit() and high.isdigit():
                found.unknowns.append(f"line {line}: --nnodes {text} is elastic (MIN:MAX); world size unknown")
                return
        if option == "--nproc-per-node" and text in ("gpu", "cpu", "auto", "xpu"):
            found.unknowns.append(f"line {line}: --nproc-per-node {text} is the machine's device count; world size unknown")
            return
        try:
            size = int(text)
        except ValueError:
            raise reader.fail(f"not an integer: {text!r} (torchrun exits: unsupported value)", offset, key=option) from None
        if size < 1:
            raise reader.fail(f"must be a positive integer, got {size}", offset, key=option)
        sizes.append(size)
        lines.append(line)
    found.world_size = sizes[0] * sizes[1]
    found.world_size_line = lines[0] if lines else None


def _line(reader: Reader, f: Field) -> Optional[int]:
    first = next((o for o in f.offsets if o is not None), None)
    return reader.pos(first)[0] if first is not None else None


def _torchrun_option(name: str) -> Optional[str]:
    if name in _TORCHRUN_ALL:
        return name
    if name.startswith("--"):
        hits = [o for o in _TORCHRUN_ALL if o.startswith(name)]
        canonical = {h.replace("_", "-") for h in hits}
        if len(canonical) == 1:
            return hits[0]
    return None


_SBATCH = re.compile(r"^#SBATCH[ \t]+(--nodes|-N|--ntasks-per-node|--ntasks|-n)(?:[ \t]*=[ \t]*|[ \t]+)?(\S+)", re.M)
_SLURM_SIZE_NAMES = {"-N": "nodes", "--nodes": "nodes", "-n": "ntasks", "--ntasks": "ntasks", "--ntasks-per-node": "ntasks-per-node"}


def srun_world_size(reader: "Reader", found: "LaunchText", words: list, upto: int) -> None:
    # words: the launch command's expanded words (Field)
    """``srun`` starting the training script itself (no torchrun): one process per Slurm task, but the world
    size Megatron-LM runs with is ``WORLD_SIZE`` from the process's environment (``parse_args``,
    megatron/training/arguments.py:144; 1 where it is not set), which srun does not set (it exports
    SLURM_NTASKS / SLURM_PROCID, which Megatron-LM does not read for it). So the script's own exported
    WORLD_SIZE decides; without one it comes from the job's environment: unknown, naming srun's task count
    (``--ntasks``, or ``--nodes`` x ``--ntasks-per-node`` — from the srun line, else from the ``#SBATCH``
    directives; literal integers only) for the reader to compare."""
    srun = next((k for k in range(upto) if (reader.static_text(words[k]) or "").rsplit("/", 1)[-1] == "srun"), None)
    if srun is None:
        return
    var = found.env.get("WORLD_SIZE")
    if var is not None and var.how != "assignment":  # exported, or set on the launch line
        if isinstance(var.value, str) and var.value.isdigit() and int(var.value) > 0:
            found.world_size, found.world_size_line = int(var.value), var.line
        else:
            found.unknowns.append(f"line {var.line}: WORLD_SIZE is not known statically; world size unknown")
        return
    sizes: dict = {}
    for m in _SBATCH.finditer(reader.text):
        sizes[_SLURM_SIZE_NAMES[m.group(1)]] = (m.group(2), reader.pos(m.start(2))[0])
    k = srun + 1
    while k < upto:
        t = reader.static_text(words[k]) or ""
        name, eq, value = t.partition("=")
        if not eq and len(name) > 2 and name[:2] in ("-N", "-n") and not name.startswith("--"):
            name, value, eq = name[:2], name[2:], "="  # -N2
        if name in _SLURM_SIZE_NAMES:
            if not eq and k + 1 < upto:
                value = reader.static_text(words[k + 1]) or ""
                k += 1
            sizes[_SLURM_SIZE_NAMES[name]] = (value, _line(reader, words[k]))
        k += 1

    def number(key):
        got = sizes.get(key)
        return int(got[0]) if got and got[0].isdigit() and int(got[0]) > 0 else None

    tasks = number("ntasks")
    where = sizes.get("ntasks")
    if tasks is None and number("nodes") is not None and number("ntasks-per-node") is not None:
        tasks = number("nodes") * number("ntasks-per-node")
        where = sizes.get("ntasks-per-node")
    from overlap_cli.config.entry_points import BRIDGE_RECIPE, classify

    if classify(found.script)[0] == BRIDGE_RECIPE:
        # Bridge's initialize takes the world size from WORLD_SIZE, else from SLURM_NTASKS, which srun sets to
        # its task count (megatron/core/_rank_utils.py:63-68, called at megatron/bridge/training/initialize.py:741)
        if tasks:
            found.world_size, found.world_size_line = tasks, where[1]
        else:
            found.unknowns.append(f"line {_line(reader, words[srun])}: srun starts the training script itself and its "
                                  "task count is not in the script (--ntasks, or --nodes and --ntasks-per-node): "
                                  "Bridge's world size is SLURM_NTASKS (megatron/core/_rank_utils.py:66); unknown")
        return
    count = f" as {tasks} tasks" if tasks else ""
    found.unknowns.append(
        f"line {_line(reader, words[srun])}: srun starts the training script itself{count} and the script exports no "
        "WORLD_SIZE, which parse_args reads (megatron/training/arguments.py:144; srun does not set it): the world "
        "size is the job environment's WORLD_SIZE, 1 where it has none; unknown")

