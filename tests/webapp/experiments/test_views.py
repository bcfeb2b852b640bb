"""The experiment pages, the launch form with its bounds and quota, and run pages."""
from __future__ import annotations

import json
import re

import pytest

from webapp.experiments.models import ExperimentRun
from webapp.experiments.pages import PAGES
from webapp.experiments.services import params_key

pytestmark = pytest.mark.django_db


def figures_of(response) -> dict:
    """The figures JSON a page hands to experiments.js."""
    found = re.findall(r'<script type="application/json">(.*?)</script>', response.content.decode(), re.S)
    assert found, "no figures JSON on the page"
    return json.loads(found[0])


@pytest.mark.parametrize(("path", "expected"), [
    ("/experiments/norm-position/", {"init_decoder", "init_encoder", "loss", "accuracy", "heatmap_post",
                                     "heatmap_pre", "warmup_loss", "depth_decoder",
                                     "depth_decoder_scaled"}),
    ("/experiments/residuals/", {"init_decoder_6", "init_encoder_24", "drift_cosine", "drift_distance",
                                 "drift_positions", "drift_spread", "loss"}),
    ("/experiments/layernorm/", {"positions_layernorm", "positions_rmsnorm", "means", "variances", "loss"}),
])
def test_a_fresh_install_shows_every_figure_from_the_shipped_results(client_as, student, path, expected):
    response = client_as(student).get(path)
    assert response.status_code == 200
    figures = figures_of(response)
    assert expected <= set(figures)
    assert all(figure["data"] for figure in figures.values())
    assert b'data-testid="missing"' not in response.content
    assert b"plotly.min.js" in response.content


def test_the_pages_teach_the_correct_formulas(client_as, student):
    norm_page = client_as(student).get("/experiments/norm-position/").content.decode()
    assert "Post-LN: x<sub>l+1</sub> = LN(x<sub>l</sub> + F(x<sub>l</sub>))" in norm_page
    assert "Pre-LN: x<sub>l+1</sub> = x<sub>l</sub> + F(LN(x<sub>l</sub>)),&nbsp; y = LN(x<sub>L</sub>)" in norm_page
    layernorm_page = client_as(student).get("/experiments/layernorm/").content.decode()
    assert "LayerNorm keeps no running statistics" in layernorm_page


def test_the_pages_explain_in_chinese_too(client_as, student):
    client = client_as(student)
    client.cookies["django_language"] = "zh-hans"
    page = client.get("/experiments/residuals/").content.decode()
    assert "表示漂移" in page  # "Representation drift"
    assert "雅可比矩阵的连乘" in page  # the explanation of the gradient through the residual
    assert figures_of(client.get("/experiments/residuals/"))["drift_cosine"]["layout"]["title"]["text"] == "输入还剩多少"


def test_a_stored_run_is_shown_before_the_shipped_copy(client_as, student):
    kind, params = PAGES["norm-position"]["compare_warmup"]
    arm = {"label": "warmup", "run": {"status": "completed", "steps": [1, 2], "loss": [9.5, 9.25], "evals": [],
                                      "diverged_at": None, "reason": "", "grad_norms": {"steps": [], "layers": [], "layer": []}}}
    ExperimentRun.objects.create(kind=kind, params=params, params_key=params_key(kind, params),
                                 status=ExperimentRun.Status.SUCCEEDED, result={"arms": [arm]})
    figures = figures_of(client_as(student).get("/experiments/norm-position/"))
    assert figures["warmup_loss"]["data"][0]["y"] == [9.5, 9.25]


def test_the_index_offers_the_form_with_the_students_quota(client_as, student):
    page = client_as(student).get("/experiments/").content.decode()
    assert 'data-testid="launch-form"' in page and "3 more runs today" in page
    for link in ("/experiments/norm-position/", "/experiments/residuals/", "/experiments/layernorm/"):
        assert f'href="{link}"' in page


def test_a_valid_launch_queues_a_run_and_answers_its_live_panel(client_as, student, launch_data):
    response = client_as(student).post("/experiments/launch/", launch_data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    run = ExperimentRun.objects.get()
    assert run.owner == student and run.status == "queued" and run.kind == "compare"
    assert run.params["layers"] == 2 and run.params["d_ff"] == 128 and run.params["switch"] == "norm_position"
    assert f'data-run-id="{run.pk}"' in response.content.decode()
    assert 'data-testid="live-loss"' in response.content.decode()


def test_a_plain_form_post_is_sent_to_the_run_page(client_as, student, launch_data):
    response = client_as(student).post("/experiments/launch/", launch_data)
    run = ExperimentRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/experiments/runs/{run.pk}/"
    assert client_as(student).get(response["Location"]).status_code == 200


@pytest.mark.parametrize(("changes", "field"), [
    ({"layers": 12}, "layers"),  # students: at most 6
    ({"d_model": 256}, "d_model"),  # students: at most 128
    ({"d_model": 30}, "d_model"),  # not a multiple of the 4 heads
    ({"steps": 5000}, "steps"),
    ({"lr": 5}, "lr"),
    ({"warmup_steps": 50, "steps": 20}, "warmup_steps"),
    ({"switch": "dropout"}, "switch"),
    ({"layers": "many"}, "layers"),
])
def test_bad_launch_parameters_get_form_errors(client_as, student, launch_data, changes, field):
    response = client_as(student).post("/experiments/launch/", {**launch_data, **changes})
    assert response.status_code == 422
    assert f'data-testid="error-{field}"' in response.content.decode()
    assert not ExperimentRun.objects.exists()


def test_an_admin_may_launch_larger_runs(client_as, admin, launch_data):
    response = client_as(admin).post("/experiments/launch/", {**launch_data, "layers": 24, "d_model": 256,
                                                              "steps": 2000}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert ExperimentRun.objects.get().params["layers"] == 24


def test_a_student_over_quota_is_told_so(client_as, student, launch_data):
    client = client_as(student)
    for seed in range(3):
        assert client.post("/experiments/launch/", {**launch_data, "seed": seed}).status_code == 302
    response = client.post("/experiments/launch/", {**launch_data, "seed": 99})
    assert response.status_code == 429
    assert "used your 3 experiment runs for today" in response.content.decode()
    assert ExperimentRun.objects.count() == 3
    # htmx gets the same message in a 200, so that it swaps the form in.
    response = client.post("/experiments/launch/", {**launch_data, "seed": 99}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'data-testid="quota-error"' in response.content.decode()


def test_asking_again_returns_the_stored_run_and_costs_no_quota(client_as, student, launch_data):
    client = client_as(student)
    client.post("/experiments/launch/", launch_data)
    run = ExperimentRun.objects.get()
    run.status, run.result = ExperimentRun.Status.SUCCEEDED, {"arms": []}
    run.save()
    for _ in range(4):
        response = client.post("/experiments/launch/", launch_data, HTTP_HX_REQUEST="true")
        assert 'data-testid="stored"' in response.content.decode()
    assert ExperimentRun.objects.count() == 1
    assert "2 more runs today" in client.get("/experiments/").content.decode()


def test_parameters_that_ship_come_back_done_at_once(client_as, student):
    kind, params = PAGES["residuals"]["gradflow_6_res"]
    from webapp.experiments.services import experiment_run_request

    requested = experiment_run_request(user=student, kind=kind, params=params)
    assert requested.created is False and requested.run.status == "succeeded" and requested.run.shipped
    assert requested.run.result["layers"]
    response = client_as(student).get(f"/experiments/runs/{requested.run.pk}/result/")
    assert {"init_decoder", "init_encoder"} <= set(figures_of(response))


def test_an_unknown_run_is_404(client_as, student):
    assert client_as(student).get("/experiments/runs/999/").status_code == 404


def test_the_depth_sweep_draws_both_layouts_at_6_12_and_24_layers(client_as, student):
    figures = figures_of(client_as(student).get("/experiments/norm-position/"))
    traces = {trace["name"]: trace for trace in figures["depth_decoder_scaled"]["data"]}
    assert set(traces) == {"Post-LN", "Pre-LN"}
    assert all(trace["x"] == [6, 12, 24] for trace in traces.values())
    pre = traces["Pre-LN"]["y"]
    assert max(pre) / min(pre) < 1.1  # the Pre-LN gradient times √L stays put: the 1/√L of Xiong et al.'s bound
    post = figures["depth_decoder"]["data"][0]["y"]
    assert max(post) / min(post) < 1.1  # Post-LN's last-layer gradient does not change with depth
