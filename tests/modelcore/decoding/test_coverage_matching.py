"""How the source-word check matches a source word to the output, as a reader of the playground sees it: a word the
output keeps is not underlined as missing, and one it drops still is (modelcore.decoding.coverage)."""

from __future__ import annotations

import pytest

from modelcore.decoding.coverage import check


def _missing(source: str, output: str) -> list[str]:
    return [w.word for w in check(source, output).missing]


def _checked(source: str, output: str) -> list[str]:
    return [w.word for w in check(source, output).words]


@pytest.mark.parametrize(("source", "kept", "dropped", "word"), [
    # a sense of light verbs and particles only (CC-CEDICT: 起床 "to get up", 戴 "to put on", 拿 "to take")
    ("我早晨六点就起床了。", "i got up at six in the morning .", "i was at six in the morning .", "起床"),
    ("她戴上了她的帽子。", "she put on her hat .", "she has her hat .", "戴"),
    ("我将拿这把伞。", "i'll take this umbrella .", "i'll buy this umbrella .", "拿"),
    # a modal (能够 "can") and a generic noun (好事: 好, 事 "thing")
    ("我相信你能够做到。", "i believe you can do it .", "i believe you .", "能够"),
    ("那不会是一件好事。", "that won't be a good thing .", "that won't be good .", "好事"),
    # a compound said by its parts (做到 "to accomplish" said as "do")
    ("我相信你能够做到。", "i believe you can do it .", "i believe you can .", "做到"),
    # a doubled verb is the verb (谈谈: talk)
    ("我们谈谈吧。", "let's talk .", "let's go .", "谈谈"),
    # a locative said by its preposition (下面: under)
    ("桌子下面有一只猫。", "there is a cat under the table .", "there is a cat on the table .", "下面"),
    # a phrasal sense's particle said by its preposition (进去 "go in" as "go into")
    ("他出来了，我们进去吧。", "he came out , let's go into it .", "he came out , let's go .", "进去"),
])
def test_a_kept_word_is_not_reported_missing_and_a_dropped_one_is(source: str, kept: str, dropped: str,
                                                                  word: str) -> None:
    assert word not in _missing(source, kept), [w.to_dict() for w in check(source, kept).words]
    assert word in _missing(source, dropped), [w.to_dict() for w in check(source, dropped).words]


def test_a_compound_is_covered_by_its_parts_only_when_every_part_is_said() -> None:
    # 火车站 (train station) said as "station": 火车 (train) is not said, so it is still missing
    assert "火车站" in _missing("医院在火车站旁边。", "the hospital is next to the station .")
    assert _missing("医院在火车站旁边。", "the hospital is next to the train station .") == []
    # a word of a doubled character that is not a verb is its own word: 奶奶 (grandma) is not 奶 (milk)
    assert "奶奶" in _missing("奶奶做的饭很好吃。", "milk is delicious .")


def test_pronouns_and_grammar_words_are_not_checked() -> None:
    # English drops the pronoun of a request; 为了 ("in order to", jieba: a preposition) is said many ways
    assert _checked("请你离开。", "please leave .") == ["离开"] and check("请你离开。", "please leave .").warnings() == []
    assert "为了" not in _checked("他为了钱工作。", "he works for money .")
    assert _missing("他为了钱工作。", "he works for money .") == []
