"""Every recipe Bridge ships, estimated through the CLI on its own target (one in-process run per
(world size, GPU) group): either an estimate that keeps the invariants or one sentence naming what the
model cannot represent."""

import collections
import json

import pytest

from overlap_cli.frameworks.bridge import recipes as catalog

PARTS = {"compute", "tp_exposed", "cp_exposed", "ep_exposed", "dp_exposed", "pp_bubble", "p2p_exposed"}
# What the model says it cannot model, and only that (each a precise sentence, no traceback).
KNOWN_LIMITS = ("has no published dense Tensor Core peak", "is not a multiple of micro_batch_size*DP",
                "model.num_layers is 0")


@pytest.fixture
def corpus_results(tmp_path, run_cli):
    folder = tmp_path
    groups = collections.defaultdict(list)
    for name in catalog.names():
        info = catalog.info(name)
        path = folder / f"{name}.yaml"
        path.write_text(catalog.text(name))
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
    assert len(corpus_results) == len(catalog.names())
    failed = [r for r in corpus_results if r["error"]]
    for r in failed:
        assert r["estimate"] is None
        assert "cannot estimate: " in r["error"] and any(k in r["error"] for k in KNOWN_LIMITS), r["error"]
    rubin = sum(1 for r in failed if "Rubin" in r["error"])
    assert len(failed) - rubin <= 5  # the model covers every non-Rubin recipe but a handful of broken ones
    for r in corpus_results:
        if r["error"]:
            continue
        est = r["estimate"]
        assert set(est) == {"step_time_s", "interval_s", "interval", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
                            "breakdown_s", "memory", "warnings", "assumptions"}
        lo, hi = est["interval_s"]
        assert lo <= est["step_time_s"] <= hi
        mem = est["memory"]
        assert mem["weights_and_optimizer_bytes"] > 0 and mem["activation_bytes"] > 0 and mem["capacity_bytes"] > 0
        assert mem["verdict"] in ("fits", "may not fit", "does not fit")
        assert bool(est["warnings"]) == (mem["verdict"] != "fits")
        parts = est["breakdown_s"]
        assert set(parts) == PARTS
        assert all(v >= 0 for v in parts.values()), (r["file"], parts)
        assert sum(parts.values()) <= est["step_time_s"] * (1 + 1e-9)
        assert est["step_time_s"] >= parts["compute"] > 0
        assert est["tokens_per_s_per_gpu"] > 0 and est["model_tflops_per_gpu"] > 0
        assert all(isinstance(a, str) for a in est["assumptions"])
