"""The real HSK sentences: read from the installed package, checked entry by entry, held out by sentence."""

from __future__ import annotations

import copy

import pytest

from modelcore.tasks import HskDataError, get_task
from modelcore.tasks.hsk import hsk_split, load_hsk_sentences, normalise_english
from modelcore.tokenization import UNK_ID

GOOD = {
    "id": "hsk1-0001",
    "hsk_level": 1,
    "topic": "greetings",
    "chinese": "老师，您好！",
    "translation": {"en": "Hello, teacher!"},
    "tokens": [
        {"word": "老师", "gloss_en": "teacher"},
        {"word": "您", "gloss_en": "you (courteous)"},
        {"word": "好", "gloss_en": "good"},
    ],
}


def _with(**changes: object) -> dict:
    record = copy.deepcopy(GOOD)
    record.update(changes)
    return record


def test_the_installed_package_gives_every_sentence_with_its_translation_and_glosses() -> None:
    sentences = load_hsk_sentences()
    assert len(sentences) == 4354
    assert {s.level for s in sentences} == {1, 2, 3, 4, 5, 6}
    first = sentences[0]
    assert (first.id, first.zh, first.en) == ("hsk1-0001", "老师，您好！", "Hello, teacher!")
    assert first.words[0] == ("老师", "teacher")
    assert first.target == "hello , teacher !"


def test_english_is_written_as_the_grammar_models_write_it() -> None:
    assert normalise_english("It's cold out; dress warmly.") == "it's cold out ; dress warmly ."
    assert normalise_english("We beat the opponent 3-1.") == "we beat the opponent 3 - 1 ."
    assert normalise_english("Don’t go!") == "don't go !"


def test_a_malformed_entry_is_refused_with_its_id_named() -> None:
    records = [
        GOOD,
        _with(id="hsk1-0002", translation={"en": "  "}),
        _with(id="hsk1-0003", chinese=""),
        _with(id="hsk1-0004", tokens=[{"word": "猫", "gloss_en": "cat"}]),
        _with(id="hsk1-0005", hsk_level="one"),
        _with(id="hsk1-0001"),
        _with(id=None),
        "not a record",
    ]
    with pytest.raises(HskDataError) as err:
        load_hsk_sentences(records)
    assert err.value.errors == [
        ("hsk1-0002", "no English translation"),
        ("hsk1-0003", "no Chinese text"),
        ("hsk1-0004", "word 1 (猫) is not in the sentence"),
        ("hsk1-0005", "hsk_level 'one' is not a level from 1 to 9"),
        ("hsk1-0001", "the same id as an earlier entry"),
        ("entry 7 (no id)", "no id"),
        ("entry 8 (no id)", "not an object but str"),
    ]
    assert str(err.value).startswith("hsk1-0002: no English translation; hsk1-0003: no Chinese text")


def test_the_task_holds_out_whole_sentences_the_same_way_every_time() -> None:
    task, again, other = get_task("hsk"), get_task("hsk"), get_task("hsk", seed=1)
    assert (len(task.valid), len(task.test)) == (200, 400) and len(task.train) > 3700
    assert (task.train, task.test) == (again.train, again.test)
    assert task.test != other.test
    sources = [{s for s, _ in split} for split in (task.train, task.valid, task.test)]
    assert not sources[0] & sources[1] and not sources[0] & sources[2] and not sources[1] & sources[2]
    assert task.options == {"seed": 0}
    assert (task.src_kind, task.tgt_kind) == ("char", "word")


def test_a_sentence_listed_twice_stays_in_one_split() -> None:
    sentences = load_hsk_sentences()
    repeated = {s.zh for s in sentences if sum(t.zh == s.zh for t in sentences) > 1}
    assert repeated  # the package lists a few sentences twice, under two ids
    for seed in range(5):
        train, valid, test = hsk_split(sentences, n_valid=200, n_test=400, seed=seed)
        for zh in repeated:
            homes = [name for name, split in (("train", train), ("valid", valid), ("test", test))
                     if any(s.zh == zh for s in split)]
            assert len(homes) == 1, (zh, homes)


def test_a_fraction_of_the_training_sentences_keeps_the_same_test() -> None:
    full, quarter = get_task("hsk"), get_task("hsk", train_fraction=0.25)
    assert quarter.test == full.test and quarter.valid == full.valid
    assert len(quarter.train) == round(0.25 * len(full.train))
    assert set(quarter.train) < set(full.train)
    assert get_task("hsk", train_fraction="0.25").train == quarter.train  # as the CLI's --task-option passes it
    with pytest.raises(ValueError, match="train_fraction"):
        get_task("hsk", train_fraction=0)
    with pytest.raises(ValueError, match="train_fraction must be a number, got 'half'"):
        get_task("hsk", train_fraction="half")


def test_held_out_sentences_can_meet_characters_training_never_saw() -> None:
    task = get_task("hsk")
    src_tok, _ = task.build_tokenizers()
    unknown = [zh for zh, _ in task.test if UNK_ID in src_tok.encode(zh)]
    assert 0 < len(unknown) < len(task.test) // 4  # real text: a few rare characters, not most sentences


def test_generated_sentences_join_the_training_split_only() -> None:
    real, mixed = get_task("hsk"), get_task("hsk", generated=500)
    assert mixed.test == real.test and mixed.valid == real.valid
    assert len(mixed.train) == len(real.train) + 500
    assert set(real.train) < set(mixed.train)
    assert sum(zh.endswith("。") and en.endswith(" .") for zh, en in set(mixed.train) - set(real.train)) == 500


def test_clean_leaves_the_packages_placeholder_translations_out_of_training_only() -> None:
    full, clean = get_task("hsk"), get_task("hsk", clean=1)
    stand_ins = [(zh, en) for zh, en in full.train if en.startswith("placeholder")]
    assert len(stand_ins) == 72 and ("这个库很大。", "placeholder") in stand_ins
    assert set(clean.train) == set(full.train) - set(stand_ins)
    assert clean.test == full.test and clean.valid == full.valid  # held-out figures stay comparable
    assert sum(en.startswith("placeholder") for _, en in full.test) == 4
