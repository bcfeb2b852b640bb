"""Tatoeba's pairs for the hsk task: simplified, deduplicated, never a held-out sentence, and the options around them."""

from __future__ import annotations

import pytest

from modelcore.tasks import get_task
from modelcore.tasks.hsk import load_hsk_sentences
from modelcore.tasks.tatoeba import held_out_sentences, is_held_out, sentence_key, tatoeba_pairs


def test_the_pairs_come_simplified_with_english_as_the_targets_write_it() -> None:
    pairs = tatoeba_pairs()
    assert len(pairs) > 50_000
    assert len(set(pairs)) == len(pairs)
    sources = {zh for zh, _ in pairs}
    # Tatoeba writes 我們試試看！ in traditional characters; the task reads what the lesson writes.
    assert "我们试试看！" in sources
    assert not any("們" in zh or "這" in zh for zh in sources)
    assert ("我们试试看！", "let's try something .") in pairs
    assert all(en == en.lower() for _, en in pairs[:1000])


def test_a_held_out_sentence_is_left_out_whatever_its_punctuation_or_script() -> None:
    assert sentence_key("我們試試看！") != sentence_key("我们试试看")  # the key compares what is written, not the script
    kept = tatoeba_pairs(exclude=["我们试试看。"])
    assert not any(sentence_key(zh) == sentence_key("我们试试看") for zh, _ in kept)
    assert len(kept) < len(tatoeba_pairs())


def test_tatoeba_joins_the_training_split_only_and_never_holds_a_test_sentence() -> None:
    plain = get_task("hsk")
    task = get_task("hsk", tatoeba=1)
    assert (task.valid, task.test) == (plain.valid, plain.test)
    assert len(task.train) > len(plain.train) + 50_000
    held_out = {sentence_key(zh) for zh, _ in task.valid + task.test}
    added = set(task.train) - set(plain.train)
    assert not any(sentence_key(zh) in held_out for zh, _ in added)
    # 11 of the 400 test sentences are in Tatoeba too: they are the ones left out.
    everything = {sentence_key(zh) for zh, _ in tatoeba_pairs()}
    assert len(held_out & everything) >= 10


def test_one_sentence_in_25_can_be_kept_out_of_training_for_the_calibration() -> None:
    everything, kept = tatoeba_pairs(), tatoeba_pairs(hold_out=True)
    held = held_out_sentences()
    # About 2,000 sentences, with every translation Tatoeba gives each (some have three).
    assert 1800 < len(held) < 2300
    assert max(len(references) for _, references in held) >= 3
    held_keys = {sentence_key(zh) for zh, _ in held}
    assert not any(sentence_key(zh) in held_keys for zh, _ in kept)
    assert len(everything) - len(kept) == sum(sentence_key(zh) in held_keys for zh, _ in everything)
    # The choice follows the sentence, not its place in the file or its punctuation.
    zh = held[0][0]
    assert is_held_out(zh) and is_held_out(zh.rstrip("。？！?!") + "。")
    # An excluded sentence (an HSK one) is never offered for the calibration.
    assert zh not in {z for z, _ in held_out_sentences(exclude=[zh])}
    # Trained with them kept out, a model has seen none of them but the few that are HSK sentences too, which the
    # calibration leaves out.
    task = get_task("hsk", tatoeba=1, tatoeba_holdout=1, generated=1000)
    trained = {sentence_key(z) for z, _ in task.train}
    hsk = [s.zh for s in load_hsk_sentences()]
    assert 0 < len(held_keys & trained) <= len(held_keys & {sentence_key(z) for z in hsk}) < 50
    assert not trained & {sentence_key(z) for z, _ in held_out_sentences(exclude=hsk)}
    assert task.test == get_task("hsk").test


def test_real_sentences_can_be_repeated_and_the_english_vocabulary_capped() -> None:
    plain = get_task("hsk")
    task = get_task("hsk", real_repeat=3, tgt_vocab=500)
    assert len(task.train) == 3 * len(plain.train)
    src, tgt = task.build_tokenizers()
    assert tgt.vocab_size == 500
    assert src.vocab_size == plain.build_tokenizers()[0].vocab_size


@pytest.mark.parametrize(("options", "message"), [
    ({"tatoeba": -1}, "tatoeba must be 0 or more"),
    ({"tatoeba_holdout": -1}, "tatoeba_holdout must be 0 or more"),
    ({"real_repeat": 0}, "real_repeat must be 1 or more"),
    ({"tgt_vocab": 3}, "tgt_vocab must be more than 4"),
])
def test_a_bad_option_is_refused_with_its_name(options: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_task("hsk", **options)
