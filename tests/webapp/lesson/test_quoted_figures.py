"""What the lesson pages say about the models they run on: each figure from the shipped model's metrics or config."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from modelcore.experiments import torch_threads
from modelcore.lesson import run_training
from modelcore.lesson.training import BASE
from tests.webapp.lesson.test_pages import get, text_of
from webapp.lesson.models import TrainingRun
from webapp.lesson.services import _key

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


def shipped_metrics(name: str) -> dict:
    return json.loads((ROOT / f"modelcore/shipped/{name}/metrics.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_overview_says_how_long_the_default_model_trained(client_as, student, zh_en, language):
    metrics = shipped_metrics("zh-en-post")
    minutes, steps, threads = round(metrics["train_seconds"] / 60), metrics["step"], metrics["torch_threads"]
    assert minutes > 30  # the reason the training comparisons use tiny models instead
    text = " ".join(text_of(get(client_as(student), "/lesson/", language)).split())
    if language == "en":
        assert f"{minutes} minutes for its {steps} training steps on {threads} CPU thread" in text
        assert "in minutes" not in text
    else:
        assert f"在 {threads} 个 CPU 线程上训练 {steps} 步也用了 {minutes} 分钟" in text
        assert "几分钟" not in text


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_pages_say_the_training_comparisons_run_on_tiny_copy_models(client_as, student, zh_en, language):
    assert BASE.task == "copy" and BASE.layers == 2
    size = {"en": f"2 + 2 layers with d_model {BASE.d_model}", "zh": f"2 + 2 层、d_model {BASE.d_model}"}[language]
    steps = {"en": f"{BASE.steps} steps", "zh": f"{BASE.steps} 步"}[language]
    copying = {"en": "copy", "zh": "照抄"}[language]
    client = client_as(student)
    for path in ("/lesson/", "/lesson/decoder/", "/lesson/questions/"):
        text = " ".join(text_of(get(client, path, language)).split())
        assert size in text and steps in text and copying in text, path


@pytest.fixture(scope="module")
def mask_result() -> dict:
    with torch_threads(1):
        return {"kind": "mask", **run_training("mask", {"steps": 3})}


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_finished_comparison_names_its_arms_in_the_readers_language(client_as, student, mask_result, language):
    run = TrainingRun.objects.create(key=_key("train", "mask", {}), kind="mask", params={}, result=mask_result,
                                     status=TrainingRun.Status.SUCCEEDED, progress=1.0)
    client = client_as(student)
    panel = get(client, f"/lesson/runs/{run.pk}/", language).content.decode()
    table = text_of(get(client, f"/lesson/runs/{run.pk}/", language))
    names = {"zh": ("有因果掩码", "没有掩码"), "en": ("causal mask", "no mask")}[language]
    assert all(name in table for name in names)
    figures = json.loads(panel.split('<script type="application/json">')[1].split("</script>")[0])
    assert [trace["name"] for trace in figures["loss"]["data"]] == list(names)
    if language == "zh":
        assert "causal mask" not in table and "no mask" not in table


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_running_comparison_gives_the_live_chart_its_arm_names(client_as, student, mask_result, language):
    run = TrainingRun.objects.create(key=_key("train", "mask", {}), kind="mask", params={},
                                     status=TrainingRun.Status.RUNNING, progress=0.3)
    panel = get(client_as(student), f"/lesson/runs/{run.pk}/", language).content.decode()
    names = json.loads(panel.split('data-arm-names="')[1].split('"')[0].replace("&quot;", '"'))
    frames_label = {arm["label"] for arm in mask_result["arms"]}  # what the progress frames call each arm
    assert set(names) == frames_label
    assert sorted(names.values()) == sorted({"zh": ["有因果掩码", "没有掩码"], "en": ["causal mask", "no mask"]}[language])


@pytest.fixture(scope="module")
def norms_result() -> dict:
    from modelcore.checkpoint import load_model
    from modelcore.lesson import run_demo
    from modelcore.lesson.demos import PADDING_PARTNER
    from webapp.lesson.services import DEFAULT_MODEL, DEFAULT_SENTENCE

    assert PADDING_PARTNER == "猫追老鼠。" and DEFAULT_SENTENCE == "我的猫追了一只老鼠。"  # the sentences the page names
    return run_demo("norms", load_model(DEFAULT_MODEL), {"sentence": DEFAULT_SENTENCE})


def span(values: list[float], digits: int, joint: str) -> str:
    return f"{min(values):.{digits}f}{joint}{max(values):.{digits}f}"


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_norm_questions_quote_the_demonstration_on_the_default_model(client_as, student, zh_en, norms_result,
                                                                          language):
    joint = {"en": " to ", "zh": " 到 "}[language]
    text = " ".join(text_of(get(client_as(student), "/lesson/questions/", language)).split())
    d_model = json.loads((ROOT / "modelcore/shipped/zh-en-post/config.json").read_text(encoding="utf-8"))["d_model"]
    # A vector of d_model features with mean 0 and variance 1 is sqrt(d_model) long.
    assert span(norms_result["mode_gap"], 1, joint) in text and f"{d_model}" in text
    assert f"{math.sqrt(d_model):.0f}" in text.split(span(norms_result["mode_gap"], 1, joint))[1][:120]
    assert span(norms_result["input"]["mean"], 2, joint) in text
    rms = span(norms_result["rmsnorm_out"]["mean"], 2, " and " if language == "en" else " 到 ")
    assert rms in text
    assert min(norms_result["rmsnorm_out"]["mean"]) > 0  # "stays": none of them reaches 0


@pytest.mark.parametrize(("language", "expected"), [
    ("en", {"paper": "65.0 M", "tying-none": "101.0 M", "tying-output": "82.1 M", "tying-all": "63.1 M"}),
    ("zh", {"paper": "6500 万", "tying-none": "1.01 亿", "tying-output": "8206 万", "tying-all": "6312 万"})])
def test_the_overview_counts_the_parameters_of_the_paper_and_of_each_shipped_model(client_as, student, zh_en, language,
                                                                                   expected):
    import re

    from modelcore.checkpoint import shipped_models
    from webapp.registry.services import shipped_models_register

    shipped_models_register()  # every shipped model, as make setup registers them
    page = get(client_as(student), "/lesson/", language).content.decode()
    rows = dict(re.findall(r'data-testid="parameters-([\w-]+)"><th>.*?</th><td>(.*?)</td>', page))
    for testid, count in expected.items():
        assert rows[testid] == count, testid
    for name in shipped_models():  # what each model counted of its own parameters when it was trained
        n = shipped_metrics(name)["parameters"]
        shown = f"{n / 1e6:.2f} M" if language == "en" else f"{n / 1e4:.1f} 万"
        assert rows[f"model-{name}"] == shown, name
    assert re.search(r'data-testid="model-parameters">(.*?)<', page)[1] == rows["model-zh-en-post"]


@pytest.mark.parametrize(("language", "words"), [("en", "at most 60 characters"), ("zh", "最多 60 个字")])
def test_the_sentence_field_takes_what_the_demonstration_takes_and_says_so(client_as, student, zh_en, language, words):
    import re

    from modelcore.lesson.demos import MAX_SENTENCE_CHARS
    from webapp.lesson.services import DEMO_MAX_CHARS

    assert DEMO_MAX_CHARS == MAX_SENTENCE_CHARS == 60
    client = client_as(student)
    page = get(client, "/lesson/decoder/", language).content.decode()
    fields = re.findall(r'name="(sentence|partner)"[^>]*maxlength="(\d+)"', page)
    assert {"sentence", "partner"} <= {name for name, _ in fields} and {n for _, n in fields} == {"60"}
    assert words in text_of(get(client, "/lesson/decoder/", language))
    # Longer is refused at once (no worker asked), in the reader's language, with the limit and no raw message.
    refused = client.post("/lesson/demo/encoder/", {"model": "zh-en-post", "sentence": "猫" * 70},
                          HTTP_HX_REQUEST="true", HTTP_ACCEPT_LANGUAGE="zh-Hans" if language == "zh" else "en")
    text = text_of(refused)
    assert 'data-code="source_too_long"' in refused.content.decode() and "60" in text
    assert "the sentence has" not in text and ("这个句子" in text) == (language == "zh")


def test_the_docs_say_the_training_comparisons_run_on_tiny_copy_models():
    assert BASE.task == "copy"
    text = " ".join((ROOT / "docs/lesson.md").read_text(encoding="utf-8").split())
    assert f"tiny copy-task models of their own ({BASE.layers} + {BASE.layers} layers, d_model {BASE.d_model}, " \
           f"{BASE.steps} steps" in text
    assert "every demonstration computed on the real shipped models" not in text
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "only its two training comparisons train tiny copy-task models" in readme
    assert "whose every demonstration runs on the real model" not in readme
