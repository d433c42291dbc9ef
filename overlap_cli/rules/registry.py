"""What a rule is and how a rule module registers one: ``@rule(code, name, severity, title)`` over its
check function. The rule modules import this; the package (``overlap_cli.rules``) imports the rule modules.

Every code is taken in one table, ``codes.py`` (code -> module, check function, state), which ``rule``
holds a rule of this package to. Codes are stable: CFG0xx structure, TP1xx tensor parallel, PP2xx
pipeline, DP3xx data parallel and buckets, MP4xx mixed precision, ENV5xx launch environment, UB6xx
userbuffers presets, EP7xx expert parallel / delayed wgrad, CP8xx context parallel.

Each rule names the frameworks whose inputs it checks (``frameworks``; ``run_rules`` runs only those of the
input's framework). The families above are Megatron-Bridge's (``("bridge",)``, the default). Megatron-LM
launches have their own family, LM, numbered like the others by topic — LM0xx the launch itself (world
size, batch sizes), LM1xx TP, LM2xx PP / virtual pipeline, LM3xx DP / FSDP / buckets, LM4xx precision, LM5xx
launch environment, LM7xx EP, LM8xx CP — because
Megatron-LM decides differently (it asserts where Bridge switches off, and never turns DP overlap on): its
rules say what validate_args prints. A rule that reads only what Megatron-Core's own configs decide
(``model_parallel_config.py`` / ``transformer_config.py`` ``__post_init__``: deferred embedding wgrad,
p2p warmup/flush, EP overlap, delayed wgrad; DP313, the process grid of ``parallel_state``) keeps its code and
serves both, ``frameworks=BOTH``: one place for the check, whichever framework built the config.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable

from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)
# The families in the order rules are listed (and sorted by code_sort_key) and their names: codes.py's blocks.
from overlap_cli.rules.codes import CODES, FAMILIES, FAMILY_NAMES, REMOVED  # noqa: F401

BRIDGE, MEGATRON_LM = "bridge", "megatron-lm"
BOTH = (BRIDGE, MEGATRON_LM)


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str  # default severity; a check may lower or raise it per finding
    title: str
    check: Callable
    # What its fixes are (see FIX_CLASSES): "none", or classes joined by "/" in FIX_CLASSES order.
    fix: str = "none"
    frameworks: tuple = (BRIDGE,)  # the inputs it checks: BRIDGE, MEGATRON_LM or both
    # A fact of the Bridge release a run is checked against (a name in frameworks/bridge/releases/) that must
    # be true for the rule to apply: ``HAS_ENV_VARS`` for the rules about env_vars, which releases before
    # 0.6.0 do not have. "" for every release.
    needs: str = ""

    @property
    def doc(self) -> str:
        """The rule's documentation: its check's docstring, dedented when first asked for (a check run
        never shows it, and cleaning 70 docstrings at start-up costs ~0.5 ms)."""
        doc = _DOCS.get(self.code)
        if doc is None:
            doc = _DOCS[self.code] = cleandoc(self.check.__doc__ or "")
        return doc

    @property
    def family(self) -> str:
        return "".join(c for c in self.code if c.isalpha())


# Fix classes. Safe: "keeps" (every effective value stays), "crash" ((a) removes a launch crash),
# "overlap" ((b) makes an overlap the file asked for take effect). "unsafe": changes what runs.
FIX_CLASSES = ("keeps", "crash", "overlap", "unsafe")
SAFE_FIX_CLASSES = ("keeps", "crash", "overlap")


def cleandoc(doc: str) -> str:
    """``inspect.cleandoc`` without importing inspect (~5 ms of start-up): the docstring's common indent
    removed, blank lines at both ends dropped."""
    lines = doc.expandtabs().split("\n")
    indents = [len(ln) - len(ln.lstrip()) for ln in lines[1:] if ln.strip()]
    margin = min(indents) if indents else 0
    lines = [lines[0].lstrip()] + [ln[margin:] for ln in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


RULES: dict[str, Rule] = {}  # code -> rule, filled as each rule module is imported
_DOCS: dict[str, str] = {}


def rule(code: str, name: str, severity: str, title: str, fix: str = "none", frameworks: tuple = (BRIDGE,),
         needs: str = ""):
    """Register ``func`` as the check of rule ``code``; its docstring is the rule's documentation. A check of
    this package must be the one codes.py names for its code (a check registered from elsewhere, a test's
    throw-away rule, is not one of the shipped codes)."""

    def deco(func: Callable) -> Callable:
        if code in RULES:
            raise RuntimeError(f"duplicate rule code {code}")
        if func.__module__.startswith(_PACKAGE):
            problem = table_problem(code, func.__module__[len(_PACKAGE):], func.__name__)
            if problem:
                raise RuntimeError(problem)
        RULES[code] = Rule(code, name, severity, title, func, fix, tuple(frameworks), needs)
        return func

    return deco


_PACKAGE = "overlap_cli.rules."


def table_problem(code: str, module: str, function: str, codes: dict = CODES) -> str:
    """Why ``module.function`` may not register ``code`` (codes.py), or ""."""
    entry = codes.get(code)
    if entry is None:
        return f"rule code {code} ({module}.{function}) is not in rules/codes.py: add it to its family's block"
    if entry[2] == REMOVED:
        return f"rule code {code} was removed (rules/codes.py): a removed code is not reused, take a new one"
    if entry[:2] != (module, function):
        return (f"rule code {code} belongs to {entry[0]}.{entry[1]} in rules/codes.py, "
                f"not to {module}.{function}")
    return ""


def unregistered(rules: dict, codes: dict = CODES) -> list:
    """The codes of codes.py no rule registered, other than removed ones (all rule modules imported)."""
    return [code for code, (_, _, state) in codes.items() if state != REMOVED and code not in rules]


def code_sort_key(code: str) -> tuple:
    """Rule codes in family order (FAMILIES), then by number: CFG001 < TP101 < ... < CP804."""
    fam = "".join(c for c in code if c.isalpha()).lower()
    num = "".join(c for c in code if c.isdigit())
    return (FAMILIES.index(fam) if fam in FAMILIES else 99, int(num or 0))
