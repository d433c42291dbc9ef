"""The estimate as a composition of cost terms (estimate/costs.py): each term a documented function that
adds to its own part; estimate() is the terms run in order over one account."""

import ast
import inspect

import pytest

from overlap_cli.estimate import costs
from overlap_cli.estimate.model import PARTS, constants, estimate
from recipe_files import recipe_file  # noqa: F401  (fixture)
from test_estimate_model import RECIPES, shape_of


def test_every_term_is_short_and_says_where_its_figures_come_from():
    tree = ast.parse(inspect.getsource(costs))
    sizes = {n.name: n.end_lineno - n.lineno + 1 for n in tree.body if isinstance(n, ast.FunctionDef)}
    for term in costs.TERMS:
        assert len((term.__doc__ or "").split()) >= 12, term.__name__
        assert sizes[term.__name__] <= 40, (term.__name__, sizes[term.__name__])
    model_tree = ast.parse(inspect.getsource(estimate))
    assert model_tree.body[0].end_lineno - model_tree.body[0].lineno < 10


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_term_moves_only_its_own_parts(recipe_file, name):
    """Run the terms one by one: a communication term changes its part (and the compute, for the SMs
    userbuffers hold or the LayerNorm margin) and no other; the end is what estimate() returns."""
    world, gpu = RECIPES[name]
    shape = shape_of(recipe_file(name), world, gpu)
    step = costs.Step(shape, constants())
    owns = {"compute_time": {"compute"}, "tp_comm": {"tp_exposed", "compute"}, "cp_comm": {"cp_exposed"},
            "ep_all_to_all": {"ep_exposed"}, "dp_comm": {"dp_exposed"},
            "layernorm_sm_margin": {"compute", "tp_exposed", "dp_exposed", "ep_exposed"}, "pp_bubble": {"pp_bubble"},
            "pp_p2p": {"p2p_exposed"}, "one_hardware_queue": {"dp_exposed", "p2p_exposed"}}
    assert set(owns) == {t.__name__ for t in costs.TERMS}
    for term in costs.TERMS:
        before = step.parts()
        term(step)
        moved = {p for p in PARTS if step.parts()[p] != before[p]}
        assert moved <= owns[term.__name__], (term.__name__, moved)
    assert step.parts() == estimate(shape).parts
    assert step.parts()["compute"] > 0
