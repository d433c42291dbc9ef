"""Rule registry. A rule is metadata (code, severity, title, documentation) plus one pure function
``check(view) -> Iterable[Finding]`` over the resolved view. Families live in sibling modules and are
imported once, on first use.

Codes are stable: CFG0xx structure, TP1xx tensor parallel, PP2xx pipeline, DP3xx data parallel and
buckets, MP4xx mixed precision, ENV5xx launch environment, UB6xx userbuffers presets, EP7xx expert
parallel / delayed wgrad, CP8xx context parallel.
"""

from __future__ import annotations


TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

FAMILY_MODULES = ("cfg", "tp", "pp", "dp", "mp", "env", "ub", "ep", "cp", "layout", "wgrad", "param_gather", "fsdp")
FAMILY_NAMES = {
    "CFG": "structure",
    "TP": "tensor parallel",
    "PP": "pipeline parallel",
    "DP": "data parallel",
    "MP": "mixed precision",
    "ENV": "launch environment",
    "UB": "userbuffers presets",
    "EP": "expert parallel",
    "CP": "context parallel",
}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str  # default severity; a check may lower or raise it per finding
    title: str
    check: Callable
    # What its fixes are (see FIX_CLASSES): "none", or classes joined by "/" in FIX_CLASSES order.
    fix: str = "none"

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


_RULES: dict[str, Rule] = {}
_DOCS: dict[str, str] = {}
_LOADED = False


def rule(code: str, name: str, severity: str, title: str, fix: str = "none"):
    """Register ``func`` as the check of rule ``code``; its docstring is the rule's documentation."""

    def deco(func: Callable) -> Callable:
        if code in _RULES:
            raise RuntimeError(f"duplicate rule code {code}")
        _RULES[code] = Rule(code, name, severity, title, func, fix)
        return func

    return deco


def all_rules() -> dict[str, Rule]:
    global _LOADED
    if not _LOADED:
        # "suppressions" holds CFG009, which the selection step (not a family check) reports.
        for mod in FAMILY_MODULES + ("suppressions",):
            try:
                __import__(f"{__name__}.{mod}")  # (not importlib: one import fewer, and -X importtime shows them)
            except ModuleNotFoundError as exc:  # a family not built yet
                if exc.name != f"{__name__}.{mod}":
                    raise
        _LOADED = True
    global _SORTED
    if _SORTED is None or len(_SORTED) != len(_RULES):  # sorted once per process, not once per file
        _SORTED = dict(sorted(_RULES.items(), key=lambda kv: _code_key(kv[0])))
    return dict(_SORTED)


_SORTED: Optional[dict] = None


def _code_key(code: str):
    fam = "".join(c for c in code if c.isalpha())
    num = "".join(c for c in code if c.isdigit())
    return (FAMILY_MODULES.index(fam.lower()) if fam.lower() in FAMILY_MODULES else 99, int(num or 0))


def get_rule(code: str) -> Optional[Rule]:
    return all_rules().get(code)


class RuleCrashed(Exception):
    """A rule's check raised: a bug in that rule. ``code`` names it; ``error`` is what it raised."""

    def __init__(self, code: str, error: Exception):
        super().__init__(f"{code}: {error!r}")
        self.code, self.error = code, error


def run_rules(view) -> list:
    """Every rule's findings. A check that raises stops the run for this view with RuleCrashed: its
    file gets one internal-error line instead of a report built on a partial rule set."""
    from overlap_cli.check.results import Finding

    findings: list[Finding] = []
    for r in all_rules().values():
        try:
            for f in r.check(view) or ():
                if not f.code:
                    f.code = r.code
                findings.append(f)
        except RecursionError:
            raise
        except Exception as exc:
            raise RuleCrashed(r.code, exc) from exc
    return findings
