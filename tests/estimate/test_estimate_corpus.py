"""Every recipe Bridge ships, estimated through the CLI on its own target (one in-process run per
(world size, GPU) group): either an estimate that keeps the invariants or one sentence naming what the
model cannot represent."""

import collections
import json

import pytest

from overlap_cli.frameworks.bridge import recipes as catalog

# Bridge's dumps (how: built); an entry read from source holds only the keys it knows (its model dimensions
# come from a Hugging Face config), so its text alone is no full config to estimate.
BUILT = [n for n in catalog.names("0.6.2") if catalog.how("0.6.2", n) == "built"]

PARTS = {"compute", "tp_exposed", "cp_exposed", "ep_exposed", "dp_exposed", "pp_bubble", "p2p_exposed"}
# What the model says it cannot model, and only that (each a precise sentence, no traceback).
KNOWN_LIMITS = ("is not a multiple of micro_batch_size*DP", "model.num_layers is 0")
NO_STEP_TIME = "has no published dense Tensor Core peak"  # Rubin: the memory only


@pytest.fixture
def corpus_results(tmp_path, run_cli):
    folder = tmp_path
    groups = collections.defaultdict(list)
    for name in BUILT:
        info = catalog.info("0.6.2", name)
        path = folder / f"{name}.yaml"
        path.write_text(catalog.text("0.6.2", name))
        groups[(info["world_size"], info["gpu"])].append(str(path))
    results = []
    for (world, gpu), files in groups.items():
        flags = ["--world-size", str(world)] + (["--gpu", gpu] if gpu else [])
        code, out, err = run_cli("estimate", *files, *flags, "--format", "json")
        assert "Traceback" not in err
        doc = json.loads(out)
        assert doc["version"] == 1
        assert [r["file"] for r in doc["results"]] == files
        errors = [r for r in doc["results"] if r["error"]]
        assert code == (2 if errors else 0)
        assert len(err.splitlines()) == len(errors)  # one line per file that cannot be estimated
        results += doc["results"]
    return results


def test_every_recipe_estimates_or_says_why_and_keeps_the_invariants(corpus_results):
    assert len(corpus_results) == len(BUILT)
    failed = [r for r in corpus_results if r["error"]]
    for r in failed:
        assert r["estimate"] is None
        assert "cannot estimate: " in r["error"] and any(k in r["error"] for k in KNOWN_LIMITS), r["error"]
    assert len(failed) <= 5  # the model covers every recipe but a handful of broken ones
    rubin = unknown_vocabulary = 0
    for r in corpus_results:
        if r["error"]:
            continue
        est = r["estimate"]
        assert set(est) == {"step_time_s", "interval_s", "interval", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
                            "breakdown_s", "memory", "warnings", "assumptions", "step_time_unavailable"}
        mem = est["memory"]
        assert mem["at_least_bytes"] > 0
        # the logits' activations (no pipelining) hold the vocabulary: unknown only with it
        act = mem["activation_bytes"]
        assert (act is None and bool(mem["vocabulary"]["unknown"])) or act > 0, mem
        if mem["vocabulary"]["unknown"]:  # a Hugging Face tokenizer the run takes its size from
            unknown_vocabulary += 1
            assert mem["vocabulary"]["rows"] is None and mem["weights_and_optimizer_bytes"] is None
            assert mem["total_bytes"] is None and "tokenizer" in mem["vocabulary"]["unknown"]
            assert mem["verdict"] in ("unknown vocabulary", "may not fit", "does not fit", "unknown capacity")
        else:
            assert mem["vocabulary"]["rows"] > 0 and mem["weights_and_optimizer_bytes"] > 0
            assert mem["total_bytes"] == mem["at_least_bytes"]
        if est["step_time_unavailable"]:  # no step-time figures for the GPU: the memory all the same
            rubin += 1
            assert NO_STEP_TIME in est["step_time_unavailable"] and est["step_time_s"] is None
            assert mem["capacity_bytes"] is None and mem["verdict"] == "unknown capacity" and not est["warnings"]
            continue
        lo, hi = est["interval_s"]
        assert lo <= est["step_time_s"] <= hi
        assert mem["capacity_bytes"] > 0
        assert mem["verdict"] in ("fits", "may not fit", "does not fit", "over the assumed GPU", "unknown vocabulary")
        # The world size is a flag here: over the GPU is a warning, except on a GPU nobody named (a note).
        assert bool(est["warnings"]) == (mem["verdict"] in ("may not fit", "does not fit"))
        assert bool(mem["note"]) == (mem["verdict"] == "over the assumed GPU")
        parts = est["breakdown_s"]
        assert set(parts) == PARTS
        assert all(v >= 0 for v in parts.values()), (r["file"], parts)
        assert sum(parts.values()) <= est["step_time_s"] * (1 + 1e-9)
        assert est["step_time_s"] >= parts["compute"] > 0
        assert est["tokens_per_s_per_gpu"] > 0 and est["model_tflops_per_gpu"] > 0
        assert all(isinstance(a, str) for a in est["assumptions"])
    assert rubin >= 10 and unknown_vocabulary >= 10


def test_no_recipe_comes_out_as_not_fitting_at_the_world_size_its_name_states(run_cli):
    """A recipe's ``<N>gpu`` is its model-parallel footprint (TP x PP x CP), not a DP the user chose: over the GPU
    there is a note with the smallest data-parallel size that fits, never "does not fit"."""
    from overlap_cli.check.engine import check
    from overlap_cli.estimate.inputs import Unsupported, shape_from_view
    from overlap_cli.estimate.memory import estimate_memory
    from overlap_cli.launch_profile.profile import build_target

    verdicts = collections.Counter()
    for name in catalog.names("0.6.2"):
        checked = check(None, build_target({"recipe": name}), [])
        try:
            m = estimate_memory(shape_from_view(checked.view, step_time=False))
        except Unsupported:
            continue
        v = m.verdict()
        verdicts[v] += 1
        assert v != "does not fit", name
        if v == "fits with more data parallelism":
            at = m.fits_at()
            assert at["data_parallel_size"] > m.shape.dp and at["total_bytes"] <= m.capacity < m.total, name
            assert m.warning(m.shape.gpu) is None and f"at DP {at['data_parallel_size']} " in m.note(m.shape.gpu)
    assert verdicts["fits with more data parallelism"] >= 15 and verdicts["fits"] >= 320
    # a Hugging Face tokenizer the run takes its size from: the embedding is unknown, never a guessed size
    assert verdicts["unknown vocabulary"] >= 40
