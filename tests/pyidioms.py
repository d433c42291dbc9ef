"""A seeded generator of Megatron-Bridge training scripts written the ways people write them (one idiom each,
``IDIOMS``), for tests/frameworks/bridge/test_python_idioms_differential.py: each script is executed in the
real Bridge environment (bridge_reference.py, mode ``script`` run as ``__main__``, the config taken where it
is handed to ``pretrain``) and every key ``overlap check SCRIPT`` prints is compared with it.

Each script starts from a recipe's dump (``ConfigContainer.from_yaml``: the recipe functions ask Hugging
Face for their model) and sets the same kinds of values -- parallel sizes, sequence parallelism, the DDP
overlaps, the distributed optimizer, comm_overlap, mixed precision, env_vars -- through its idiom. A few
scripts are ones the real code refuses (an argparse word it does not know, a choice it does not offer): the
tool must refuse them too.

``generate(corpus, count, seed)`` -> [Case]; ``Case.write(folder)`` writes the script and the files beside it
(a YAML override file, a Hydra config folder) and returns the script's path.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional
from pathlib import Path

# (recipe dump, world size): dense and MoE, small and large
BASES = [("llama3_70b_pretrain_64gpu_h100_bf16_config", 64), ("llama32_1b_pretrain_1gpu_h100_bf16_config", 8),
         ("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", 16), ("gemma3_1b_pretrain_1gpu_h100_bf16_config", 8)]

IDIOMS = (
    "module",  # statements at module level
    "main_guard",  # the run built under ``if __name__ == "__main__":``
    "main_function",  # ``def main(): ...`` called from the guard
    "argparse_defaults",  # argparse in a helper, its defaults (types, a string default, store_true/false, set_defaults)
    "argparse_words",  # argparse reading words given to parse_args (=, abbreviations, bad words refused)
    "parse_known_overrides",  # parse_known_args: the words it does not know go to process_config_with_overrides
    "environ",  # os.environ[...] / .get / os.getenv(NAME, default) / "NAME" in os.environ, fed by --set; the script's own export
    "helper_functions",  # helpers of the module taking the config, a nested helper using its enclosing names
    "helper_class",  # a @dataclass of settings and a class whose methods build and change the config
    "recipe_loop",  # a loop over builder names, continue / break, the chosen builder called
    "dict_of_lambdas",  # a mapping of lambdas building configs, chosen by an argparse argument
    "dict_overrides",  # a mapping of override profiles chosen by an argparse argument, applied key by key
    "yaml_overrides",  # process_config_with_overrides with a YAML file beside the script (Path(__file__))
    "omegaconf_from_cli",  # OmegaConf.from_cli(words) read back, and the words as overrides
    "hydra_main",  # @hydra.main with a config folder beside the script
    "argparse_argv",  # argparse reading the script's own command line (sys.argv[1:]), given after ``--``
    "own_module",  # the config built by a module of the user's beside the script (import, from-import, a package)
)

HEAD = """\
import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from megatron.bridge.training.comm_overlap import CommOverlapConfig
from megatron.bridge.training.config import ConfigContainer
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.pretrain import pretrain
from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides
"""


@dataclass
class Case:
    idiom: str
    seed: int
    name: str
    text: str
    world_size: int
    beside: dict = field(default_factory=dict)  # relative path -> text, written next to the script
    environ: dict = field(default_factory=dict)  # the caller's environment: --set for the tool, os.environ for Bridge
    argv: Optional[list] = None  # the script's command line: after ``--`` for the tool, sys.argv[1:] for Bridge

    @property
    def id(self) -> str:
        return f"{self.idiom}-{self.seed}"

    def write(self, folder: Path) -> Path:
        here = folder / self.id
        here.mkdir(parents=True, exist_ok=True)
        for rel, text in self.beside.items():
            (here / rel).parent.mkdir(parents=True, exist_ok=True)
            (here / rel).write_text(text)
        script = here / self.name
        script.write_text(self.text)
        return script


class Settings:
    """The values a script sets, drawn once per script: each idiom writes them its own way."""

    def __init__(self, rnd: random.Random):
        self.tp = rnd.choice([1, 2, 4])
        self.pp = rnd.choice([1, 2])
        self.sp = rnd.choice([True, False]) if self.tp > 1 else False
        self.ogr = rnd.choice([True, False])
        self.opg = rnd.choice([True, False])
        self.dist = rnd.choice([True, False])
        self.comm = rnd.choice(["CommOverlapConfig(tp_comm_overlap=%s)" % rnd.choice([True, False]), "None", None])
        self.mp = rnd.choice(["'bf16_mixed'", None])
        self.cdmc = rnd.choice([1, 8, None])

    def lines(self, var: str = "cfg", tp="TP", pp="PP", sp="SP", ogr="OGR", opg="OPG") -> list:
        """Assignments of the drawn values to ``var``; the sizes through the names given (or literals)."""
        out = [f"{var}.model.virtual_pipeline_model_parallel_size = None",
               f"{var}.model.pipeline_model_parallel_layout = None",
               f"{var}.model.context_parallel_size = 1",
               f"{var}.model.tensor_model_parallel_size = {tp}",
               f"{var}.model.pipeline_model_parallel_size = {pp}",
               f"{var}.model.sequence_parallel = {sp}",
               f"{var}.ddp.overlap_grad_reduce = {ogr}",
               f"{var}.ddp.overlap_param_gather = {opg}",
               f"{var}.ddp.use_distributed_optimizer = {self.dist}",
               f"{var}.optimizer.use_distributed_optimizer = {var}.ddp.use_distributed_optimizer"]
        if self.comm is not None:
            out.append(f"{var}.comm_overlap = {self.comm}")
        if self.mp is not None:
            out.append(f"{var}.mixed_precision = {self.mp}")
        if self.cdmc is not None:
            out.append(f"{var}.env_vars = {{'CUDA_DEVICE_MAX_CONNECTIONS': {self.cdmc}}}")
        return out

    def constants(self) -> list:
        return [f"TP = {self.tp}", f"PP = {self.pp}", f"SP = {self.sp}", f"OGR = {self.ogr}", f"OPG = {self.opg}"]


def _indent(lines: list, n: int = 4) -> list:
    return [" " * n + line if line else line for line in lines]


def _script(*parts) -> str:
    lines = [HEAD]
    for part in parts:
        lines.extend(part if isinstance(part, list) else [part])
    return "\n".join(lines) + "\n"


# -- the idioms ------------------------------------------------------------------------------------


def _module(rnd, s: Settings, dump: str) -> dict:
    return {"text": _script(f"DUMP = {dump!r}", s.constants(), "cfg = ConfigContainer.from_yaml(DUMP)", s.lines(),
                            "pretrain(cfg, forward_step)")}


def _main_guard(rnd, s, dump):
    body = ["cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines() + ["pretrain(config=cfg, forward_step_func=forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", s.constants(), "", 'if __name__ == "__main__":', _indent(body))}


def _main_function(rnd, s, dump):
    body = ["cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines() + ["pretrain(cfg, forward_step)"]
    tail = ["", 'if __name__ == "__main__":', "    main()"] if rnd.random() < 0.8 else ["", "main()"]
    return {"text": _script(f"DUMP = {dump!r}", s.constants(), "", "def main():", _indent(body), tail)}


def _parser_lines(rnd, s: Settings) -> tuple:
    """(the lines building ``parser``, how each value reads from ``args``)."""
    lines = ['parser = argparse.ArgumentParser(description="train")',
             f'parser.add_argument("--tensor-model-parallel", "-t", type=int, default={s.tp})']
    if rnd.random() < 0.5:
        lines.append(f'parser.add_argument("--pipeline", type=int, default="{s.pp}")')  # a string default goes through type
    else:
        lines.append(f'parser.add_argument("--pipeline", dest="pipeline", type=int, default={s.pp}, choices=[1, 2, 4])')
    group = rnd.random() < 0.5
    if group:
        lines.append('overlap = parser.add_argument_group("overlap")')
    owner = "overlap" if group else "parser"
    lines.append(f'{owner}.add_argument("--sequence-parallel", action="store_true")')
    lines.append(f'{owner}.add_argument("--no-grad-overlap", dest="grad_overlap", action="store_false")')
    lines.append(f'{owner}.add_argument("--param-gather", type=str, choices=["on", "off"], default="{"on" if s.opg else "off"}")')
    if s.sp:
        lines.append("parser.set_defaults(sequence_parallel=True)")
    if not s.ogr:
        lines.append("parser.set_defaults(grad_overlap=False)")
    reads = dict(tp="args.tensor_model_parallel", pp="args.pipeline", sp="args.sequence_parallel",
                 ogr="args.grad_overlap", opg='args.param_gather == "on"')
    return lines, reads


def _argparse_defaults(rnd, s, dump):
    lines, reads = _parser_lines(rnd, s)
    helper = ["def get_args():"] + _indent(lines + ["return parser.parse_args()"])
    body = ["args = get_args()", "cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(**reads) + ["pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", "", helper, "", "def main():", _indent(body), "",
                            'if __name__ == "__main__":', "    main()")}


def _words_for(rnd, s: Settings, final: Settings) -> list:
    """Words that take the parser's defaults (``s``) to ``final``'s values."""
    words = []
    if final.tp != s.tp or rnd.random() < 0.3:
        words += rnd.choice([["--tensor-model-parallel", str(final.tp)], [f"--tensor-model-parallel={final.tp}"],
                             ["-t", str(final.tp)], ["--tensor", str(final.tp)]])  # an abbreviation argparse takes
    if final.pp != s.pp:
        words += rnd.choice([["--pipeline", str(final.pp)], [f"--pipeline={final.pp}"]])
    if final.sp and not s.sp:
        words.append("--sequence-parallel")
    if not final.ogr and s.ogr:
        words.append("--no-grad-overlap")
    if final.opg != s.opg:
        words += ["--param-gather", "on" if final.opg else "off"]
    return words


def _parser_and_words(rnd, s: Settings, refusals: list) -> tuple:
    """(parser lines, reads, words): the parser's defaults are ``s``'s, the words take it to newly drawn values
    (which ``s`` then holds); one in ten adds words argparse refuses (one of ``refusals``)."""
    final = Settings(rnd)
    final.sp = final.sp and final.tp > 1
    s.sp, s.ogr = False, True  # the flags can only turn these on / off
    lines, reads = _parser_lines(rnd, s)
    words = _words_for(rnd, s, final)
    if rnd.random() < 0.1:
        words += rnd.choice(refusals)
    s.tp, s.pp, s.sp, s.ogr, s.opg = final.tp, final.pp, final.sp, final.ogr, final.opg
    return lines, reads, words


def _argparse_words(rnd, s, dump):
    lines, reads, words = _parser_and_words(rnd, s, [["--no-such-flag"], ["--param-gather", "maybe"],
                                                     ["--tensor-model-parallel", "two"]])
    body = ["cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(**reads) + ["pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", f"WORDS = {words!r}", "", lines, "args = parser.parse_args(WORDS)", "",
                            'if __name__ == "__main__":', _indent(body))}


def _argparse_argv(rnd, s, dump):
    """argparse reading the script's own command line: the words a launch passes (``python train.py WORDS``)."""
    lines, reads, words = _parser_and_words(rnd, s, [["--no-such-flag", "1"], ["--pipeline", "3"],
                                                     ["--tensor-model-parallel"]])
    body = ["args = parser.parse_args()", "cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(**reads) + \
        ["pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", "", "def main():", _indent(lines + body), "",
                            'if __name__ == "__main__":', "    main()"), "argv": words}


def _parse_known_overrides(rnd, s, dump):
    lines, reads = _parser_lines(rnd, s)
    dotlists = []
    if rnd.random() < 0.7:
        dotlists.append(f"ddp.overlap_grad_reduce={str(not s.ogr).lower()}")
    if rnd.random() < 0.5:
        dotlists.append(f"model.sequence_parallel={str(s.sp).lower()}")
    if rnd.random() < 0.4:
        dotlists.append("ddp.bucket_size=40000000")
    if rnd.random() < 0.08:
        dotlists.append("ddp.no_such_field=1")  # Hydra refuses it in struct mode: so must the tool
    rnd.shuffle(dotlists)
    words = ["--tensor-model-parallel", str(s.tp)] + dotlists
    body = ["args, extras = parser.parse_known_args(WORDS)", "cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(**reads) + \
        ["cfg = process_config_with_overrides(cfg, cli_overrides=extras or None)", "pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", f"WORDS = {words!r}", "", "def main():", _indent(lines + body), "",
                            'if __name__ == "__main__":', "    main()")}


def _environ(rnd, s, dump):
    environ = {}
    lines = []
    if rnd.random() < 0.6:
        environ["OVL_TP"] = str(s.tp)
        lines.append('TP = int(os.environ["OVL_TP"])')
    else:
        lines.append(f'TP = int(os.getenv("OVL_TP", "{s.tp}"))')
    if rnd.random() < 0.5:
        environ["OVL_PP"] = str(s.pp)
        lines.append(f'PP = int(os.environ.get("OVL_PP", {rnd.choice([1, 2])}))')
    else:
        lines.append(f'PP = int(os.environ.get("OVL_PP", {s.pp}))')
    if rnd.random() < 0.5:
        environ["OVL_SP"] = "1" if s.sp else "0"
        lines.append('SP = os.environ["OVL_SP"] == "1"')
    else:
        lines.append(f'SP = os.getenv("OVL_SP", "{1 if s.sp else 0}") == "1"')
    if rnd.random() < 0.5:
        environ["OVL_NO_GRAD_OVERLAP"] = "1"
        s.ogr = False
    lines.append('OGR = "OVL_NO_GRAD_OVERLAP" not in os.environ' if "OVL_NO_GRAD_OVERLAP" in environ
                 else f"OGR = {s.ogr}")
    lines.append(f"OPG = {s.opg}")
    own = rnd.random()
    if own < 0.3:  # the script's own export: in the process before Bridge's setdefault of env_vars
        lines.append(f'os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "{rnd.choice([1, 8])}"')
    elif own < 0.5:
        lines.append(f'os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "{rnd.choice([1, 8])}")')
    return {"text": _script(f"DUMP = {dump!r}", lines, "cfg = ConfigContainer.from_yaml(DUMP)", s.lines(),
                            "pretrain(cfg, forward_step)"), "environ": environ}


def _helper_functions(rnd, s, dump):
    helpers = ["def set_parallelism(c, tp, pp=1):",
               "    c.model.tensor_model_parallel_size = tp",
               "    c.model.pipeline_model_parallel_size = pp",
               "",
               "    def sequence(enabled):",
               "        c.model.sequence_parallel = enabled and tp > 1",
               "",
               f"    sequence({s.sp})",
               "",
               "def overlap(c, **flags):",
               "    for key, value in flags.items():",
               "        setattr(c.ddp, key, value)",
               "",
               "def build():",
               "    c = ConfigContainer.from_yaml(DUMP)",
               "    c.model.virtual_pipeline_model_parallel_size = None",
               "    c.model.pipeline_model_parallel_layout = None",
               "    c.model.context_parallel_size = 1",
               "    return c",
               ""]
    rest = [line for line in s.lines() if "parallel_size" not in line and "sequence_parallel" not in line
            and "overlap_grad_reduce" not in line and "overlap_param_gather" not in line and "layout" not in line]
    body = ["cfg = build()", f"set_parallelism(cfg, {s.tp}, pp={s.pp})",
            f"overlap(cfg, overlap_grad_reduce={s.ogr}, overlap_param_gather={s.opg})"] + rest + ["pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", "", helpers, 'if __name__ == "__main__":', _indent(body))}


def _helper_class(rnd, s, dump):
    classes = ["@dataclass",
               "class Parallelism:",
               "    tp: int = 1",
               "    pp: int = 1",
               "    sp: bool = False",
               "",
               "    def apply(self, cfg):",
               "        cfg.model.tensor_model_parallel_size = self.tp",
               "        cfg.model.pipeline_model_parallel_size = self.pp",
               "        cfg.model.sequence_parallel = self.sp",
               "",
               "class Trainer:",
               "    def __init__(self, dump, parallelism):",
               "        self.cfg = ConfigContainer.from_yaml(dump)",
               "        self.parallelism = parallelism",
               "",
               "    def configure(self):",
               "        self.cfg.model.virtual_pipeline_model_parallel_size = None",
               "        self.cfg.model.pipeline_model_parallel_layout = None",
               "        self.cfg.model.context_parallel_size = 1",
               "        self.parallelism.apply(self.cfg)",
               f"        self.cfg.ddp.overlap_grad_reduce = {s.ogr}",
               f"        self.cfg.ddp.overlap_param_gather = {s.opg}",
               "        return self.cfg",
               ""]
    par = rnd.choice([f"Parallelism(tp={s.tp}, pp={s.pp}, sp={s.sp})", f"Parallelism({s.tp}, {s.pp}, {s.sp})"])
    rest = [line for line in s.lines() if "parallel" not in line and "overlap_" not in line and "layout" not in line]
    if rnd.random() < 0.5:
        body = [f"trainer = Trainer(DUMP, {par})", "cfg = trainer.configure()"] + rest + ["pretrain(cfg, forward_step)"]
    else:
        body = [f"trainer = Trainer(DUMP, {par})", "trainer.configure()", "cfg = trainer.cfg"] + rest + \
            ["pretrain(trainer.cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", "", classes, 'if __name__ == "__main__":', _indent(body))}


def _builders(rnd, s: Settings, names: list) -> tuple:
    """Builder functions, one per name, each setting its own TP; (lines, the TP of each name)."""
    out, tps = [], {}
    for name in names:
        tps[name] = rnd.choice([1, 2, 4])
        out += [f"def build_{name}():", "    c = ConfigContainer.from_yaml(DUMP)",
                f"    c.model.tensor_model_parallel_size = {tps[name]}", "    return c", ""]
    return out, tps


def _recipe_loop(rnd, s, dump):
    names = rnd.sample(["small", "medium", "large", "xl"], 3)
    want = rnd.choice(names)
    builders, tps = _builders(rnd, s, names)
    s.tp = tps[want]
    s.sp = s.sp and s.tp > 1
    table = "BUILDERS = {" + ", ".join(f"{n!r}: build_{n}" for n in names) + "}"
    form = rnd.random()
    if form < 0.5:
        loop = ["cfg = None", "for name in NAMES:", "    if name != WANT:", "        continue",
                "    cfg = BUILDERS[name]()", "    break"]
    else:
        loop = ["for name, builder in BUILDERS.items():", "    if name == WANT:", "        cfg = builder()", "        break"]
    lines = [line for line in s.lines() if "tensor_model_parallel_size" not in line]
    return {"text": _script(f"DUMP = {dump!r}", builders, table, f"NAMES = {names!r}", f"WANT = {want!r}",
                            s.constants(), loop, lines, "pretrain(cfg, forward_step)")}


def _dict_of_lambdas(rnd, s, dump, dumps):
    names = rnd.sample(["llama", "qwen", "gemma", "tiny"], 2)
    chosen = rnd.choice(names)
    other_dump, other_ws = rnd.choice(dumps)
    table = ["RECIPES = {",
             f"    {names[0]!r}: lambda: ConfigContainer.from_yaml(DUMP),",
             f"    {names[1]!r}: lambda: ConfigContainer.from_yaml(OTHER),",
             "}"]
    parser = ["parser = argparse.ArgumentParser()",
              f'parser.add_argument("--recipe", choices=sorted(RECIPES), default={chosen!r})',
              "args = parser.parse_args()"]
    body = ["cfg = RECIPES[args.recipe]()"] + s.lines(tp=str(s.tp), pp=str(s.pp), sp=str(s.sp), ogr=str(s.ogr),
                                                   opg=str(s.opg)) + ["pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", f"OTHER = {other_dump!r}", table, "", "def main():",
                            _indent(parser + body), "", 'if __name__ == "__main__":', "    main()"),
            "world_size": None if chosen == names[0] else other_ws}


def _dict_overrides(rnd, s, dump):
    profiles = {}
    for name in ("fast", "safe", "debug"):
        profiles[name] = {"model.tensor_model_parallel_size": rnd.choice([1, 2, 4]),
                          "ddp.overlap_grad_reduce": rnd.choice([True, False])}
        if rnd.random() < 0.5:
            profiles[name]["ddp.overlap_param_gather"] = rnd.choice([True, False])
    chosen = rnd.choice(list(profiles))
    s.tp = profiles[chosen]["model.tensor_model_parallel_size"]
    s.sp = s.sp and s.tp > 1
    helper = ["def apply(cfg, dotted, value):",
              '    *parents, last = dotted.split(".")',
              "    obj = cfg",
              "    for part in parents:",
              "        obj = getattr(obj, part)",
              "    setattr(obj, last, value)",
              ""]
    tweak = rnd.random() < 0.4
    tweaks = ['TWEAKS = {"sp": lambda c: setattr(c.model, "sequence_parallel", c.model.tensor_model_parallel_size > 1)}'] if tweak else []
    parser = ["parser = argparse.ArgumentParser()",
              f'parser.add_argument("--profile", default={chosen!r}, choices=list(PROFILES))',
              "args = parser.parse_args()"]
    body = ["cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(tp="1") + \
        ["for key, value in PROFILES[args.profile].items():", "    apply(cfg, key, value)"]
    if tweak:
        body.append('TWEAKS["sp"](cfg)')
    body.append("pretrain(cfg, forward_step)")
    return {"text": _script(f"DUMP = {dump!r}", s.constants(), f"PROFILES = {profiles!r}", tweaks, "", helper, "def main():",
                            _indent(parser + body), "", 'if __name__ == "__main__":', "    main()")}


def _yaml_overrides(rnd, s, dump):
    yaml = [f"model:\n  tensor_model_parallel_size: {s.tp}\n  sequence_parallel: {str(s.sp).lower()}",
            f"ddp:\n  overlap_grad_reduce: {str(not s.ogr).lower()}"]
    if rnd.random() < 0.4:
        yaml[1] += "\n  bucket_size: 50000000"
    words = [f"ddp.overlap_param_gather={str(s.opg).lower()}"] if rnd.random() < 0.6 else []
    call = rnd.choice(["config_filepath=str(CONF)", "str(CONF)"])
    body = ["cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(tp="1", sp="False") + \
        [f"cfg = process_config_with_overrides(cfg, {call}, {'cli_overrides=' + repr(words) if words else 'cli_overrides=None'})",
         "pretrain(cfg, forward_step)"]
    return {"text": _script(f"DUMP = {dump!r}", s.constants(), 'CONF = Path(__file__).parent / "conf" / "override.yaml"', "",
                            'if __name__ == "__main__":', _indent(body)),
            "beside": {"conf/override.yaml": "\n".join(yaml) + "\n"}}


def _omegaconf_from_cli(rnd, s, dump):
    words = [f"model.tensor_model_parallel_size={s.tp}", f"ddp.overlap_grad_reduce={str(s.ogr).lower()}"]
    body = ["cli = OmegaConf.from_cli(WORDS)", "cfg = ConfigContainer.from_yaml(DUMP)"] + \
        s.lines(tp="cli.model.tensor_model_parallel_size", ogr="cli.ddp.overlap_grad_reduce")
    if rnd.random() < 0.5:
        body.append("cfg = process_config_with_overrides(cfg, cli_overrides=WORDS)")
    body.append("pretrain(cfg, forward_step)")
    return {"text": _script("from omegaconf import OmegaConf", f"DUMP = {dump!r}", s.constants(), f"WORDS = {words!r}", "",
                            'if __name__ == "__main__":', _indent(body))}


def _hydra_main(rnd, s, dump):
    conf = f"tp: {s.tp}\npp: {s.pp}\nparallel:\n  sequence: {str(s.sp).lower()}\noverlap:\n  grad: {str(s.ogr).lower()}\n"
    reads = dict(tp="conf.tp", pp="conf.pp", sp="conf.parallel.sequence", ogr="conf.overlap.grad")
    body = ["cfg = ConfigContainer.from_yaml(DUMP)"] + s.lines(**reads) + ["pretrain(cfg, forward_step)"]
    deco = rnd.choice(['@hydra.main(version_base=None, config_path="conf", config_name="train")',
                       '@hydra.main(config_path="conf", config_name="train", version_base=None)'])
    return {"text": _script("import hydra", f"DUMP = {dump!r}", s.constants(), "", deco, "def main(conf):", _indent(body), "",
                            'if __name__ == "__main__":', "    main()"),
            "beside": {"conf/train.yaml": conf}}


def _own_module(rnd, s, dump):
    build = ["def build():", "    cfg = ConfigContainer.from_yaml(DUMP)"] + _indent(s.lines()) + ["    return cfg"]
    lib = _script(f"DUMP = {dump!r}", s.constants(), "", build)
    form = rnd.choice(["from", "import", "package"])
    where = "mylib/settings.py" if form == "package" else "settings_lib.py"
    beside = {where: lib, **({"mylib/__init__.py": ""} if form == "package" else {})}
    imports = {"from": "from settings_lib import build", "import": "import settings_lib",
               "package": "from mylib.settings import build"}[form]
    body = ["cfg = settings_lib.build()" if form == "import" else "cfg = build()"]
    if rnd.random() < 0.5:  # the script changes what the module built
        body.append(f"cfg.ddp.overlap_grad_reduce = {not s.ogr}")
    body.append("pretrain(cfg, forward_step)")
    return {"text": _script(imports, "", 'if __name__ == "__main__":', _indent(body)), "beside": beside}


_RENDER = {"module": _module, "main_guard": _main_guard, "main_function": _main_function,
           "argparse_defaults": _argparse_defaults, "argparse_words": _argparse_words,
           "parse_known_overrides": _parse_known_overrides, "environ": _environ, "helper_functions": _helper_functions,
           "helper_class": _helper_class, "recipe_loop": _recipe_loop, "dict_of_lambdas": _dict_of_lambdas,
           "dict_overrides": _dict_overrides, "yaml_overrides": _yaml_overrides,
           "omegaconf_from_cli": _omegaconf_from_cli, "hydra_main": _hydra_main, "argparse_argv": _argparse_argv,
           "own_module": _own_module}


def generate(corpus: Path, count: int = 595, seed: int = 0) -> list:
    """``count`` scripts, the idioms in turn, each drawn from its own seed (``seed`` + its index)."""
    dumps = [(str(corpus / f"{name}.yaml"), ws) for name, ws in BASES if (corpus / f"{name}.yaml").is_file()]
    if not dumps:
        return []
    out = []
    for i in range(count):
        idiom = IDIOMS[i % len(IDIOMS)]
        rnd = random.Random(f"{seed}-{i}")
        dump, ws = dumps[(i // len(IDIOMS) + i) % len(dumps)]  # each idiom over every dump, whatever their counts
        s = Settings(rnd)
        args = (rnd, s, dump, dumps) if idiom == "dict_of_lambdas" else (rnd, s, dump)
        made = _RENDER[idiom](*args)
        out.append(Case(idiom, seed + i, "train.py", made["text"], made.get("world_size") or ws,
                        made.get("beside", {}), made.get("environ", {}), made.get("argv")))
    return out
