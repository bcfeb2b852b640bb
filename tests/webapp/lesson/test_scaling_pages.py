"""The lesson's why and cost sections: each figure they quote against the demonstration on the shipped model, in
both languages, and the demonstrations' panels as a student reads them."""
from __future__ import annotations

import json
import re

import pytest
from django.template.loader import render_to_string
from django.utils import translation

from modelcore.checkpoint import load_model
from modelcore.experiments import torch_threads
from modelcore.lesson import run_demo
from tests.webapp.lesson.test_pages import get, text_of
from webapp.lesson.content import PAPER
from webapp.lesson.figures import figures_for
from webapp.lesson.services import DEFAULT_MODEL, DEFAULT_SENTENCE

pytestmark = pytest.mark.django_db
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def quoted(value: float) -> str:
    """Three significant figures as the pages write them: 0.400, 1.69 × 10⁻⁶."""
    if value >= 0.01:
        return f"{value:.3g}".ljust(5, "0") if value < 1 else f"{value:.3g}"
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"


@pytest.fixture(scope="module")
def results() -> dict:
    loaded = load_model(DEFAULT_MODEL)
    with torch_threads(1):
        return {kind: run_demo(kind, loaded, {"sentence": DEFAULT_SENTENCE}) for kind in ("recurrence", "cost", "cache")}


def page(client, path: str, language: str) -> str:
    return " ".join(text_of(get(client, path, language)).split())


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_encoder_page_quotes_the_gradients_and_the_n_squared_memory_of_the_real_model(client_as, student, zh_en,
                                                                                           results, language):
    text = page(client_as(student), "/lesson/encoder/", language)
    first = results["recurrence"]["first"]
    at = results["recurrence"]["lengths"].index(32)
    for stack in ("encoder", "gru", "rnn"):
        assert quoted(first[stack][at]) in text, stack
    assert "0.400" in text and "1.55 × 10⁻¹⁰" in text  # the figures the page was written with
    cost = results["cost"]
    for n, mib in ((512, "4 MiB"), (1024, "16 MiB")):
        assert cost["weights_bytes"][cost["lengths"].index(n)] == int(mib.split()[0]) * 2**20 and mib in text
    assert f"{cost['crossover']}" in text and f"{2 * PAPER['d_model'] + PAPER['d_ff']:,}" in text
    config = zh_en_config()
    d_k = f"{config['d_model']} / {config['n_heads']} = {config['d_model'] // config['n_heads']}"
    assert "d_k = d_model / h" in text and d_k in text and f"{PAPER['d_model']} / {PAPER['n_heads']} = 64" in text


def zh_en_config() -> dict:
    return load_model(DEFAULT_MODEL).config.__dict__


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_decoder_page_quotes_the_kv_caches_size(client_as, student, zh_en, results, language):
    text = page(client_as(student), "/lesson/decoder/", language)
    sizes = results["cache"]["cache_bytes"]
    assert sizes[1] - sizes[0] == 3 * 1024  # 1 KiB per position in each of the 3 layers
    assert "1 KiB" in text and f"{sizes[-1] // 1024} KiB" in text and "128" in text
    assert 'data-testid="demo-form-cache"' in get(client_as(student), "/lesson/decoder/", language).content.decode()


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_questions_page_draws_the_one_stack_variants_masks(client_as, student, zh_en, language):
    content = get(client_as(student), "/lesson/questions/", language).content.decode()
    text = page(client_as(student), "/lesson/questions/", language)
    assert all(word in text for word in ("BERT", "GPT", "[MASK]"))
    sets = [json.loads(s) for s in re.findall(r'<script type="application/json">(.*?)</script>', content, re.S)]
    stacks = next(s["stacks"] for s in sets if "stacks" in s)
    encoder_alone, decoder_alone, both = (trace["z"] for trace in stacks["data"])
    assert all(all(row) for row in encoder_alone)  # both directions, every position
    assert all(row[q + 1:] == [0] * (7 - q - 1) for q, row in enumerate(decoder_alone))  # causal, source too
    assert both[0] == [1] * 4 + [0] * 3 and both[4] == [1] * 5 + [0] * 2  # source reads source; target: all source
    names = {"zh": ["只有编码器", "只有解码器", "编码器-解码器"], "en": ["encoder alone", "decoder alone", "encoder-decoder"]}
    assert [a["text"] for a in stacks["layout"]["annotations"]] == names[language]


@pytest.mark.parametrize(("language", "words"), [("zh", ("内部协变量偏移", "Santurkar", "2018", "更平滑")),
                                                 ("en", ("internal covariate shift", "Santurkar", "2018", "smoother"))])
def test_the_residual_page_says_what_santurkar_found_about_internal_covariate_shift(client_as, student, zh_en,
                                                                                   language, words):
    text = page(client_as(student), "/lesson/residual-norm/", language)
    assert all(word in text for word in words)


@pytest.mark.parametrize("kind", ["recurrence", "cost", "cache"])
def test_each_panel_reads_in_chinese_with_its_figures(results, kind):
    with translation.override("zh-hans"):
        result = results[kind]
        panel = render_to_string(f"lesson/partials/demo_{kind}.html",
                                 {"result": result, "cached": False, "figures": figures_for(kind, result)})
    words = {"recurrence": ("这个编码器", "必须依次计算的步数"), "cost": ("自注意力，毫秒", "2·128 + 256 = 512"),
             "cache": ("每步重算整个前缀", "使用 KV 缓存")}[kind]
    assert all(word in panel for word in words)
    assert not re.search(r"\b(the|with|of)\b", re.sub(r"<script.*?</script>", "", panel, flags=re.S))
