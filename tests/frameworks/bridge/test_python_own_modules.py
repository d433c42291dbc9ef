"""A run whose config is built in another module of the user's (``from configs import build_config`` beside
the script): the reader follows the import as Python finds it when the script is run -- an absolute name in
the script's folder, a relative one from the importing module's folder -- reads that module (parsed, never
run), and places every value, finding and refusal in the file that wrote it. ``fix`` edits only the run's
own file and says where the rest belongs."""

from __future__ import annotations

import json
import textwrap

import pytest

CONFIGS = """\
from megatron.bridge.recipes.llama import llama32_1b_pretrain_config
from megatron.bridge.training.config import ConfigContainer

TP = 2


def build_config() -> ConfigContainer:
    cfg = llama32_1b_pretrain_config()
    cfg.model.tensor_model_parallel_size = TP
    cfg.model.sequence_parallel = False
    return cfg
"""

LAUNCH = "from megatron.bridge.training.pretrain import pretrain\nfrom megatron.bridge.training.gpt_step import forward_step\n"

# (name, {file: text}, the script checked): each builds the config in configs.py and sets TP overlap itself.
LAYOUTS = {
    "from_import": ({"configs.py": CONFIGS}, "train.py", """
        from configs import build_config

        if __name__ == "__main__":
            cfg = build_config()
            cfg.comm_overlap.tp_comm_overlap = True
            pretrain(cfg, forward_step)
        """),
    "module_import": ({"configs.py": CONFIGS}, "train.py", """
        import configs

        cfg = configs.build_config()
        cfg.comm_overlap.tp_comm_overlap = True
        pretrain(cfg, forward_step)
        """),
    "package_module": ({"mypkg/__init__.py": "", "mypkg/configs.py": CONFIGS}, "train.py", """
        from mypkg.configs import build_config

        def main():
            cfg = build_config()
            cfg.comm_overlap.tp_comm_overlap = True
            pretrain(cfg, forward_step)

        if __name__ == "__main__":
            main()
        """),
    "relative_in_package": ({"proj/__init__.py": "", "proj/configs.py": CONFIGS}, "proj/train.py", """
        from . import configs

        cfg = configs.build_config()
        cfg.comm_overlap.tp_comm_overlap = True
        pretrain(cfg, forward_step)
        """),
}


def _write(folder, files: dict, script: str, body: str):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    path = folder / script
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LAUNCH + textwrap.dedent(body))
    return path


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_values_and_findings_are_placed_in_the_module_that_wrote_them(tmp_path, run_cli, layout):
    files, script, body = LAYOUTS[layout]
    path = _write(tmp_path, files, script, body)
    configs = next(tmp_path / f for f in files if f.endswith("configs.py"))
    code, out, err = run_cli("check", path, "--format", "json", "--show-effective", "--world-size", "8")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, err
    eff = result["effective"]
    assert eff["model.tensor_model_parallel_size"]["value"] == 2
    assert eff["model.tensor_model_parallel_size"]["reason"] == f"set in {configs}:9"
    assert eff["model.sequence_parallel"]["reason"] == f"set in {configs}:10"
    assert eff["model.pipeline_model_parallel_size"]["reason"].startswith("set in recipe llama32_1b_pretrain")
    # TP overlap asked for in the script, sequence parallelism off in configs.py: Bridge turns TP overlap off,
    # and the finding points at the line that turned sequence parallelism off.
    assert eff["model.tp_comm_overlap"]["value"] is False
    tp102 = [f for f in result["findings"] if f["code"] == "TP102"]
    assert tp102 and tp102[0]["origin"] == f"{configs}:10" and tp102[0]["line"] is None  # not a line of the script
    assert code == 1


def test_fix_edits_the_runs_own_file_and_says_where_the_rest_belongs(tmp_path, run_cli):
    files, script, body = LAYOUTS["module_import"]
    path = _write(tmp_path, files, script, body)
    before = (tmp_path / "configs.py").read_text()
    code, out, err = run_cli("fix", path, "--unsafe-fixes", "--write", "--world-size", "8")
    text = path.read_text()
    # The launch variable is added after the line that takes the config in the script...
    assert "cfg = configs.build_config()\ncfg.env_vars['CUDA_DEVICE_MAX_CONNECTIONS'] = 1\n" in text
    # ... and sequence parallelism, written in configs.py, is left to the user there.
    assert "model.sequence_parallel is set in" in out + err and "configs.py:10, a module the run imports" in out + err
    assert (tmp_path / "configs.py").read_text() == before


def test_a_refusal_in_the_other_module_is_placed_there(tmp_path, run_cli):
    configs = CONFIGS.replace("    return cfg\n", "    cfg.comm_overlap = CommOverlapConfig()\n    return cfg\n").replace(
        "from megatron.bridge.training.config import ConfigContainer\n",
        "from megatron.bridge.training.config import ConfigContainer\nfrom megatron.bridge.training.comm_overlap import CommOverlapConfig\n")
    path = _write(tmp_path, {"configs.py": configs}, "train.py", "from configs import build_config\ncfg = build_config()\npretrain(cfg, forward_step)\n")
    code, out, err = run_cli("check", path)
    assert code == 2
    assert f"{tmp_path / 'configs.py'}:12" in err and "CommOverlapConfig(...) without tp_comm_overlap" in err


def test_modules_that_import_each_other_end(tmp_path, run_cli):
    a = "from b import helper\nfrom megatron.bridge.recipes.llama import llama32_1b_pretrain_config\n\n" \
        "def build():\n    cfg = llama32_1b_pretrain_config()\n    helper(cfg)\n    return cfg\n"
    b = "from a import build\n\ndef helper(cfg):\n    cfg.model.tensor_model_parallel_size = 4\n"
    path = _write(tmp_path, {"a.py": a, "b.py": b}, "train.py", "from a import build\ncfg = build()\npretrain(cfg, forward_step)\n")
    code, out, err = run_cli("check", path, "--format", "json", "--show-effective")
    eff = json.loads(out)["results"][0]["effective"]
    assert eff["model.tensor_model_parallel_size"]["value"] == 4
    assert eff["model.tensor_model_parallel_size"]["reason"] == f"set in {tmp_path / 'b.py'}:4"


@pytest.mark.parametrize("name", ["json", "os", "megatron"])
def test_a_module_named_like_a_library_beside_the_script_is_not_read_for_it(tmp_path, run_cli, name):
    # Python itself would import the file beside the script; the reader keeps the library's meaning (a
    # library module is never the user's config builder): the config pretrain is handed is not known.
    where = tmp_path / (f"{name}.py" if name != "megatron" else "megatron/__init__.py")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(CONFIGS)
    path = _write(tmp_path, {}, "train.py", f"from {name} import build_config\ncfg = build_config()\npretrain(cfg, forward_step)\n")
    code, out, err = run_cli("check", path, "--format", "json", "--show-effective")
    tp = json.loads(out)["results"][0]["effective"]["model.tensor_model_parallel_size"]
    assert tp["value"] is None and tp["source"] == "unknown"
    assert f"pretrain(...) at {path}:5 is handed: build_config(...) at {path}:4" in tp["reason"]


@pytest.mark.parametrize("launch", ["pretrain(cfg, forward_step)", "pretrain(config=cfg, forward_step_func=forward_step)"])
def test_a_launch_of_a_config_built_where_the_reader_cannot_follow_is_checked_unknown(tmp_path, run_cli, launch):
    # The script launches Bridge's pretrain: a training run, whose config comes from a module that is not
    # there -- every key unknown, with where the config came from; never "not a training run".
    path = _write(tmp_path, {}, "train.py", f"from nowhere import build_config\ncfg = build_config()\n{launch}\n")
    code, out, err = run_cli("check", path, "--format", "json", "--show-effective")
    result = json.loads(out)["results"][0]
    assert result["error"] is None and code == 0
    assert all(v["source"] == "unknown" for k, v in result["effective"].items() if not k.startswith("env."))
    assert "build_config(...) at" in result["effective"]["ddp.overlap_grad_reduce"]["reason"]


def test_a_launch_that_is_not_bridges_or_a_helper_never_called_is_no_run(tmp_path, run_cli):
    own = _write(tmp_path, {}, "own.py", "from nowhere import build_config\n\ndef pretrain(cfg, step):\n    pass\n\n"
                 "cfg = build_config()\npretrain(cfg, None)\n")
    own.write_text(own.read_text().replace(LAUNCH, ""))
    helper = _write(tmp_path, {}, "helper.py", "def go(cfg):\n    pretrain(cfg, forward_step)\n")
    for path in (own, helper):
        code, out, err = run_cli("check", path)
        assert code == 0 and "skipped: not a training run: builds no ConfigContainer" in out + err, path


def test_a_folder_checks_the_script_and_the_builder_each_once(tmp_path, run_cli):
    files, script, body = LAYOUTS["from_import"]
    _write(tmp_path, files, script, body)
    code, out, err = run_cli("check", tmp_path, "--format", "json", "--world-size", "8")
    checked = sorted(r["file"].split("/")[-1] for r in json.loads(out)["results"])
    assert checked == ["configs.py::build_config", "train.py"]


def test_an_unknown_config_an_if_does_not_touch_keeps_its_own_reason(tmp_path, run_cli):
    # An ``if`` on something not known that leaves the config alone (a rank-0 print) says nothing about it:
    # the reason stays the call that built it.
    path = _write(tmp_path, {}, "train.py", """
        import os
        from nowhere import build_config

        cfg = build_config()
        if os.environ["RANK"] == "0":
            print(cfg)
        pretrain(cfg, forward_step)
        """)
    code, out, err = run_cli("check", path, "--format", "json", "--show-effective")
    reason = json.loads(out)["results"][0]["effective"]["model.tensor_model_parallel_size"]["reason"]
    assert f"build_config(...) at {path}:7 (imported from nowhere) is not known" in reason
    assert "depends on the condition" not in reason
