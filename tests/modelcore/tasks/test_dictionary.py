"""Dictionary pairs for the hsk task: cleaned senses, the HSK glosses of the training words, frequent CC-CEDICT words."""

from __future__ import annotations

import pytest

from modelcore.tasks import get_task
from modelcore.tasks.dictionary import cedict_pairs, clean_sense, gloss_pairs


@pytest.mark.parametrize(("definition", "sense"), [
    ("to go; to go to (a place)", "to go"),
    ("surname Wang/king", "king"),
    ("variant of 台[tai2]/platform", "platform"),
    ("(bound form) sister/girl", "sister"),
    ("university student; college student", "university student"),
    ("the Great Learning, one of the Four Books 四書|四书[Si4 shu1] in Confucianism", None),
    ("CL:個|个[ge4]", None),
    ("a sense with far too many words in it", None),
])
def test_a_sense_is_the_first_usable_one_cleaned(definition: str, sense: str | None) -> None:
    assert clean_sense(definition) == sense


def test_glosses_keep_each_word_of_two_to_four_characters_once() -> None:
    words = [("老师", "teacher"), ("您", "you (courteous)"), ("老师", "master"), ("图书馆", "library; library (building)")]
    assert gloss_pairs(words) == [("老师", "teacher"), ("图书馆", "library")]


def test_cedict_gives_the_most_frequent_words_first_and_leaves_out_the_excluded() -> None:
    pairs = cedict_pairs(5)
    assert len(pairs) == 5 and all(2 <= len(word) <= 4 for word, _ in pairs)
    assert pairs[0] == ("中国", "china")
    assert ("中国", "china") not in cedict_pairs(5, exclude=["中国"])


def test_the_dictionary_pairs_join_the_training_split_only() -> None:
    plain, with_words = get_task("hsk", seed=0), get_task("hsk", seed=0, glosses=1, cedict=100)
    assert with_words.valid == plain.valid and with_words.test == plain.test
    added = set(with_words.train) - set(plain.train)
    assert ("中国", "china") in added and len(with_words.train) - len(plain.train) == len(added)
    assert not {zh for zh, _ in plain.test + plain.valid} & {zh for zh, _ in added}
    quarter = get_task("hsk", seed=0, train_fraction=0.25, glosses=1)
    assert len(quarter.train) - len(get_task("hsk", seed=0, train_fraction=0.25).train) < len(added)


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="cedict must be 0 or more"):
        get_task("hsk", cedict=-1)
