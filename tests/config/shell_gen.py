"""Seeded random launch scripts for the bash differential test (test_shell_bash.py).

Each script builds Megatron-LM flags the ways launch scripts do — arrays, ``+=``, strings with continuation
lines, ``if`` / ``elif`` / ``case`` / ``[[ ]]`` / ``(( ))`` / ``&&`` on values the script states and on
variables from the caller's environment, ``${VAR:-default}`` forms, ``for`` loops over literal words,
functions, arithmetic — and launches ``pretrain_gpt.py`` through torchrun, ``python -m
torch.distributed.run``, python, srun, a launcher in a variable, ``uv run``, ``nsys profile`` or ``env``, the
script's path in a variable or not, after ``cd $DIR &&`` or not, with exports, plain assignments and
prefixes. ``env_domains`` names each environment variable the flags depend on, the values worth trying
(None: unset) and whether the script reads it through a ``${VAR:-default}`` form: every way through the
script is one choice of them (each variable is read by one condition only).
"""

from __future__ import annotations

import random

# (flag, values it may take; None: a switch)
FLAGS = (
    ("--tensor-model-parallel-size", ("1", "2", "4")),
    ("--pipeline-model-parallel-size", ("1", "2")),
    ("--num-layers", ("4", "8", "12")),
    ("--hidden-size", ("64", "128")),
    ("--micro-batch-size", ("1", "2")),
    ("--global-batch-size", ("16", "32")),
    ("--seq-length", ("128", "256")),
    ("--profile-step-start", ("3", "5")),
    ("--sequence-parallel", None),
    ("--overlap-grad-reduce", None),
    ("--overlap-param-gather", None),
    ("--use-distributed-optimizer", None),
    ("--fp8-param-gather", None),
    ("--profile", None),
    ("--bf16", None),
    ("--tp-comm-overlap", None),
)


class Script:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.lines: list = ["#!/bin/bash", f"# generated, seed {seed}"]
        self.uses: list = []  # what the launch line passes: "${A[@]}", $S, ...
        self.env_domains: dict = {}
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def flag_words(self, k: int = None) -> list:
        rng = self.rng
        out = []
        for _ in range(k if k is not None else rng.randint(1, 3)):
            flag, values = rng.choice(FLAGS)
            out.append(flag if values is None else f"{flag} {rng.choice(values)}")
        return out

    def env_var(self, values: tuple, default: bool = False) -> str:
        name = self.name("ENV_")
        self.env_domains[name] = ((None,) + values, default)
        return name

    # --- pieces ---

    def array(self) -> str:
        a = self.name("ARGS_")
        words = self.flag_words()
        if self.rng.random() < 0.5:
            self.lines.append(f"{a}=(")
            self.lines.extend(f"    {w}" for w in words)
            self.lines.append(")")
        else:
            self.lines.append(f"{a}=({' '.join(words)})")
        self.uses.append(self.rng.choice((f'"${{{a}[@]}}"', f"${{{a}[@]}}")))
        return a

    def string(self) -> None:
        s = self.name("OPTS_")
        words = self.flag_words(self.rng.randint(1, 4))
        if self.rng.random() < 0.5:
            body = " \\\n    ".join(words)
            self.lines.append(f'{s}=" \\\n    {body}"')
        else:
            self.lines.append(f'{s}="{" ".join(words)}"')
        self.uses.append(self.rng.choice((f"${s}", f"${{{s}}}")))

    def literal_if(self) -> None:
        rng = self.rng
        a = self.array()
        v = self.name("MODE_")
        value = rng.choice(("big", "small", "8B", "800M"))
        self.lines.append(f'{v}="{value}"')
        test = rng.choice((
            f'[ "${v}" = big ]', f'[[ ${v} == big ]]', f'test "${v}" != small', f'[[ "${v}" == 8* ]]',
            f'[ -n "${v}" ]', f'[ -z "${{{v}}}" ]', f'[[ ${v} = *M && -n ${v} ]]'))
        self.lines.append(f"if {test}; then")
        self.lines.append(f"    {a}+=({' '.join(self.flag_words())})")
        if rng.random() < 0.5:
            self.lines.append(f'elif [ "${v}" = small ]; then')
            self.lines.append(f"    {a}+=({' '.join(self.flag_words())})")
        if rng.random() < 0.5:
            self.lines.append("else")
            self.lines.append(f"    {a}+=({' '.join(self.flag_words())})")
        self.lines.append("fi")

    def arith_if(self) -> None:
        a = self.array()
        v = self.name("N_")
        self.lines.append(f"{v}={self.rng.randint(0, 4)}")
        op = self.rng.choice(("(( {v} > 2 ))", "[ ${v} -ge 2 ]", "[[ ${v} -lt 3 ]]", "(( {v} % 2 == 0 ))"))
        self.lines.append(f"if {op.format(v=v)}; then {a}+=({' '.join(self.flag_words())}); fi")

    def unknown_if(self) -> None:
        rng = self.rng
        a = self.array()
        kind = rng.randint(0, 3)
        if kind == 0:
            e = self.env_var(("1",))
            self.lines.append(f'if [ -n "${e}" ]; then')
        elif kind == 1:
            e = self.env_var(("1", "0"))
            self.lines.append(f'if [ "${{{e}}}" = 1 ]; then')
        elif kind == 2:
            e = self.env_var(("yes",))
            self.lines.append(f'if [[ ${e} == y* ]]; then')
        else:
            e = self.env_var(("1",))
            self.lines.append(f'if test -z "${e}"; then')
        same = rng.random() < 0.3
        words = self.flag_words()
        self.lines.append(f"    {a}+=({' '.join(words)})")
        if same or rng.random() < 0.5:
            self.lines.append("else")
            self.lines.append(f"    {a}+=({' '.join(words if same else self.flag_words())})")
        self.lines.append("fi")

    def whole_array_in_if(self) -> None:
        """One optional branch rewrites the whole array with extra elements (ARR=("${ARR[@]}" more))."""
        a = self.array()
        default = self.rng.random() < 0.5
        e = self.env_var(("1",), default)
        self.lines.append(f'if [ "${{{e}:-0}}" = 1 ]; then' if default else f'if [ -n "${e}" ]; then')
        self.lines.append(f'    {a}=(')
        self.lines.append(f'        "${{{a}[@]}}"')
        self.lines.extend(f"        {w}" for w in self.flag_words())
        self.lines.append("    )")
        self.lines.append("fi")

    def literal_case(self) -> None:
        rng = self.rng
        v, t = self.name("SCALE_"), self.name("TP_")
        self.lines.append(f'{v}="{rng.choice(("800M", "8B", "70B"))}"')
        self.lines.append(f'case "${{{v}}}" in')
        self.lines.append(f'    "800M") {t}=1 ;;')
        self.lines.append(f'    8B|70B)\n        {t}=4\n        ;;')
        self.lines.append("    *) exit 1 ;;")
        self.lines.append("esac")
        self.uses.append(f"--tensor-model-parallel-size ${t}")

    def unknown_case(self) -> None:
        a = self.array()
        e = self.env_var(("a", "b", "zzz"))
        self.lines.append(f'case "${e}" in')
        self.lines.append(f"    a) {a}+=({' '.join(self.flag_words())}) ;;")
        self.lines.append(f"    b) {a}+=({' '.join(self.flag_words())}) ;;")
        self.lines.append("esac")

    def and_or(self) -> None:
        a = self.array()
        if self.rng.random() < 0.5:
            e = self.env_var(("1",))
            self.lines.append(f'[ -z "${e}" ] && {a}+=({" ".join(self.flag_words())})')
        else:
            self.lines.append(f'[ 2 -gt 1 ] && {a}+=({" ".join(self.flag_words())}) || {a}+=(--bf16)')

    def defaults(self) -> None:
        rng = self.rng
        v = self.name("D_")
        flag, values = rng.choice([f for f in FLAGS if f[1] is not None])
        value, other = rng.sample(values, 2) if len(values) > 1 else (values[0], values[0])
        if rng.random() < 0.3:
            self.env_domains[f"{v}_SET"] = ((None, other), True)
            self.lines.append(f": ${{{v}_SET:={value}}}")
            self.uses.append(f"{flag} ${v}_SET")
            return
        self.env_domains[f"{v}_IN"] = ((None, other), True)
        form = rng.choice((f"${{{v}_IN:-{value}}}", f'${{{v}_IN:-"{value}"}}', f"${{{v}_IN-{value}}}",
                           f"${{{v}_IN:-'{value}'}}"))
        self.lines.append(f"{v}={form}")
        self.uses.append(f'{flag} "${v}"')

    def loop(self) -> None:
        a = self.name("ARGS_")
        self.lines.append(f"{a}=()")
        switches = [f[0] for f in FLAGS if f[1] is None]
        picked = self.rng.sample(switches, 2)
        self.lines.append(f"for f in {' '.join(picked)}; do")
        self.lines.append(f'    {a}+=("$f")')
        self.lines.append("done")
        self.uses.append(f'"${{{a}[@]}}"')

    def counter(self) -> None:
        v = self.name("C_")
        self.lines.append(f"{v}=1")
        self.lines.append(self.rng.choice((f"(({v}++))", f"let {v}={v}+1", f"{v}=$(({v} + 1))")))
        self.uses.append(f"--micro-batch-size ${v}")

    def function(self) -> None:
        a = self.name("ARGS_")
        self.lines.append(f"{a}=()")
        self.lines.append(f'add_{a}() {{\n    {a}+=("$@")\n}}')
        self.lines.append(f"add_{a} {' '.join(self.flag_words())}")
        self.uses.append(f'"${{{a}[@]}}"')

    def noise(self) -> None:
        self.lines.append(self.rng.choice((
            'echo "starting"', 'mkdir -p "$OUT_DIR" || exit 1', "# a comment", 'DATE=$(date +%s)',
            'export NCCL_DEBUG=INFO', 'NCCL_IB_TIMEOUT=19', 'export CUDA_DEVICE_MAX_CONNECTIONS=1',
            '[ -d /nonexistent ] && echo there')))

    PIECES = ("array", "string", "literal_if", "arith_if", "unknown_if", "whole_array_in_if", "literal_case",
              "unknown_case", "and_or", "defaults", "loop", "counter", "function", "noise")

    # --- the launch ---

    def launch(self) -> None:
        rng = self.rng
        meg_form = rng.randint(0, 4)
        if meg_form in (1, 2):
            self.lines.append("MEG=/opt/megatron" if meg_form == 1 else "MEG=${MEGATRON_DIR:-/opt/megatron}")
        script = rng.choice(("pretrain_gpt.py", "${MEG}/pretrain_gpt.py", "$MEG/pretrain_gpt.py",
                             '"$MEG"/pretrain_gpt.py', '"${MEG}/pretrain_gpt.py"', "${MEG:-.}/pretrain_gpt.py"))
        nproc = rng.choice(("2", "4", "8"))
        kind = rng.randint(0, 8)
        if kind == 0:
            head = f"torchrun --nproc_per_node {nproc} --nnodes {rng.choice(('1', '2'))}"
        elif kind == 1:
            head = f"python -m torch.distributed.run --nproc-per-node={nproc}"
        elif kind == 2:
            head = rng.choice(("python", "python3 -u"))
        elif kind == 3:
            head = f"srun -N 2 --ntasks-per-node={nproc} python"
        elif kind == 4:
            self.lines.append(f'LAUNCHER="torchrun --nproc_per_node {nproc}"')
            head = "$LAUNCHER"
        elif kind == 5:
            head = f"uv run python -m torch.distributed.run --nproc_per_node {nproc}"
        elif kind == 6:
            head = f"nsys profile -o prof --trace=cuda torchrun --nproc_per_node {nproc}"
        elif kind == 7:
            head = f"env NVTE_X=1 torchrun --nproc_per_node={nproc}"
        else:
            head = f"NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun --nproc-per-node {nproc}"
        if rng.random() < 0.2:
            head = "cd $WORK_DIR && " + head
        uses = list(self.uses)
        rng.shuffle(uses)
        sep = rng.choice((" ", " \\\n    "))
        self.lines.append(f"{head} {script}{sep}" + sep.join(uses) if uses else f"{head} {script}")


def _ways(s: Script) -> int:
    n = 1
    for values, _default in s.env_domains.values():
        n *= len(values)
    return n


def generate(seed: int) -> Script:
    s = Script(seed)
    rng = s.rng
    for _ in range(rng.randint(2, 7)):
        getattr(s, rng.choice(Script.PIECES))()
    while _ways(s) > 48:  # each way is a bash run
        s = Script(seed + 100_000 * len(s.env_domains))
        rng = s.rng
        for _ in range(rng.randint(2, 6)):
            getattr(s, rng.choice(Script.PIECES))()
    s.launch()
    return s
