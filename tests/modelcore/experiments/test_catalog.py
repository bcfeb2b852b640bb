"""Experiments by name: canonical parameters (what results are keyed by) and each kind run end to end."""
from __future__ import annotations

import pytest

from modelcore.experiments import canonical_params, run_experiment

SMALL = {"layers": 2, "d_model": 32, "d_ff": 64}
SHORT_RUN = {**SMALL, "n_train": 100, "steps": 6, "batch_size": 8, "eval_every": 3, "eval_size": 8}



def test_defaults_are_filled_in_so_equal_requests_have_equal_parameters():
    assert canonical_params("compare", {}) == canonical_params("compare", {"switch": "norm_position", "lr": 3e-3})
    # The switched setting does not matter: the two arms set it.
    assert canonical_params("compare", {"norm_position": "pre"}) == canonical_params("compare", {})
    assert canonical_params("compare", {"switch": "warmup"}) == canonical_params(
        "compare", {"switch": "warmup", "warmup_steps": 60})  # a fifth of the 300 steps
    assert canonical_params("compare", {"switch": "warmup"}) != canonical_params(
        "compare", {"switch": "warmup", "warmup_steps": 30})
    params = canonical_params("gradflow", {"layers": 12})
    assert params["layers"] == 12 and params["seeds"] == 3
    assert "steps" not in params and "lr" not in params  # nothing a measurement at init does not depend on


@pytest.mark.parametrize(("kind", "params", "message"), [
    ("poetry", {}, "unknown experiment"),
    ("compare", {"switch": "dropout"}, "unknown switch"),
    ("compare", {"colour": "red"}, "unknown parameters"),
    ("gradflow", {"seeds": 0}, "seeds"),
    ("gradflow", {"d_model": 30}, "divisible"),
    ("drift", {"sentence": ""}, "sentence"),
])
def test_bad_parameters_are_refused_with_their_reason(kind, params, message):
    with pytest.raises(ValueError, match=message):
        canonical_params(kind, params)


def test_a_comparison_reports_progress_for_both_arms_up_to_the_end():
    reports = []
    result = run_experiment("compare", {**SHORT_RUN, "switch": "residual"}, on_progress=reports.append)
    assert [arm["label"] for arm in result["arms"]] == ["residual", "no residual"]
    assert {r["arm"] for r in reports} == {"residual", "no residual"}
    progress = [r["progress"] for r in reports]
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert result["params"]["switch"] == "residual" and result["kind"] == "compare"


def test_gradflow_drift_and_norms_each_give_their_figures():
    gradflow = run_experiment("gradflow", {**SMALL, "seeds": 1})
    assert len(gradflow["layers"]) == 4 and gradflow["inputs"]["src_embed"] > 0
    drift = run_experiment("drift", {**SMALL, "seeds": 1})
    assert drift["tokens"][-1] == "<eos>" and len(drift["tokens"]) > 5
    assert [arm["residual"] for arm in drift["arms"]] == [True, False]
    assert len(drift["arms"][0]["layers"][0]["cosine"]) == len(drift["tokens"])
    norms = run_experiment("norms", {**SHORT_RUN, "task": "zh-en"})
    assert [arm["label"] for arm in norms["arms"]] == ["layernorm", "rmsnorm"]
    layernorm = norms["arms"][0]
    assert len(layernorm["init"]) == len(layernorm["trained"]) == 2 * 2 + 2 * 3
    assert len(layernorm["init"][0]["in_mean"]) == len(norms["src_tokens"])
    assert norms["tgt_tokens"][0] == "<bos>"
