"""validate_args as a table of steps (resolver.VALIDATE_ARGS): each keyed by the arguments.py lines it mirrors,
in launch order, each small and citing its lines."""

from __future__ import annotations

import ast
import inspect
import re

from overlap_cli.frameworks.megatron_lm import facts, resolver


def _lines(where: str) -> tuple:
    first, _, last = where.rsplit(":", 1)[1].partition("-")
    return int(first), int(last or first)


def test_the_steps_are_in_arguments_py_line_order():
    starts = [_lines(where)[0] for where, _ in resolver.VALIDATE_ARGS]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert all(where.startswith(f"{facts.ARGS}:") for where, _ in resolver.VALIDATE_ARGS)


def test_each_step_cites_the_lines_it_is_keyed_by():
    for where, step in resolver.VALIDATE_ARGS:
        first, last = _lines(where)
        cited = re.findall(r"arguments\.py:(\d+)(?:-(\d+))?", step.__doc__ or "")
        spans = [(int(a), int(b or a)) for a, b in cited]
        covered = [any(a <= line <= b for a, b in spans) for line in (first, last)]
        assert covered == [True, True], (step.__name__, where, cited)


def test_the_steps_and_resolve_are_short():
    """A step is one block of validate_args; resolve is the loop over them."""
    tree = ast.parse(inspect.getsource(resolver))
    sizes = {n.name: n.end_lineno - n.lineno + 1 for n in tree.body if isinstance(n, ast.FunctionDef)}
    steps = {step.__name__ for _, step in resolver.VALIDATE_ARGS}
    assert steps <= set(sizes)
    assert max(sizes[name] for name in steps) <= 40, {name: sizes[name] for name in steps if sizes[name] > 40}
    assert sizes["resolve"] <= 40


def test_the_launch_checks_run_before_each_step_line(monkeypatch, tmp_path):
    """The loop asks the launch checks to run up to each step's first line, in order, then the rest."""
    from overlap_cli.frameworks.megatron_lm import assertions
    from overlap_cli.frameworks.megatron_lm.args import load_launch
    from overlap_cli.launch_profile.profile import Target

    calls = []
    monkeypatch.setattr(assertions.Runner, "until", lambda self, line: calls.append(line))
    monkeypatch.setattr(assertions.Runner, "after_validate", lambda self: calls.append("after"))
    script = tmp_path / "launch.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --tensor-model-parallel-size 2\n")
    r = resolver.resolve(load_launch(str(script)), Target())
    assert r.dp == 4
    assert calls == [_lines(where)[0] for where, _ in resolver.VALIDATE_ARGS] + ["after"]
