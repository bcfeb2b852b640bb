"""A run is named by what it compares, so a student's recent runs can be told apart (in both languages)."""
from __future__ import annotations

import pytest
from django.utils import translation

from modelcore.experiments import canonical_params
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import params_key

pytestmark = pytest.mark.django_db


def run_of(owner, kind: str, **params) -> ExperimentRun:
    return ExperimentRun.objects.create(kind=kind, params=canonical_params(kind, params),
                                        params_key=params_key(kind, params), owner=owner)


def test_each_run_is_named_by_its_kind_arms_layers_and_seed(student):
    translation.activate("en")  # whatever language an earlier test left active in this thread
    assert str(run_of(student, "compare", layers=6, seed=0)) == "paired training runs: Post-LN against Pre-LN, 6 layers, seed 0"
    assert str(run_of(student, "compare", layers=1, seed=7, switch="warmup")) == \
        "paired training runs: with warmup against without warmup, 1 layer, seed 7"
    assert str(run_of(student, "gradflow", layers=12, norm_position="pre", seed=2, seeds=3)) == \
        "gradients at initialisation: Pre-LN, 12 layers, seeds 2–4"
    assert str(run_of(student, "drift", layers=6, seed=0, seeds=1)) == \
        "representation drift: with residuals against without residuals, 6 layers, seed 0"


def test_the_recent_runs_tell_two_comparisons_apart_in_both_languages(client_as, student):
    first = run_of(student, "compare", layers=2, seed=1)
    second = run_of(student, "compare", layers=2, seed=2, switch="residual")
    client = client_as(student)
    page = client.get("/experiments/").content.decode()
    runs = page.split('data-testid="my-runs"', 1)[1].split("</ul>", 1)[0]
    assert "Post-LN against Pre-LN, 2 layers, seed 1" in runs
    assert "with residuals against without residuals, 2 layers, seed 2" in runs and "#" not in runs
    run_page = client.get(f"/experiments/runs/{first.pk}/").content.decode()
    assert "<h1>paired training runs: Post-LN against Pre-LN, 2 layers, seed 1</h1>" in run_page
    assert "<title>paired training runs: Post-LN against Pre-LN, 2 layers, seed 1" in run_page
    assert 'data-testid="run-name">paired training runs: Post-LN against Pre-LN, 2 layers, seed 1</a>' in run_page
    client.cookies["django_language"] = "zh-hans"
    page = client.get(f"/experiments/runs/{second.pk}/").content.decode()
    assert "<h1>成对训练对比：有残差 对比 无残差，2 层，种子 2</h1>" in page


def test_a_sweep_of_the_lesson_s_comparisons_or_the_depths_names_its_arms(student):
    from webapp.experiments.pages import sweep_preset

    translation.activate("en")
    names = {name: str(run_of(student, "sweep", **sweep_preset(name, 16))) for name in ("mask", "ffn", "depth")}
    assert names["mask"] == "paired training runs, several seeds: causal mask against no mask, 2 layers, seeds 0–15"
    assert names["ffn"].endswith(": d_ff = 1 × d_model, d_ff = 2 × d_model against d_ff = 4 × d_model, 2 layers, "
                                 "seeds 0–15")
    assert names["depth"].endswith(": L = 6, L = 12 against L = 24, seeds 0–15")  # no one depth of its own
    with translation.override("zh-hans"):
        assert "有因果掩码" in str(ExperimentRun.objects.get(params__switch="mask"))
