"""A student's own comparison with several seeds: launched as a sweep, drawn seed by seed with the mean and a band,
and judged by the verdict in the reader's language."""
from __future__ import annotations

import pytest
from django.utils import translation

from modelcore.experiments.verdict import verdict
from webapp.experiments.figures import machine_words, run_figures, verdict_sentence
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import params_key

pytestmark = pytest.mark.django_db


def _sweep_result(post: list[list[float]], pre: list[list[float]]) -> dict:
    arms = []
    for label, curves in (("post", post), ("pre", pre)):
        runs = [{"seed": seed, "loss": curve, "final_loss": curve[-1], "status": "completed", "diverged_at": None,
                 "reason": ""} for seed, curve in enumerate(curves)]
        arms.append({"label": label, "seeds": list(range(len(curves))), "runs": runs,
                     "final_losses": [c[-1] for c in curves]})
    finals = {arm["label"]: arm["final_losses"] for arm in arms}
    return {"switch": "norm_position", "seeds": list(range(len(post))), "steps": len(post[0]), "arms": arms,
            "verdict": verdict(finals).to_dict()}


APART = _sweep_result(post=[[3.0, 3.0, 2.99 + i / 1000] for i in range(4)],
                      pre=[[3.0, 1.5, 0.8 + i / 100] for i in range(4)])
OVERLAPPING = _sweep_result(post=[[3.0, 2.0, v] for v in (1.0, 1.2, 0.9, 1.1)],
                            pre=[[3.0, 2.0, v] for v in (1.1, 0.95, 1.15, 1.0)])


@pytest.mark.parametrize(("seeds", "kind"), [("1", "compare"), ("8", "sweep")])
def test_the_seeds_control_launches_one_run_or_a_sweep(client_as, student, launch_data, seeds, kind):
    response = client_as(student).post("/experiments/launch/", {**launch_data, "sweep_seeds": seeds})
    assert response.status_code == 302
    run = ExperimentRun.objects.get()
    assert run.kind == kind and run.params.get("seeds", 1) == int(seeds)
    if kind == "sweep":
        assert run.display_name() == "paired training runs, several seeds: Post-LN against Pre-LN, 2 layers, seeds 0–7"


def test_the_form_offers_1_4_8_and_16_seeds_and_refuses_others(client_as, student, launch_data):
    page = client_as(student).get("/experiments/").content.decode()
    for n in (1, 4, 8, 16):
        assert f'<option value="{n}"' in page
    response = client_as(student).post("/experiments/launch/", {**launch_data, "sweep_seeds": "3"})
    assert response.status_code == 422 and 'data-testid="error-sweep_seeds"' in response.content.decode()
    assert not ExperimentRun.objects.exists()


def test_a_sweep_draws_every_seed_faint_the_mean_bold_and_a_band():
    loss = run_figures("sweep", APART)["loss"]["data"]
    faint = [t for t in loss if t.get("showlegend") is False and t["line"].get("width") == 1]
    bold = [t for t in loss if t["line"].get("width") == 3]
    bands = [t for t in loss if t.get("fill") == "tonexty"]
    assert len(faint) == 8 and all("0.25)" in t["line"]["color"] for t in faint)  # 4 seeds x 2 arms, see-through
    assert [t["name"] for t in bold] == ["Post-LN: mean of 4 seeds", "Pre-LN: mean of 4 seeds"]
    assert bold[1]["y"] == pytest.approx([3.0, 1.5, 0.815])
    assert len(bands) == 2
    final = run_figures("sweep", APART)["final"]["data"]
    assert sorted(final[2]["y"]) == pytest.approx([0.8, 0.81, 0.82, 0.83])


def test_the_verdict_names_an_arm_only_when_the_seeds_support_it_in_both_languages():
    assert verdict_sentence(APART["verdict"]).startswith("Answer: Pre-LN. Pre-LN lowest in 4 of 4 seeds: mean 0.82 ± 0.0065 against Post-LN 2.99")
    assert verdict_sentence(OVERLAPPING["verdict"]).startswith("No reliable difference:")
    with translation.override("zh-hans"):
        assert verdict_sentence(APART["verdict"]).startswith("答案：Pre-LN。Pre-LN 在 4 个种子中有 4 个最终最低")
        assert verdict_sentence(OVERLAPPING["verdict"]).startswith("没有可靠的差别：")


def test_a_finished_sweep_s_result_fragment_shows_the_verdict_and_the_figures(client_as, student):
    params = {"switch": "norm_position", "seeds": 4, "layers": 2, "d_model": 32, "d_ff": 128, "steps": 3}
    run = ExperimentRun.objects.create(kind="sweep", params=params, params_key=params_key("sweep", params),
                                       status=ExperimentRun.Status.SUCCEEDED, result=OVERLAPPING, owner=student)
    page = client_as(student).get(f"/experiments/runs/{run.pk}/result/").content.decode()
    assert 'data-testid="verdict"' in page and "No reliable difference" in page
    assert 'data-testid="plot-loss"' in page and 'data-testid="plot-final"' in page


def test_a_sweep_run_executes_in_the_worker_and_its_page_shows_the_verdict(client_as, student):
    from tests.fixtures.experiments import TINY_COMPARE
    from webapp.experiments.services import experiment_run_execute, experiment_run_request

    run = experiment_run_request(user=student, kind="sweep", params={**TINY_COMPARE, "seeds": 4}).run
    experiment_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.progress == 1.0
    assert [[r["seed"] for r in arm["runs"]] for arm in run.result["arms"]] == [[0, 1, 2, 3]] * 2
    assert run.result["verdict"]["seeds"] == 4
    page = client_as(student).get(f"/experiments/runs/{run.pk}/result/").content.decode()
    assert 'data-testid="verdict"' in page and 'data-testid="plot-loss"' in page


@pytest.mark.parametrize(("path", "kind", "testid"), [("/experiments/norm-position/", "norm-position", "norm_position"),
                                                     ("/experiments/norm-position/", "warmup", "warmup"),
                                                     ("/experiments/residuals/", "residual", "residual")])
def test_a_page_quotes_a_comparison_s_kept_sweep_beside_its_one_seed_run(client_as, student, path, kind, testid):
    from tests.fixtures.experiments import MACHINE, kept_sweep
    from webapp.classroom.wording import arms

    first, second = arms(kind)
    kept_sweep(kind, {first: [1.0 + i / 100 for i in range(16)], second: [1.05 - i / 100 for i in range(16)]},
               seeds=16)
    page = client_as(student).get(path).content.decode()
    said = page.split(f'data-testid="over-seeds-{testid}">')[1].split("</p>")[0]
    assert said.startswith(f"This run is one seed (seed 0). Over 16 seeds, trained on {machine_words(MACHINE)}: No reliable")


def test_the_norm_position_page_quotes_the_shipped_warmup_sweep(client_as, student):
    import json

    from webapp.experiments.pages import defaults_path

    shipped = json.loads(defaults_path("sweeps").read_text(encoding="utf-8"))["warmup"]["result"]
    page = client_as(student).get("/experiments/norm-position/").content.decode()
    said = page.split('data-testid="over-seeds-warmup">')[1].split("</p>")[0]
    assert said == (f"This run is one seed (seed 0). Over 16 seeds, trained on {machine_words(shipped['machine'])}: "
                    f"{verdict_sentence(shipped['verdict'])}")
    assert said.endswith("Answer: with warmup. with warmup lowest in 16 of 16 seeds: mean 2.28 ± 0.03 against "
                         "without warmup 2.98 ± 0.02 (± one standard error).")
