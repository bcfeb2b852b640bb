"""What a student's run panel says while the worker is between steps, and what blank heatmap cells are."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.webapp.lesson.test_pages import get, text_of
from webapp.experiments.models import ExperimentRun
from webapp.experiments.services import RUNS

pytestmark = pytest.mark.django_db
DEFAULTS = Path(__file__).resolve().parents[3] / "webapp/experiments/defaults/residuals.json"


@pytest.fixture
def residual_run(student) -> ExperimentRun:
    """A finished comparison with and without residuals: the shipped one, whose arm without them has zero gradients."""
    shipped = json.loads(DEFAULTS.read_text(encoding="utf-8"))["compare_residual"]
    return ExperimentRun.objects.create(kind="compare", params=shipped["params"], params_key="r" * 64, owner=student,
                                        status=ExperimentRun.Status.SUCCEEDED, progress=1.0, result=shipped["result"])


@pytest.mark.parametrize(("language", "words"), [
    ("en", ("gradients of exactly 0", "decoder 1, decoder 2, decoder 3, decoder 4, decoder 5", "Without residuals")),
    ("zh", ("恰好为 0 的梯度", "没有残差时"))])
def test_the_result_says_what_the_blank_heatmap_cells_are(client_as, student, residual_run, language, words):
    response = get(client_as(student), f"/experiments/runs/{residual_run.pk}/result/", language)
    text = " ".join(text_of(response).split())
    assert 'data-testid="zero-gradients"' in response.content.decode()
    assert all(word in text for word in words), text[-600:]
    assert "gradients of exactly 0" not in text or language == "en"


def test_a_run_with_every_gradient_above_zero_gets_no_such_caption(client_as, student, residual_run):
    residual_run.result = {**residual_run.result, "arms": residual_run.result["arms"][:1]}  # with residuals only
    residual_run.save()
    response = get(client_as(student), f"/experiments/runs/{residual_run.pk}/result/", "en")
    assert 'data-testid="zero-gradients"' not in response.content.decode()


class Feed:
    def __init__(self) -> None:
        self.frames: list[tuple[dict, bool]] = []

    def latest(self, group: str, message: dict, *, force: bool = False) -> None:
        self.frames.append((message, force))


def test_the_frame_before_an_evaluation_goes_out_at_once_and_says_so(student):
    run = ExperimentRun.objects.create(kind="compare", params={"eval_every": 50, "steps": 300}, params_key="e" * 64,
                                       owner=student, status=ExperimentRun.Status.RUNNING)
    feed = Feed()
    report = RUNS.progress_reporter(run, feed)
    for step in (10, 49, 50, 299, 300):
        report({"progress": step / 600, "arm": "post", "step": step, "steps": 300, "loss": 1.0})
    said = {frame["step"]: (frame.get("evaluates_next", False), force) for frame, force in
            ((message.get("frame", message), force) for message, force in feed.frames)}
    assert said == {10: (False, False), 49: (True, True), 50: (False, False), 299: (True, True), 300: (False, False)}


@pytest.mark.parametrize(("language", "words"), [("en", ("evaluating on the validation set", "evaluating and saving")),
                                                 ("zh", ("正在验证集上评估", "正在评估并保存结果"))])
def test_the_panel_has_words_for_evaluating_and_saving(client_as, student, language, words):
    run = ExperimentRun.objects.create(kind="compare", params={}, params_key="w" * 64, owner=student,
                                       status=ExperimentRun.Status.RUNNING)
    labels = get(client_as(student), f"/experiments/runs/{run.pk}/", language).content.decode()
    statuses = json.loads(labels.split("data-status-labels='")[1].split("'")[0])
    assert words[0] in statuses["evaluating"] and words[1] in statuses["finishing"]
