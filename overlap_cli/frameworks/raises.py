"""What upstream raises, as one record type: a ``Raise`` is one assert / raise of the mirrored code — its
upstream ``file:line``, the condition under which it fires as a pure function of the run's values, the message
as upstream prints it, and the stage of a run that meets it. A table is a tuple of them in the order the real
code meets them; a rule reads a table with ``failing`` and reports each record that fires.

The tables: Megatron-LM's launch checks (``frameworks/megatron_lm/assertions.py``, whose ``Check`` adds what
argparse's order needs), Bridge's ``validate()`` and the configs it builds (``rules/cfg_validate.py``), the
EP-overlap prerequisites (``rules/ep.py``) and the pipeline split (``rules/pp_split.py``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Iterator

from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

# When a run meets the raise: Bridge's ``runtime_config_update`` -> ``validate()`` (before any rank builds a
# model), the model build (``provide()`` / ``get_num_layers_to_build``, after the process groups exist), a
# Megatron-LM launch's start-up (``validate_args`` and the configs built from ``args``), the first step
# of the pipeline schedule.
VALIDATE, MODEL_BUILD, LAUNCH, FIRST_STEP = "validate", "model build", "launch", "first step"
STAGES = (VALIDATE, MODEL_BUILD, LAUNCH, FIRST_STEP)

ASSERT = "AssertionError"


@dataclass(frozen=True, kw_only=True)
class Raise:
    at: str  # upstream file:line of the assert / raise
    message: str  # as upstream prints it; ``str.format`` fields from what ``fails`` returns
    fails: Any  # pure function of the run's values: None (or False) when it holds, else the message fields (a dict)
    stage: str = VALIDATE  # one of STAGES
    kind: str = ASSERT  # the exception: AssertionError, ValueError, RuntimeError, AttributeError, TypeError
    key: str = ""  # the key a finding is placed at
    id: str = ""

    def __post_init__(self):
        if self.stage not in STAGES:
            raise ValueError(f"{self.at}: stage {self.stage!r} is not one of {STAGES}")

    def text(self, fields) -> str:
        """The message as printed, with ``fields`` filled in."""
        return self.message.format(**fields) if isinstance(fields, dict) and fields else self.message

    @property
    def raises(self) -> bool:
        """A raise (ValueError, ...), not an assert."""
        return self.kind != ASSERT


def failing(table, values) -> Iterator:
    """(record, fields) of each record of ``table`` that fires on ``values``, in the table's order."""
    for record in table:
        fields = record.fails(values)
        if fields is None or fields is False:
            continue
        yield record, fields
