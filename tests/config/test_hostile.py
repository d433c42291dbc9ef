"""Hostile input: each is refused or handled with one clear line, never a traceback, a hang or a crash.

Behaviour only. How long each takes and how much memory it needs is measured by bench/bench.py; the
subprocess timeouts here only stop a hung run from hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.hostile import HOSTILE
from overlap_cli.check.engine import check, check_file
from overlap_cli.launch_profile.profile import Target
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLE = ROOT / "examples" / "llama3_70b_tuned.yaml"
HANG_GUARD = 120  # seconds; a hang, not a measurement


def overlap(*args, env=None, cwd=ROOT, python_prelude: str = ""):
    """Run the real CLI in a fresh interpreter: (exit code, stdout, stderr)."""
    code = python_prelude + "import sys\nfrom overlap_cli.cli.fast import main\nsys.argv = ['overlap'] + sys.argv[1:]\nmain()\n"
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True, text=True, timeout=HANG_GUARD, cwd=cwd, env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr


def one_line_naming(path: Path, out: str, err: str) -> str:
    lines = [ln for ln in (out + err).splitlines() if ln.startswith(str(path))]
    assert len(lines) == 1, (out, err)
    return lines[0]


@pytest.mark.parametrize("name,make,expected", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_input_is_refused_with_one_line(tmp_path, name, make, expected):
    path = make(tmp_path)
    code, out, err = overlap("check", path)
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    assert expected in one_line_naming(path, out, err)


def test_python_tag_never_runs(tmp_path):
    from bench.hostile import python_object_tag

    path = python_object_tag(tmp_path)
    for args in (("check", path), ("check", path, "--format", "json"), ("fix", "--write", path)):
        code, out, err = overlap(*args)
        assert code == 2, (args, out, err)
    assert not (tmp_path / "python_tag_ran").exists()


@pytest.mark.parametrize("tag", ["!!python/object/new:os.system", "!!python/name:os.system", "!!python/module:os", "!custom"])
def test_object_tags_are_refused_in_process(tmp_path, tag):
    path = tmp_path / "tagged.yaml"
    path.write_text(f"model:\n  tensor_model_parallel_size: {tag} [\"echo\"]\n")
    r = check_file(str(path), Target())
    assert r.error is not None and "is not allowed" in r.error.message
    assert (r.error.line, r.error.key) == (2, "model.tensor_model_parallel_size")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_device_paths_are_not_read(device):
    if not os.path.exists(device):
        pytest.skip(f"{device} missing")
    code, out, err = overlap("check", device)
    assert code == 2
    assert "not a regular file" in one_line_naming(Path(device), out, err)


def test_directory_is_not_read_as_a_file(tmp_path):
    r = check_file(str(tmp_path), Target())
    assert r.error is not None and "directory" in r.error.message


def test_fifo_is_never_opened(tmp_path):
    """In-process as well: if the loader opened the FIFO for reading, this call would block forever,
    so a writer thread stands by to release it, and records whether it was ever needed."""
    from bench.hostile import fifo

    path = fifo(tmp_path)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("r", check_file(str(path), Target())), daemon=True)
    worker.start()
    worker.join(HANG_GUARD / 4)
    released = False
    if worker.is_alive():  # blocked in open(): release it so the suite goes on, then fail
        released = True
        with open(path, "w") as fh:
            fh.write("model: {}\n")
        worker.join(HANG_GUARD / 4)
    assert not released, "the FIFO was opened for reading"
    assert "not a regular file" in result["r"].error.message


def test_file_changing_while_read(tmp_path):
    """A writer rewrites the file in place (truncate, then write: not atomic) as fast as it can while it
    is checked again and again. Each check sees either one whole version or reports the change; never a
    traceback, never an exit-2 result without its file named."""
    path = tmp_path / "moving.yaml"
    versions = [EXAMPLE.read_text(), EXAMPLE.read_text() + "".join(f"# padding line {i}\n" for i in range(2000))]
    path.write_text(versions[0])
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            with open(path, "w") as fh:
                fh.write(versions[i % 2][: len(versions[i % 2]) // 2])
                fh.flush()
                fh.write(versions[i % 2][len(versions[i % 2]) // 2:])
            i += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    seen = set()
    try:
        for _ in range(200):
            r = check_file(str(path), Target())
            if r.error is None:
                seen.add("checked")
            else:
                assert r.error.file == str(path)
                seen.add(r.error.message.split(":")[0])
    finally:
        stop.set()
        t.join()
    assert seen <= {"checked", "file changed while being read; check it again once it is written", "invalid YAML",
                    "empty document, expected a mapping of config sections"}, seen


def test_file_growing_without_end_is_refused_or_read_once(tmp_path):
    """Appended to without pause: the read stops at the size limit or at a stable snapshot."""
    path = tmp_path / "growing.yaml"
    path.write_text("model:\n  tensor_model_parallel_size: 1\n")
    stop = threading.Event()

    def appender():
        with open(path, "a") as fh:
            while not stop.is_set():
                fh.write("# more\n" * 64)
                fh.flush()

    t = threading.Thread(target=appender, daemon=True)
    t.start()
    try:
        results = [check_file(str(path), Target()) for _ in range(20)]
    finally:
        stop.set()
        t.join()
    for r in results:
        assert r.error is None or r.error.message.startswith(("file changed while being read", "file is ", "file grew past"))


# ---------------------------------------------------------------------------------------------------
# Nothing a config names is imported; interpolations use OmegaConf's built-in resolvers only
# ---------------------------------------------------------------------------------------------------


def _sentinel(tmp_path: Path) -> tuple[Path, Path]:
    """A module that leaves a file behind if anything ever imports it."""
    pkg = tmp_path / "site"
    pkg.mkdir()
    marker = tmp_path / "sentinel_imported"
    (pkg / "overlap_sentinel_target.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "class Model:\n    pass\n"
        "def system(*a, **k):\n    open(" + repr(str(marker)) + ", 'w').write('called')\n"
    )
    return pkg, marker


def test_target_is_never_imported(tmp_path):
    pkg, marker = _sentinel(tmp_path)
    cfg = tmp_path / "targets.yaml"
    cfg.write_text(
        "_target_: overlap_sentinel_target.system\n"
        "model:\n"
        "  _target_: overlap_sentinel_target.Model\n"
        "  tensor_model_parallel_size: 2\n"
        "  sequence_parallel: true\n"
        "  init_method:\n"
        "    _target_: os.system\n"
        "    _args_: ['touch " + str(marker) + "']\n"
        "comm_overlap:\n"
        "  _target_: overlap_sentinel_target.Model\n"
        "  tp_comm_overlap: true\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(pkg), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for args in (("check", cfg), ("check", cfg, "--format", "json"), ("check", cfg, "--annotate"), ("fix", cfg), ("fix", "--write", cfg)):
        code, out, err = overlap(*args, env=env)
        assert code in (0, 1), (args, out, err)
        assert not marker.exists(), args
    # and in this process too
    sys.path.insert(0, str(pkg))
    try:
        r = check_file(str(cfg), Target())
        assert r.error is None
        assert "overlap_sentinel_target" not in sys.modules
    finally:
        sys.path.remove(str(pkg))
    assert not marker.exists()


def test_unknown_resolver_is_left_unresolved_and_never_registered(tmp_path):
    from omegaconf import OmegaConf

    cfg = tmp_path / "resolver.yaml"
    cfg.write_text(
        "model:\n"
        "  tensor_model_parallel_size: 2\n"
        "  sequence_parallel: true\n"
        "  my_note: ${foo:bar}\n"
        "  my_copy: ${model.my_note}\n"
        "  my_shell: ${os.system:touch pwned}\n"
        "  my_layers: ${model.tensor_model_parallel_size}\n"
    )
    checked = check(str(cfg), Target())
    r = checked.result
    assert r.error is None, r.error
    notes = "\n".join(r.notes)
    assert "model.my_note: ${foo:bar} left unresolved: 'foo' is not one of OmegaConf's built-in resolvers" in notes
    assert "model.my_copy: ${model.my_note} left unresolved" in notes
    assert "'os.system' is not one of" in notes
    view = checked.view
    assert view.cfg.get(("model", "my_note")) == "${foo:bar}"
    assert view.cfg.get(("model", "my_layers")) == 2  # the built-in interpolation still resolves
    assert not OmegaConf.has_resolver("foo") and not OmegaConf.has_resolver("os.system")
    assert not (tmp_path / "pwned").exists() and not (ROOT / "pwned").exists()
    code, out, _ = overlap("check", cfg, "--format", "json")
    assert code in (0, 1)
    assert any("left unresolved" in n for n in json.loads(out)["results"][0]["notes"])


def test_env_interpolation_uses_this_machine_and_says_so(tmp_path):
    cfg = tmp_path / "env.yaml"
    cfg.write_text(
        "model:\n"
        "  tensor_model_parallel_size: ${oc.decode:${oc.env:OVERLAP_TEST_TP}}\n"
        "  sequence_parallel: true\n"
    )
    code, out, err = overlap("check", cfg, "--format", "json", env={"OVERLAP_TEST_TP": "4"})
    assert code in (0, 1), err
    result = json.loads(out)["results"][0]
    tp = result["effective"]["model.tensor_model_parallel_size"]
    assert tp["value"] == 4
    assert tp["reason"] == "set in the file through the interpolation ${oc.decode:${oc.env:OVERLAP_TEST_TP}}"
    assert any("${oc.env:...} was resolved with this machine's environment" in n for n in result["notes"])
    code, out, err = overlap("check", cfg, env={"OVERLAP_TEST_TP": "8"})
    assert "note: ${oc.env:...} was resolved with this machine's environment" in out


def test_env_interpolation_unset_here_is_left_unresolved(tmp_path):
    cfg = tmp_path / "env_unset.yaml"
    cfg.write_text("model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: true\n  my_path: ${oc.env:OVERLAP_SURELY_UNSET_VAR}\n")
    assert "OVERLAP_SURELY_UNSET_VAR" not in os.environ
    checked = check(str(cfg), Target())
    r = checked.result
    assert r.error is None
    assert any("OVERLAP_SURELY_UNSET_VAR" in n and "not set on this machine" in n for n in r.notes)
    assert checked.view.cfg.get(("model", "my_path")) == "${oc.env:OVERLAP_SURELY_UNSET_VAR}"


def test_missing_interpolation_key_is_an_input_error_with_its_line(tmp_path):
    cfg = tmp_path / "missing.yaml"
    cfg.write_text("model:\n  tensor_model_parallel_size: 2\n  seq: ${model.nope}\n")
    r = check_file(str(cfg), Target())
    assert r.error is not None and "unresolvable interpolation" in r.error.message
    assert r.error.line == 3


def test_long_interpolation_chain_is_bounded(tmp_path):
    cfg = tmp_path / "chain.yaml"
    cfg.write_text("model:\n  c0: 1\n" + "".join(f"  c{i}: ${{model.c{i - 1}}}\n" for i in range(1, 3000)))
    r = check_file(str(cfg), Target())
    assert r.error is not None and "interpolations" in r.error.message


# ---------------------------------------------------------------------------------------------------
# Without libyaml (a PyYAML built from source): the same answers, and deep nesting is still refused
# ---------------------------------------------------------------------------------------------------

NO_LIBYAML = "import yaml\nif hasattr(yaml, 'CSafeLoader'):\n    del yaml.CSafeLoader\n"


def test_pure_python_yaml_gives_the_same_result():
    code_c, out_c, _ = overlap("check", EXAMPLE, "--format", "json")
    code_py, out_py, _ = overlap("check", EXAMPLE, "--format", "json", python_prelude=NO_LIBYAML)
    assert code_c == code_py
    assert json.loads(out_c) == json.loads(out_py)


@pytest.mark.parametrize("depth", [150, 10_000])
def test_pure_python_yaml_deep_nesting(tmp_path, depth):
    path = tmp_path / "deep.yaml"
    path.write_text("model:\n  x: " + "[" * depth + "]" * depth + "\n")
    code, out, err = overlap("check", path, python_prelude=NO_LIBYAML)
    assert "Traceback" not in out + err
    if depth > 200:
        assert code == 2 and "nesting deeper than" in one_line_naming(path, out, err)
    else:
        assert code in (0, 1, 2)
        if code == 2:
            one_line_naming(path, out, err)


def test_override_path_depth_is_bounded(tmp_path):
    key = ".".join(["a"] * 5000)
    code, out, err = overlap("check", EXAMPLE, f"+{key}=1")
    assert code == 2 and "Traceback" not in out + err
    assert "deeper than" in err


# ---------------------------------------------------------------------------------------------------
# fix --write under concurrency: one complete result, never a torn file
# ---------------------------------------------------------------------------------------------------


def _dumped_model_example() -> str:
    """examples/tp_overlap_without_sp.yaml with its model section as Bridge serialises it (``_target_``):
    its sequence_parallel: false is then Bridge's value, and TP102's fix is safe."""
    return (ROOT / "tests" / "data" / "tp102_dumped_model.yaml").read_text()


def test_two_fix_processes_on_one_file_leave_one_complete_result(tmp_path):
    source = tmp_path / "source.yaml"
    source.write_text(_dumped_model_example())
    reference = tmp_path / "reference.yaml"
    reference.write_text(source.read_text())
    code, _, err = overlap("fix", "--write", reference)
    assert code in (0, 1), err
    expected = reference.read_bytes()
    assert expected != source.read_bytes()  # there is something to fix, so both processes want to write

    runner = "import sys\nfrom overlap_cli.cli.fast import main\nsys.argv = ['overlap'] + sys.argv[1:]\nmain()\n"
    for round_ in range(8):
        target = tmp_path / f"shared_{round_}.yaml"
        target.write_text(source.read_text())
        procs = [
            subprocess.Popen([sys.executable, "-c", runner, "fix", "--write", str(target)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        outcomes = [p.communicate(timeout=HANG_GUARD) for p in procs]
        for p, (out, err) in zip(procs, outcomes):
            assert "Traceback" not in out + err
            # the loser of a race may refuse to write over a file that changed under it (exit 2, one line)
            assert p.returncode in (0, 1, 2), (out, err)
        assert target.read_bytes() == expected, f"round {round_}: torn or partial result"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert not leftovers, leftovers


# ---------------------------------------------------------------------------------------------------
# Hostile numbers: found by bench/fuzz_long.py (an hours-long loop, then math domain errors)
# ---------------------------------------------------------------------------------------------------

HOSTILE_NUMBERS = {
    "huge_num_layers_pp_without_vpp": "model:\n  num_layers: 1" + "0" * 60 + "1\n  pipeline_model_parallel_size: 4\n"
                                      "comm_overlap:\n  tp_comm_overlap: false\n",
    "huge_tp_with_tp_overlap": "model:\n  tensor_model_parallel_size: " + "9" * 324 + "\n  sequence_parallel: true\n"
                               "comm_overlap:\n  tp_comm_overlap: true\n",
    "negative_hidden_size": "model:\n  tensor_model_parallel_size: 4\n  sequence_parallel: true\n  hidden_size: -8192\n"
                            "  seq_length: 0\ncomm_overlap:\n  tp_comm_overlap: true\n",
    "int_past_str_digit_limit": "model:\n  num_layers: " + "7" * 5000 + "\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_NUMBERS))
def test_hostile_numbers_neither_hang_nor_crash(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(HOSTILE_NUMBERS[name])
    for args in (("check", path), ("fix", "--unsafe-fixes", path), ("fix", "--write", path)):
        code, out, err = overlap(*args)  # a hang trips HANG_GUARD and fails the test
        assert "Traceback" not in out + err, (args, err[-800:])
        assert code in (0, 1, 2), (args, out, err)
        if code == 2:
            one_line_naming(path, out, err)


def test_fix_leaves_a_file_the_round_trip_parser_cannot_read(tmp_path):
    """``2001-02-30`` is a string to OmegaConf (and to the checker) but an impossible date to ruamel.
    A scalar fix is made on the text and never meets ruamel (the date stays as written); a fix that needs
    the round-trip tree (here: creating env_vars for ENV501 on H100) is refused with one line, and the
    whole file is left untouched."""
    path = tmp_path / "date.yaml"
    text = _dumped_model_example() + "checkpoint:\n  tag: 2001-02-30\n"
    path.write_text(text)
    code, out, err = overlap("check", path)
    assert code in (0, 1), err
    code, out, err = overlap("fix", "--write", "--gpu", "h100", path)
    assert "Traceback" not in out + err
    assert path.read_text() == text
    assert "not fixed: the round-trip YAML parser cannot read this file" in err
    code, out, err = overlap("fix", "--write", path)
    assert "Traceback" not in out + err and code == 0, err
    assert path.read_text() == text.replace("sequence_parallel: false ", "sequence_parallel: true  ").replace(
        "needs this\n", "needs this  # overlap: TP102 TP overlap needs sequence parallelism\n", 1
    )
