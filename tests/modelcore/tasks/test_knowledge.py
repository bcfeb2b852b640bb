"""Marking what a model does not know in a source, from its tokenizer and (for a grammar model) its lexicon."""

from __future__ import annotations

from modelcore.checkpoint import SHIPPED_DIR
from modelcore.tasks.knowledge import Span, known_spans, read_source_tokenizer, unknown_words
from modelcore.tasks.zh_en import generate_sentences, lexicon_words

ZH_EN = read_source_tokenizer(SHIPPED_DIR / "zh-en-post")
REVERSE = read_source_tokenizer(SHIPPED_DIR / "reverse")


def test_characters_the_tokenizer_never_saw_are_marked() -> None:
    spans = known_spans("我们明天去北京。", ZH_EN)
    assert spans == [Span("我们明天去", True), Span("北京", False), Span("。", True)]  # 去 as in 去年
    assert "".join(s.text for s in spans) == "我们明天去北京。"


def test_a_known_character_outside_the_grammar_s_words_is_marked_with_the_lexicon() -> None:
    assert unknown_words(known_spans("他没有吃饭。", ZH_EN)) == []  # 饭 is a character of 米饭
    assert unknown_words(known_spans("他没有吃饭。", ZH_EN, lexicon_words())) == ["饭"]
    assert unknown_words(known_spans("我的狗不会游泳。", ZH_EN, lexicon_words())) == ["游泳"]
    assert unknown_words(known_spans("我们明天去北京。", ZH_EN, lexicon_words())) == ["去北京"]


def test_every_generated_sentence_is_known_through_and_through() -> None:
    lexicon = lexicon_words()
    for sentence in generate_sentences(500, seed=7):
        assert unknown_words(known_spans(sentence.zh, ZH_EN, lexicon)) == [], sentence.zh


def test_a_word_tokenizer_marks_whole_unknown_words_and_never_spaces() -> None:
    spans = known_spans("3 h zz 5", REVERSE)
    assert unknown_words(spans) == ["zz"]
    assert "".join(s.text for s in spans) == "3 h zz 5"
