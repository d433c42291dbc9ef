"""Which layer wrote each key of a Python run (``Config.layers``: 0 the run's start, 1 the file): the walk that
reuses the start's skeleton for what the run left as the start holds it (python_load.owners) gives the same
map, and refuses the same ``_target_``, as the plain walks over every key: the loader's ``_target_`` check
(config.loader.refuse_targets_not_named) and ``_plain`` below, which marks every key from a written path down as
the file's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from overlap_cli.config.document import Config
from overlap_cli.config.loader import refuse_targets_not_named
from overlap_cli.frameworks.bridge import python_load
from overlap_cli.problems import InputError


def _plain(value, path: tuple, index: int, owner: dict, written: frozenset) -> None:
    """Every key at and under ``path``: 0 (the start), or 1 (the file) at and under a path it wrote."""
    if path in written:
        index = 1
    if path:
        owner[path] = index
    if isinstance(value, dict):
        for k, v in value.items():
            _plain(v, path + (k,), index, owner, written)

HEAD = "from megatron.bridge.recipes.llama import llama32_1b_pretrain_config\n" \
       "from megatron.bridge.training.config import ConfigContainer, DistributedDataParallelConfig\n"

SCRIPTS = {
    "scalar_writes": """
        cfg = llama32_1b_pretrain_config()
        cfg.model.tensor_model_parallel_size = 4
        cfg.train.global_batch_size = 64
        """,
    "section_replaced": """
        cfg = llama32_1b_pretrain_config()
        cfg.ddp = DistributedDataParallelConfig(overlap_grad_reduce=True)
        """,
    "nested_mapping_and_new_key": """
        cfg = llama32_1b_pretrain_config()
        cfg.model.extra_settings = {"a": {"b": 1}, "c": [1, 2]}
        cfg.comm_overlap = None
        """,
    "value_unknown": """
        import os
        cfg = llama32_1b_pretrain_config()
        cfg.model.pipeline_model_parallel_size = int(os.environ["PP"])
        cfg.optimizer = make_optimizer()
        """,
    "written_twice": """
        cfg = llama32_1b_pretrain_config()
        cfg.model.tensor_model_parallel_size = 2
        cfg.model = cfg.model
        cfg.model.sequence_parallel = True
        """,
    "target_list_written": """
        cfg = llama32_1b_pretrain_config()
        cfg.model._target_ = ["not", "a", "class"]
        """,
    "from_yaml_base": """
        cfg = ConfigContainer.from_yaml("base.yaml")
        cfg.model.tensor_model_parallel_size = 2
        """,
}

BASE = """\
model: {_target_: megatron.bridge.models.gpt_provider.GPTModelProvider, tensor_model_parallel_size: 1, num_layers: 4}
ddp: {use_distributed_optimizer: true, nested: {a: 1, b: [1, 2]}}
dataset: {blend: [[a, b], null]}
"""


def _both(path: Path):
    """(the plain walk's map or error, owners's map or error) of the run in ``path``."""
    run, _ = python_load.read_run(str(path))
    written = frozenset(run.written)
    cfg = Config(file=run.file, data=run.data, positions={})
    got = []
    for walk in ("plain", "skeleton"):
        try:
            if walk == "plain":
                owner: dict = {}
                refuse_targets_not_named(cfg, run.data, ())
                _plain(run.data, (), 0, owner, written)
                for p in written:
                    owner[p] = 1
            else:
                owner = python_load.owners(run.data, run.base_data, dict.fromkeys(written, 1), cfg)
            got.append(owner)
        except InputError as exc:
            got.append(str(exc))
    return got


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_skeleton_walk_gives_the_plain_walks_owners(tmp_path, name):
    (tmp_path / "base.yaml").write_text(BASE)
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + textwrap.dedent(SCRIPTS[name]))
    plain, skeleton = _both(path)
    assert plain == skeleton
    if "target_list" in name:
        assert isinstance(plain, str) and "_target_ is a list" in plain
    else:
        assert isinstance(plain, dict) and len(plain) > 10 and set(plain.values()) <= {0, 1}
        assert 1 in plain.values()


def test_runs_of_one_recipe_share_its_skeleton_and_keep_their_own_writes(tmp_path):
    # Two runs of one recipe: the second reuses the skeleton the first built, and still owns what it wrote.
    path = tmp_path / "two.py"
    path.write_text(HEAD + textwrap.dedent("""
        def a():
            c = llama32_1b_pretrain_config()
            c.model.tensor_model_parallel_size = 2
            return c

        def b():
            c = llama32_1b_pretrain_config()
            c.train.global_batch_size = 16
            return c
        """))
    first, _ = _both(Path(f"{path}::a"))
    second, again = _both(Path(f"{path}::b"))
    assert second == again
    assert first[("model", "tensor_model_parallel_size")] == 1 and second[("model", "tensor_model_parallel_size")] == 0
    assert first[("train", "global_batch_size")] == 0 and second[("train", "global_batch_size")] == 1


def test_a_start_whose_target_is_no_class_path_is_refused_by_both_walks():
    # A base the run did not touch, holding a list as a _target_ (the loaders refuse such a file before a run
    # starts from it; the walks refuse it too, whichever part of the data they take from the skeleton).
    base = {"model": {"num_layers": 2, "inner": {"_target_": "x.Y"}}, "optimizer": {"lr": 0.1, "sub": [{"_target_": [1]}]}}
    data = {"model": {"num_layers": 4, "inner": {"_target_": "x.Y"}}, "optimizer": {"lr": 0.1, "sub": [{"_target_": [1]}]}}
    written = frozenset({("model", "num_layers")})
    cfg = Config(file="run.py", data=data, positions={})
    with pytest.raises(InputError) as plain:
        refuse_targets_not_named(cfg, data, ())
    with pytest.raises(InputError) as skeleton:
        python_load.owners(data, base, dict.fromkeys(written, 1), cfg)
    assert str(plain.value) == str(skeleton.value) and "optimizer.sub.0._target_" in str(plain.value)


def test_a_start_the_loader_refuses_is_the_runs_input_error(tmp_path):
    (tmp_path / "bad_base.yaml").write_text(BASE + "optimizer: {_target_: [1, 2], lr: 0.1}\n")
    path = tmp_path / "run.py"
    path.write_text(HEAD + 'cfg = ConfigContainer.from_yaml("bad_base.yaml")\ncfg.model.tensor_model_parallel_size = 2\n')
    with pytest.raises(InputError) as err:
        python_load.read_run(str(path))
    problem = err.value.problem
    assert problem.line == 3 and "ConfigContainer.from_yaml" in problem.message
    assert "bad_base.yaml:4" in problem.message and "optimizer._target_: _target_ is a list" in problem.message
