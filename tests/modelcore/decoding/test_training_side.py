"""A model's training side (the words and sources its warnings compare a new source with) is built once per task,
kept on disk for the next process, and read back only while the code and data it came from are unchanged."""
from __future__ import annotations

import json

import pytest

from modelcore.decoding import words
from modelcore.decoding.words import SourceIndex, training_side, training_sources, training_words

METRICS = {"task": "copy", "task_options": {"n_train": 300, "n_valid": 20, "n_test": 20, "seed": 3}}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(words.CACHE_ENV, str(tmp_path))
    words._training_side.cache_clear()
    yield tmp_path / "training-side"
    words._training_side.cache_clear()


def built_afresh(metrics):
    sources = training_sources(metrics)
    return training_words(sources), SourceIndex(sources)


def test_the_side_read_back_from_disk_is_the_side_built_afresh(cache):
    fresh_words, fresh_index = built_afresh(METRICS)
    first = training_side(METRICS)
    assert first.words == fresh_words and [p.name for p in cache.iterdir()] != []
    words._training_side.cache_clear()  # as a new process would find it: on disk only
    again = training_side(METRICS)
    assert again is not first and again.words == fresh_words
    for text in ["1 2 3 4", "9 9 9", "a b c d e f", training_sources(METRICS)[5]]:
        assert again.index.nearest(text) == fresh_index.nearest(text)


def test_models_of_one_task_share_one_side_and_other_options_get_their_own(cache):
    assert training_side(METRICS) is training_side(dict(METRICS))
    other = {**METRICS, "task_options": {**METRICS["task_options"], "seed": 4}}
    assert training_sources(other) != training_sources(METRICS)
    assert training_side(other) is not training_side(METRICS)
    assert len(list(cache.iterdir())) == 2


def test_a_copy_kept_under_another_fingerprint_or_broken_is_never_read(cache, monkeypatch):
    training_side(METRICS)
    (kept,) = cache.iterdir()
    kept.write_text(json.dumps({"sources": ["假的"], "words": ["假的"]}), encoding="utf-8")
    words._training_side.cache_clear()
    monkeypatch.setattr(words, "_fingerprint", lambda: "changed-code")  # the generator or a dictionary changed
    assert "假的" not in training_side(METRICS).words

    words._training_side.cache_clear()
    for path in cache.iterdir():
        path.write_text("{not json", encoding="utf-8")
    assert training_side(METRICS).words == built_afresh(METRICS)[0]


def test_an_unwritable_cache_folder_only_means_building_it_again(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv(words.CACHE_ENV, str(blocked))  # a folder that cannot be made
    words._training_side.cache_clear()
    try:
        assert training_side(METRICS).words == built_afresh(METRICS)[0]
    finally:
        words._training_side.cache_clear()


def test_a_task_that_cannot_be_rebuilt_has_no_side(cache):
    assert training_side({"task": "corpus-upload"}) is None
    assert training_side({"task": "copy", "task_options": {"no_such_option": 1}}) is None
