"""Cross-attention against the glosses' reference alignment: the scoring on attention we set, and the shipped figure."""
from __future__ import annotations

import json
import math

import pytest
import torch

from modelcore.checkpoint import resolve_model_path
from modelcore.experiments.alignment import (
    ALIGNMENT_FILE,
    Tally,
    hsk_alignment_figures,
    reference_alignment,
    word_spans,
)
from modelcore.tasks.hsk import HskSentence

# 我爱猫。 -> "i love the cat .": "i", "love" and "cat" are glossed; "the" is a function word, "." punctuation.
CAT = HskSentence("t1", 1, "", "我爱猫。", "I love the cat.", (("我", "I; me"), ("爱", "to love"), ("猫", "cat")))
CAT_TOKENS = ["i", "love", "the", "cat", "."]
S = len(CAT.zh) + 1  # the characters and the source's <eos>


def row(weights: dict[int, float]) -> list[float]:
    """One attention row over S positions: the weights given, the rest of the mass spread evenly."""
    rest = (1 - sum(weights.values())) / (S - len(weights))
    return [weights.get(k, rest) for k in range(S)]


def test_the_reference_counts_glossed_content_words_only():
    reference = reference_alignment(CAT, CAT_TOKENS)
    assert reference.n_chars == 4  # 。 is a position, inside no word
    assert reference.rows == ((0, frozenset({0})), (1, frozenset({1})), (3, frozenset({2})))
    unknown = reference_alignment(CAT, ["i", "<unk>", "a", "cat", "cats", "-"])
    assert [j for j, _ in unknown.rows] == [0, 3]  # <unk>, a stop word, an unglossed form and punctuation are not


def test_a_repeated_word_is_found_in_order_and_every_copy_matches():
    he = HskSentence("t2", 1, "", "他说他来。", "He says he is coming.",
                     (("他", "he; him"), ("说", "to say"), ("他", "he; him"), ("来", "to come")))
    assert word_spans(he.zh, he.words) == [range(0, 1), range(1, 2), range(2, 3), range(3, 4)]
    assert reference_alignment(he, ["he", "says", "he", "is", "coming", "."]).rows == (
        (0, frozenset({0, 2})), (2, frozenset({0, 2})))  # "says" is not the gloss's "say": words match whole


def test_hits_chance_and_the_heads_mean_on_attention_we_set():
    # Rows are target positions 0..5 (the words, then the row that predicts <eos>); row 2 ("the") is not counted.
    aligned = [row({0: 0.9}), row({1: 0.9}), row({3: 0.9}), row({2: 0.9}), row({3: 0.9}), row({4: 0.9})]
    # Head 2: "i" on 。 (a miss); "love" mostly on <eos> but of the characters on 爱 (a hit); "cat" on 我 (a miss).
    other = [row({3: 0.7}), row({4: 0.6, 1: 0.3}), row({0: 0.9}), row({0: 0.7}), row({0: 0.9}), row({0: 0.9})]
    tally = Tally(n_layers=1, n_heads=2)
    tally.add([torch.tensor([aligned, other])], reference_alignment(CAT, CAT_TOKENS))
    figures = tally.figures()
    assert figures["counted_words"] == 3
    assert figures["heads"] == [[1.0, pytest.approx(1 / 3)]]
    assert figures["eos_strongest"] == [[0.0, pytest.approx(1 / 3)]]
    assert figures["mean_over_heads"] == [1.0]  # the aligned head outweighs the other in every counted row
    assert figures["chance"] == pytest.approx(0.25)  # each counted word: 1 of the 4 characters


def test_a_sentence_with_nothing_glossed_counts_nothing():
    tally = Tally(n_layers=1, n_heads=1)
    tally.add([torch.full((1, 2, S), 1 / S)], reference_alignment(CAT, ["the", "."]))
    with pytest.raises(ValueError, match="nothing to count"):
        tally.figures()


@pytest.fixture(scope="module")
def shipped_figures():
    torch.set_num_threads(2)
    return hsk_alignment_figures("zh-en-hsk")


def test_the_shipped_model_is_measured_on_the_held_out_sentences(shipped_figures):
    f = shipped_figures
    assert f["sentences"] == 400 and f["counted_words"] > 500
    assert len(f["heads"]) == 3 and all(len(heads) == 4 for heads in f["heads"]) and len(f["mean_over_heads"]) == 3
    rates = [r for heads in f["heads"] + f["eos_strongest"] for r in heads] + f["mean_over_heads"] + [f["chance"]]
    assert all(0 <= r <= 1 for r in rates)
    assert max(max(heads) for heads in f["heads"]) > f["chance"]  # some head aligns better than a random pick


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_the_card_s_figure_is_what_the_shipped_model_gives(shipped_figures):
    shipped = json.loads((resolve_model_path("zh-en-hsk") / ALIGNMENT_FILE).read_text(encoding="utf-8"))
    assert _same(shipped, shipped_figures), "rerun scripts/alignment_figures.py"
