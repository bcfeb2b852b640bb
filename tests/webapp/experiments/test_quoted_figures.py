"""Every figure the pages and docs/experiments.md quote about a shipped result equals that result's JSON."""
from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
DEFAULTS = ROOT / "webapp/experiments/defaults"
DOC = ROOT / "docs/experiments.md"

pytestmark = pytest.mark.django_db


@cache
def shipped(page: str, name: str) -> dict[str, Any]:
    return json.loads((DEFAULTS / f"{page}.json").read_text(encoding="utf-8"))[name]["result"]


def metrics(model: str) -> dict[str, Any]:
    return json.loads((ROOT / f"modelcore/shipped/{model}/metrics.json").read_text(encoding="utf-8"))["test"]


def w2(result: dict[str, Any], stack: str, group: str = "ffn.linear2") -> list[float]:
    return [row["grad_norms"][group] for row in result["layers"] if row["stack"] == stack]


def arm(page: str, name: str, label: str) -> dict[str, Any]:
    return next(a for a in shipped(page, name)["arms"] if a["label"] == label)


def heat(label: str, layer: str) -> list[float]:
    run = arm("norm-position", "compare_norm_position", label)["run"]["grad_norms"]
    column = run["layers"].index(layer)
    return [row[column] for row in run["layer"]]


def drift(label: str, measure: str) -> list[float]:
    return [sum(v) / len(v) if isinstance(v, list) else v for v in
            (layer[measure] for layer in arm("residuals", "drift", label)["layers"])]


def f3(values: list[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def g2(value: float) -> str:
    """Two significant figures, as the pages write them (0.059, 5.9e-5, 3e-6)."""
    return f"{value:#.2g}" if value >= 1e-3 else f"{value:.1e}".replace("e-0", "e-").replace(".0e", "e")


def last_times_sqrt(layers: int) -> float:
    return w2(shipped("residuals", f"gradflow_{layers}_res"), "decoder")[-1] * math.sqrt(layers)


def below_last_without_residuals(layers: int) -> list[float]:
    """The gradient norms of the decoder layers below the last, with no residuals."""
    norms = [row["grad_norms"]["layer"] for row in shipped("residuals", f"gradflow_{layers}_nores")["layers"]
             if row["stack"] == "decoder"]
    return norms[:-1]


def power_of_ten_above(value: float) -> str:
    """The smallest power of ten above the value, as the pages write it ("less than 1e-7")."""
    return f"1e{math.floor(math.log10(value)) + 1}"


def eos_share() -> tuple[int, int]:
    """(<eos> tokens, all tokens) of the validation targets the norm-position comparison evaluates on."""
    from modelcore.experiments.runs import probe_task
    from modelcore.experiments.spec import RunConfig

    params = json.loads((DEFAULTS / "norm-position.json").read_text(encoding="utf-8"))["compare_norm_position"]["params"]
    task = probe_task(RunConfig(**{k: v for k, v in params.items() if k in RunConfig.__dataclass_fields__}))
    return len(task.valid), sum(len(target.split()) + 1 for _, target in task.valid)  # each target ends with <eos>


def final(page: str, name: str, label: str) -> dict[str, float]:
    """A training arm's final loss (mean of the last steps) and its last evaluation."""
    run = arm(page, name, label)["run"]
    return {**run["evals"][-1], "loss": run["final_loss"]}


# (quoted text, the same text built from the shipped JSON): the page's wording with the JSON's number in it.
def claims() -> list[tuple[str, str]]:
    post, pre = shipped("norm-position", "gradflow_post"), shipped("norm-position", "gradflow_pre")
    depth_post = [w2(shipped("norm-position", f"depth_post_{n}"), "decoder")[-1] for n in (6, 12, 24)]
    depth_pre = [w2(shipped("residuals", f"gradflow_{n}_res"), "decoder")[-1] for n in (6, 12, 24)]
    accuracy = {e["token_accuracy"] for e in arm("norm-position", "compare_norm_position", "post")["run"]["evals"]}
    assert len(accuracy) == 1  # the same at every evaluation, as the page says
    eos, tokens = eos_share()
    assert round(eos / tokens, 5) == next(iter(accuracy))  # the score of answering <eos> everywhere
    enc24 = {r: [row["grad_norms"]["layer"] for row in shipped("residuals", f"gradflow_24_{r}")["layers"]
                 if row["stack"] == "encoder"] for r in ("res", "nores")}
    spread = drift("no residual", "spread")
    tiny = max(v for n in (6, 12, 24) for v in below_last_without_residuals(n))
    return [
        ("0.043 to 0.257", f"{w2(post, 'decoder')[0]:.3f} to {w2(post, 'decoder')[-1]:.3f}"),
        ("0.136 to 0.079", f"{w2(pre, 'decoder')[0]:.3f} to {w2(pre, 'decoder')[-1]:.3f}"),
        ("0.226, 0.217, 0.229, 0.240, 0.232, 0.234", f3(w2(post, "encoder"))),
        ("0.236 to 0.092", f"{w2(pre, 'encoder')[0]:.3f} to {w2(pre, 'encoder')[-1]:.3f}"),
        ("0.128, 0.135, 0.131", f3(depth_post)),
        ("0.041, 0.028, 0.021", f3(depth_pre)),
        ("0.100, 0.098, 0.105", f3([last_times_sqrt(n) for n in (6, 12, 24)])),
        ("0.114", f"{accuracy.pop():.3f}"),
        ("100 of 880", f"{eos} of {tokens}"),
        ("0.57", g2(heat("post", "decoder 1")[0])),
        ("3e-6", g2(heat("post", "decoder 1")[-1])),
        ("2.8", g2(heat("post", "encoder 1")[0])),
        ("5.9e-5", g2(heat("post", "encoder 1")[-1])),
        ("99.85", f"{metrics('zh-en-post')['bleu']:.2f}"),
        ("99.96", f"{metrics('zh-en-pre')['bleu']:.2f}"),
        ("0.30", f"{enc24['nores'][0]:.2f}"), ("0.42", f"{enc24['nores'][-1]:.2f}"),
        ("0.28", f"{enc24['res'][0]:.2f}"), ("0.059", g2(enc24["res"][-1])),
        ("0.33", f"{spread[0]:.2f}"), ("0.02", f"{spread[1]:.2f}"), ("6e-6", g2(spread[2])), ("0", f"{spread[3]:.0f}"),
        ("0.43", f"{drift('residual', 'cosine')[-1]:.2f}"),
        ("1e-7", power_of_ten_above(tiny)),
    ]


@pytest.mark.parametrize("index", range(len(claims())))
def test_each_quoted_figure_is_the_shipped_one(index):
    quoted, from_json = claims()[index]
    assert quoted == from_json


PAGES = {
    "/experiments/norm-position/": ["0.043 to 0.257", "0.136 to 0.079", "0.226, 0.217, 0.229, 0.240, 0.232, 0.234",
                                    "0.236 to 0.092", "0.128, 0.135, 0.131", "0.041, 0.028, 0.021",
                                    "0.100, 0.098, 0.105", "0.114", "100 of 880", "0.57", "3e-6", "2.8", "5.9e-5", "99.85", "99.96"],
    "/experiments/residuals/": ["0.30", "0.42", "0.28", "0.059", "0.33", "0.02", "6e-6", "0.43", "1e-7"],
    "/lesson/residual-norm/": ["0.136 to 0.079", "0.236 to 0.092"],  # Pre-LN's gradients are not "unchanged"
}


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("path", sorted(PAGES))
def test_the_pages_quote_them_in_both_languages(client_as, student, path, language):
    quoted = dict(claims())
    client = client_as(student)
    client.cookies["django_language"] = language
    html = client.get(path).content.decode()
    for text in PAGES[path]:
        assert text in quoted, text
        for number in re.findall(r"\d+(?:\.\d+)?(?:e-\d+)?", text):  # each number, whatever the words around it
            assert number in html, (path, language, number)


def test_docs_experiments_quotes_the_same_figures():
    doc = DOC.read_text(encoding="utf-8")
    built = {
        "decoder": f"{w2(shipped('norm-position', 'gradflow_post'), 'decoder')[0]:.3f} → "
                   f"{w2(shipped('norm-position', 'gradflow_post'), 'decoder')[-1]:.3f}",
        "post depth": "| Post-LN | " + " | ".join(f"{w2(shipped('norm-position', f'depth_post_{n}'), 'decoder')[-1]:.3f}"
                                                 for n in (6, 12, 24)) + " |",
        "scaled": "| Pre-LN × √L | " + " | ".join(f"{last_times_sqrt(n):.3f}" for n in (6, 12, 24)) + " |",
        "distance": f"{drift('no residual', 'distance')[0]:.2f} → {drift('no residual', 'distance')[-1]:.2f}",
        "enc heat": f"encoder layer 1: {g2(heat('post', 'encoder 1')[0])}, then\n  {g2(heat('post', 'encoder 1')[-1])}",
        "dec heat": f"{g2(heat('post', 'decoder 1')[0])} at step 1, {g2(heat('post', 'decoder 1')[-1])} at step 300",
        "bleu": f"{metrics('zh-en-post')['bleu']:.2f} against {metrics('zh-en-pre')['bleu']:.2f}",
        "encoder 24": f"{enc24_layer('nores', 0):.2f} → {enc24_layer('nores', -1):.2f} without, "
                      f"{enc24_layer('res', 0):.2f} → {g2(enc24_layer('res', -1))} with",
        "accuracy": f"scores {arm('norm-position', 'compare_norm_position', 'post')['run']['evals'][0]['token_accuracy']:.3f}"
                    " at every evaluation",
    }
    for name, text in built.items():
        assert text in doc, (name, text)


def doc_figures() -> list[str]:
    """The tables and ranges of docs/experiments.md, built from the shipped JSON as the doc writes them."""
    post, pre = shipped("norm-position", "gradflow_post"), shipped("norm-position", "gradflow_pre")
    row = lambda label, values, fmt: f"| {label} | " + " | ".join(fmt(v) for v in values) + " |"  # noqa: E731
    figures = [row("Post-LN", w2(post, "decoder"), "{:.3f}".format), row("Pre-LN", w2(pre, "decoder"), "{:.3f}".format),
               row("Post-LN", [w2(shipped("norm-position", f"depth_post_{n}"), "decoder")[-1] for n in (6, 12, 24)],
                   "{:.3f}".format),
               row("Pre-LN", [w2(shipped("residuals", f"gradflow_{n}_res"), "decoder")[-1] for n in (6, 12, 24)],
                   "{:.3f}".format)]
    for layers in (6, 12, 24):
        cells = []
        for stack in ("decoder", "encoder"):
            for residual in ("res", "nores"):
                norms = [r["grad_norms"]["layer"] for r in shipped("residuals", f"gradflow_{layers}_{residual}")["layers"]
                         if r["stack"] == stack]
                cells.append(f"{g2(norms[0]) if norms[0] else '0'} … {g2(norms[-1])}")
        figures.append(f"| {layers} | " + " | ".join(cells) + " |")
    signed = lambda v: f"{v:.2f}".replace("-", "−")  # noqa: E731
    with_res, without = "residual", "no residual"
    figures += [", ".join(signed(v) for v in drift(with_res, "cosine")),
                ", ".join(signed(v) for v in drift(without, "cosine")),
                f"{drift(with_res, 'distance')[0]:.1f} → {drift(with_res, 'distance')[-1]:.1f}",
                f"{drift(with_res, 'spread')[0]:.2f} → {drift(with_res, 'spread')[-1]:.2f}",
                ", ".join(f"{v:.2f}" if v >= 0.005 else g2(v) if v else "0" for v in drift(without, "spread"))]
    norms = {a["label"]: a for a in shipped("layernorm", "norms")["arms"]}

    def span(label: str, when: str, key: str, first: bool = False, digits: int = 2) -> str:
        rows = norms[label][when][:1] if first else norms[label][when]
        values = [v for r in rows for v in r[key]]
        return f"{signed(min(values)) if digits == 2 else f'{min(values):.{digits}f}'.replace('-', '−')} … " \
               f"{signed(max(values)) if digits == 2 else f'{max(values):.{digits}f}'}"

    figures += [span("layernorm", "init", "in_var"), span("layernorm", "trained", "out_var"),
                span("layernorm", "trained", "out_var", first=True, digits=3),
                span("layernorm", "trained", "out_mean", digits=3),
                span("rmsnorm", "init", "out_mean", first=True), span("rmsnorm", "init", "in_mean", first=True),
                span("rmsnorm", "init", "out_var", first=True), span("rmsnorm", "init", "out_mean"),
                span("rmsnorm", "init", "out_var"),
                f"{norms['layernorm']['run']['final_loss']:.2f} vs",
                f"{norms['rmsnorm']['run']['final_loss']:.2f}"]
    return figures


@pytest.mark.parametrize("doc", ["docs/experiments.md", "docs/experiments.zh.md"])
def test_the_docs_tables_and_ranges_are_the_shipped_ones(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = [figure for figure in doc_figures() if figure not in text]
    assert not missing, missing


def enc24_layer(residual: str, index: int) -> float:
    return [row["grad_norms"]["layer"] for row in shipped("residuals", f"gradflow_24_{residual}")["layers"]
            if row["stack"] == "encoder"][index]


def table_rows(text: str) -> list[list[str]]:
    """Each markdown table row's cells after its label, a cell cut to its leading number ("2.99 (the uniform …)")."""
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]
    return [[re.match(r"\s*([^\s（(]*)", cell).group(1) for cell in row[1:]] for row in rows]


@pytest.mark.parametrize("doc", ["docs/experiments.md", "docs/experiments.zh.md"])
def test_the_warmup_table_is_the_shipped_runs(doc):
    runs = [final("norm-position", "compare_norm_position", "post"), final("norm-position", "compare_norm_position", "pre"),
            final("norm-position", "compare_warmup", "warmup")]
    rows = table_rows((ROOT / doc).read_text(encoding="utf-8"))
    for run in runs:  # Post-LN without warmup, Pre-LN without warmup, Post-LN with warmup
        cells = [f"{run['loss']:.2f}", f"{run['token_accuracy']:.2f}", f"{run['exact_match']:.2f}"]
        assert cells in rows, (doc, cells)


def doc_phrases(language: str) -> list[str]:
    """The figures the docs quote in their sentences, each in the doc's wording, built from the shipped JSON."""
    pre_heat = arm("norm-position", "compare_norm_position", "pre")["run"]["grad_norms"]["layer"]
    low, high = g2(min(min(row) for row in pre_heat)), g2(max(max(row) for row in pre_heat))
    tiny = power_of_ten_above(max(v for n in (6, 12, 24) for v in below_last_without_residuals(n)))
    zeros = [(sum(v == 0 for v in below_last_without_residuals(n)), n - 1) for n in (6, 12, 24)]
    post, pre = final("norm-position", "compare_norm_position", "post"), final("norm-position", "compare_norm_position", "pre")
    res, nores = final("residuals", "compare_residual", "residual"), final("residuals", "compare_residual", "no residual")
    ln, rms = final("layernorm", "norms", "layernorm"), final("layernorm", "norms", "rmsnorm")
    eos, tokens = eos_share()
    lr = json.loads((DEFAULTS / "norm-position.json").read_text(encoding="utf-8"))["compare_norm_position"]["params"]["lr"]
    rate = f"{lr:.0e}".replace("e-0", "e-")
    if language == "en":
        return [f"({eos} of {tokens} tokens)", f"with the same learning rate ({rate}) and no warmup, Pre-LN learns",
                f"between {low} and {high}", f"less than {tiny}", ", ".join(f"{z} of {n}" for z, n in zeros),
                f"with residuals {res['loss']:.2f} (token accuracy {res['token_accuracy']:.2f}), "
                f"without {nores['loss']:.2f} ({nores['token_accuracy']:.2f})",
                f"token accuracy {ln['token_accuracy']:.2f} vs {rms['token_accuracy']:.2f}",
                f"({pre['loss']:.2f} vs {post['loss']:.2f})"]
    return [f"（{tokens} 个词元中的 {eos} 个）", f"用同样的学习率（{rate}）、不预热，Pre-LN 就能学会", f"{low} 到 {high}", f"小于 {tiny}", "、".join(f"{n} 层中 {z} 层" for z, n in zeros),
            f"有残差 {res['loss']:.2f}（词元准确率 {res['token_accuracy']:.2f}），"
            f"无残差 {nores['loss']:.2f}（{nores['token_accuracy']:.2f}）",
            f"词元准确率 {ln['token_accuracy']:.2f} vs {rms['token_accuracy']:.2f}",
            f"（{pre['loss']:.2f} 对 {post['loss']:.2f}）"]


@pytest.mark.parametrize(("doc", "language"), [("docs/experiments.md", "en"), ("docs/experiments.zh.md", "zh")])
def test_the_docs_sentences_quote_the_shipped_figures(doc, language):
    # A sentence may wrap: a line break reads as one space, or as none between two Chinese characters.
    text = re.sub(r"\s*\n\s*", " ", (ROOT / doc).read_text(encoding="utf-8"))
    text = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", text)
    missing = [phrase for phrase in doc_phrases(language) if phrase not in text]
    assert not missing, missing


@pytest.mark.parametrize(("language", "words"), [("en", "{eos} of {tokens} tokens"), ("zh-hans", "{tokens} 个词元中的 {eos} 个")])
def test_the_plateau_is_read_as_both_the_uniform_loss_and_the_eos_share(client_as, student, language, words):
    client = client_as(student)
    client.cookies["django_language"] = language
    html = client.get("/experiments/norm-position/").content.decode()
    eos, tokens = eos_share()
    assert words.format(eos=eos, tokens=tokens) in html and "ln 20 ≈ 3.0" in html and "&lt;eos&gt;" in html


@pytest.mark.parametrize(("language", "words"), [("en", "freshly initialised Pre-LN encoder layers with random weights (d_model {d},"),
                                                 ("zh-hans", "权重随机的 Pre-LN 编码器层（d_model {d}")])
def test_the_drift_figure_says_it_runs_on_fresh_layers_not_the_trained_model(client_as, student, language, words):
    client = client_as(student)
    client.cookies["django_language"] = language
    html = client.get("/experiments/residuals/").content.decode()
    params = json.loads((DEFAULTS / "residuals.json").read_text(encoding="utf-8"))["drift"]["params"]
    assert words.format(d=params["d_model"]) in html and "on the real model" not in html


@pytest.mark.parametrize(("doc", "words"), [("docs/experiments.md", "freshly initialised (d_model {d}, not the"),
                                            ("docs/experiments.zh.md", "刚初始化，d_model {d}；")])
def test_the_docs_say_the_drift_runs_on_fresh_layers_not_the_trained_model(doc, words):
    text = (ROOT / doc).read_text(encoding="utf-8")
    params = json.loads((DEFAULTS / "residuals.json").read_text(encoding="utf-8"))["drift"]["params"]
    assert words.format(d=params["d_model"]) in text
    assert "On the real model" not in text and "在真实模型上" not in text


def target_frequencies() -> dict[str, Any]:
    """The norm-position comparison's training targets read as a unigram guess: its entropy (the loss of guessing
    every token by its frequency), <eos>'s share, and the 20 symbols' lowest and highest share."""
    from collections import Counter

    from modelcore.experiments.runs import probe_task
    from modelcore.experiments.spec import RunConfig

    params = json.loads((DEFAULTS / "norm-position.json").read_text(encoding="utf-8"))["compare_norm_position"]["params"]
    task = probe_task(RunConfig(**{k: v for k, v in params.items() if k in RunConfig.__dataclass_fields__}))
    counts = Counter(token for _, target in task.train for token in [*target.split(), "<eos>"])
    total = sum(counts.values())
    shares = {token: n / total for token, n in counts.items()}
    symbols = [share for token, share in shares.items() if token != "<eos>"]
    return {"entropy": -sum(p * math.log(p) for p in shares.values()), "eos": shares["<eos>"],
            "likeliest": max(shares, key=shares.get), "symbols": (len(symbols), min(symbols), max(symbols))}


def frequency_words(language: str) -> list[str]:
    f = target_frequencies()
    n, low, high = f["symbols"]
    low, high = math.floor(100 * low), math.ceil(100 * high)
    if language == "en":
        return [f"{f['entropy']:.2f} over the training targets", f"{100 * f['eos']:.0f} % of the tokens",
                f"each of the {n} symbols {low} to {high} %"]
    return [f"训练集目标上是 {f['entropy']:.2f}", f"占 {100 * f['eos']:.0f} %", f"{n} 种符号各占 {low} % 到 {high} %"]


def test_the_stalled_loss_is_the_unigram_guess_whose_likeliest_token_is_eos():
    f = target_frequencies()
    post = final("norm-position", "compare_norm_position", "post")
    assert f["likeliest"] == "<eos>"  # the guess that answers <eos> at every position, as the run does
    assert abs(post["loss"] - f["entropy"]) < 0.05  # the run's loss sits at that guess's


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_page_reads_the_plateau_as_the_unigram_guess(client_as, student, language):
    client = client_as(student)
    client.cookies["django_language"] = language
    text = re.sub(r"\s+", " ", html_text(client.get("/experiments/norm-position/").content.decode()))
    missing = [w for w in frequency_words("en" if language == "en" else "zh") if w not in text]
    assert not missing, missing
    assert "the loss of a uniform guess over the 20 symbols (ln 20" not in text and "上均匀猜测的损失（ln 20" not in text


def html_text(page: str) -> str:
    import html

    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.mark.parametrize(("doc", "language"), [("docs/experiments.md", "en"), ("docs/experiments.zh.md", "zh")])
def test_the_docs_read_the_plateau_as_the_unigram_guess(doc, language):
    text = re.sub(r"\s*\n\s*", " ", (ROOT / doc).read_text(encoding="utf-8")).replace("`", "")
    text = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", text)
    missing = [w for w in frequency_words(language) if w not in text]
    assert not missing, missing
    assert "a uniform guess's loss" not in text and "损失是均匀猜测的" not in text
