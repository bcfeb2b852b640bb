"""What the lesson pages say about the models they run on: each figure from the shipped model's metrics or config."""
from __future__ import annotations

import json
import math
import re
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


def zh_en_models() -> list[str]:
    from modelcore.checkpoint import shipped_models

    return [name for name in shipped_models() if name.startswith("zh-en")]


@pytest.fixture(scope="module")
def without_residuals() -> dict[str, dict]:
    """Each zh-en model's residual demonstration on the default sentence: its layers without the residuals."""
    from modelcore.checkpoint import load_model
    from modelcore.lesson import run_demo
    from webapp.lesson.services import DEFAULT_SENTENCE

    with torch_threads(1):
        return {name: next(arm for arm in run_demo("residual", load_model(name), {"sentence": DEFAULT_SENTENCE})["arms"]
                           if arm["label"] == "no residual")["layers"] for name in zh_en_models()}


def series(values: list[float], digits: int, joint: str) -> str:
    return joint.join(f"{v:.{digits}f}" for v in values)


def test_the_residual_erratum_and_exercise_quote_each_models_layers(without_residuals):
    """Erratum e and exercise residual-1: the distance on the two models they name, the spread on all three."""
    from tests.fixtures.lesson import in_both
    from webapp.lesson.content import ERRATA, EXERCISES

    erratum = in_both(ERRATA["e"].correction)
    exercise = in_both(next(e["a"] for e in EXERCISES["residual-norm"] if e["id"] == "residual-1"))
    for language, joint in (("en", ", "), ("zh", "、")):
        for name in ("zh-en-post", "zh-en-hsk"):
            distance = series([layer["mean_distance"] for layer in without_residuals[name]], 1, joint)
            assert re.search(re.escape(name) + r"\D{0,6}" + re.escape(distance), erratum[language]), (language, name)
        for name, layers in without_residuals.items():
            spread = [layer["spread"] for layer in layers]
            assert spread == sorted(spread, reverse=True), name  # "falls layer after layer", on every model
            assert f"{name} {series(spread, 2, joint)}" in erratum[language], (language, name)
        for name in ("zh-en-post", "zh-en-hsk"):
            spread = series([layer["spread"] for layer in without_residuals[name]], 2, joint)
            assert f"{name} {spread}" in exercise[language], (language, name)
    distances = {name: [layer["mean_distance"] for layer in layers] for name, layers in without_residuals.items()}
    assert not any(d == sorted(d) for d in distances.values())  # on no model does it grow steadily, as the lesson said
    assert exercise_right_option("residual-1") == "It falls layer after layer"


def exercise_right_option(exercise_id: str) -> str:
    from webapp.lesson.content import exercise_question

    return exercise_question(exercise_id)["right"]


@pytest.fixture(scope="module")
def alignment_measured() -> dict:
    """The shipped model's decoder demonstration on erratum f's sentence, at the layer its table shows."""
    from modelcore.checkpoint import load_model
    from modelcore.lesson import run_demo
    from webapp.lesson.content import ALIGNMENT

    with torch_threads(1):
        return run_demo("decoder", load_model(ALIGNMENT["model"]),
                        {"sentence": ALIGNMENT["sentence"], "layer": ALIGNMENT["layer"] - 1})


def test_the_cross_attention_erratum_shows_the_trained_models_own_rows(alignment_measured):
    from webapp.lesson.content import ALIGNMENT, TOY_CAT_ROW

    heads = alignment_measured["cross_attention"]  # (h, T, S)
    assert len(heads) == ALIGNMENT["heads"] and tuple(alignment_measured["src_tokens"]) == ALIGNMENT["source"]
    reads, writes = alignment_measured["tgt_tokens"], alignment_measured["teacher_forced"]
    assert [(r, w) for r, w, _ in ALIGNMENT["rows"]] == list(zip(reads, writes, strict=True))
    for t, (_reads, _writes, shown) in enumerate(ALIGNMENT["rows"]):
        mean = [sum(head[t][s] for head in heads) / len(heads) for s in range(len(ALIGNMENT["source"]))]
        assert all(abs(a - b) <= 0.005 + 1e-4 for a, b in zip(shown, mean, strict=True)), (t, shown, mean)
    # What the correction says of them: each English word's row weighs most the Chinese word it translates, and the
    # toy's row is nearly even with its most on 老鼠.
    glosses = {"cats": "猫", "chase": "追", "mice": "鼠"}
    for _reads, word, shown in ALIGNMENT["rows"]:
        if word in glosses:
            assert ALIGNMENT["source"][shown.index(max(shown))] == glosses[word], word
    weights = dict(TOY_CAT_ROW)
    assert max(weights, key=weights.get) == "老鼠" and max(weights.values()) - min(weights.values()) < 0.02


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_decoder_page_draws_the_alignment_table(client_as, student, zh_en, language):
    from webapp.lesson.content import ALIGNMENT, TOY_CAT_ROW

    page = get(client_as(student), "/lesson/decoder/", language).content.decode()
    table = page.split('data-testid="erratum-alignment"')[1].split("</table>")[0]
    rows = re.findall(r'data-testid="alignment-row"><th>(.*?)</th>(.*?)</tr>', table, re.S)
    assert len(rows) == len(ALIGNMENT["rows"])
    for (label, cells), (reads, writes, shown) in zip(rows, ALIGNMENT["rows"], strict=True):
        assert re.findall(r"<td>(.*?)</td>", cells) == [f"{w:.2f}" for w in shown]
        assert html_escape(writes) in label and html_escape(reads) in label and ALIGNMENT["model"] in label
    toy = re.search(r'data-testid="alignment-toy">(.*?)</tr>', table, re.S).group(1)
    assert all(f"{w:.3f}" in toy for _t, w in TOY_CAT_ROW)


def html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=False)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_vocabulary_matrices_share_is_computed_from_the_sizes(client_as, student, zh_en, language):
    from webapp.lesson.content import PAPER, PAPER_VOCAB, paper_parameters, parameter_count

    matrix = PAPER_VOCAB * PAPER["d_model"]
    untied = next(row["parameters"] for row in paper_parameters() if row["tying"] == "none")
    assert untied == parameter_count({"src_vocab_size": PAPER_VOCAB, "tgt_vocab_size": PAPER_VOCAB,
                                      "d_model": PAPER["d_model"], "n_heads": PAPER["n_heads"], "d_ff": PAPER["d_ff"],
                                      "n_encoder_layers": PAPER["layers"], "n_decoder_layers": PAPER["layers"]})
    note = " ".join(text_of(get(client_as(student), "/lesson/", language)).split())
    note = note.split("37,000 × 512")[1][:200]
    share = round(100 * matrix / untied)
    assert share < 50 and 3 * matrix > untied / 2  # one is a fifth, the three together over half
    if language == "en":
        assert f"{matrix / 1e6:.1f} M parameters, {share} % of the untied total; the three together hold " \
               f"{3 * matrix / 1e6:.1f} M of its {untied / 1e6:.1f} M" in note
    else:
        assert f"{matrix / 1e4:.0f} 万 个参数，占不绑定时总数的 {share} %；三个合起来是 {3 * matrix / 1e4:.0f} 万，" \
               f"占总数 {untied / 1e8:.2f} 亿的一半以上" in note


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_finished_comparison_quotes_its_shipped_sweep_over_the_seeds(client_as, student, mask_result, language):
    from django.utils import translation

    from webapp.experiments.figures import machine_words, verdict_sentence
    from webapp.experiments.pages import defaults_path

    shipped = json.loads(defaults_path("lesson-sweeps").read_text(encoding="utf-8"))["mask"]["result"]
    run = TrainingRun.objects.create(key=_key("train", "mask", {}), kind="mask", params={}, result=mask_result,
                                     status=TrainingRun.Status.SUCCEEDED, progress=1.0)
    text = " ".join(text_of(get(client_as(student), f"/lesson/runs/{run.pk}/", language)).split())
    with translation.override({"zh": "zh-hans", "en": "en"}[language]):
        verdict, machine = verdict_sentence(shipped["verdict"]), machine_words(shipped["machine"])
    assert ("1 个线程" if language == "zh" else "1 thread") in machine  # the machine in the reader's words
    said = {"en": f"This run is one seed (seed 0). Over 16 seeds, trained on {machine}: {verdict}",
            "zh": f"这次运行只是一个种子（种子 0）。在 {machine} 上用 16 个种子训练的结果：{verdict}"}[language]
    assert said in text and shipped["verdict"]["answer"] == "no mask"


def test_the_ffn_exercise_quotes_the_shipped_16_seed_sweep():
    from tests.fixtures.lesson import in_both
    from webapp.experiments.pages import defaults_path
    from webapp.lesson.content import EXERCISES

    shipped = json.loads(defaults_path("lesson-sweeps").read_text(encoding="utf-8"))["ffn"]["result"]
    verdict = shipped["verdict"]
    assert len(shipped["seeds"]) == 16 and verdict["answer"] == "no reliable difference"
    lowest = [arm["lowest"] for arm in verdict["arms"]]
    means = [f"{arm['mean']:.2f} ± {arm['se']:.2f}" for arm in verdict["arms"]]
    answer = in_both(next(e["a"] for e in EXERCISES["questions"] if e["id"] == "questions-2"))
    assert (f"the 1× width ended lowest in {lowest[0]}, the 2× in {lowest[1]} and the 4× in {lowest[2]}, and their "
            f"mean final losses, {means[0]}, {means[1]} and {means[2]} (± one standard error)") in answer["en"]
    zh = " ".join(answer["zh"].split())
    assert f"1× 在 {lowest[0]} 个种子中最终最低，2× 在 {lowest[1]} 个中，4× 在 {lowest[2]} 个中" in zh
    assert f"{means[0]}、{means[1]} 和 {means[2]}" in zh
