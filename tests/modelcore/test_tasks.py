from __future__ import annotations

import pytest

from modelcore.tasks import TASK_NAMES, get_task
from modelcore.tokenization import UNK_ID

SMALL = {"n_train": 400, "n_valid": 50, "n_test": 50}
ALGORITHMIC = ["copy", "reverse", "sort", "add"]


def test_task_names_are_the_documented_five() -> None:
    assert TASK_NAMES == ("copy", "reverse", "sort", "add", "zh-en")


def test_unknown_task_names_the_choices() -> None:
    with pytest.raises(ValueError) as err:
        get_task("translate")
    assert str(err.value) == "unknown task 'translate' (choose from: copy, reverse, sort, add, zh-en)"


def test_unknown_option_is_refused() -> None:
    with pytest.raises(ValueError, match="no option max_digits"):
        get_task("reverse", max_digits=3)


@pytest.mark.parametrize("name", ALGORITHMIC)
def test_splits_are_deterministic_per_seed_and_disjoint(name: str) -> None:
    a, b, other = (
        get_task(name, seed=1, **SMALL),
        get_task(name, seed=1, **SMALL),
        get_task(name, seed=2, **SMALL),
    )
    assert (a.train, a.valid, a.test) == (b.train, b.valid, b.test)
    assert a.train != other.train and a.test != other.test
    assert (len(a.train), len(a.valid), len(a.test)) == (400, 50, 50)
    sources = [set(s for s, _ in split) for split in (a.train, a.valid, a.test)]
    assert not sources[0] & sources[1] and not sources[0] & sources[2] and not sources[1] & sources[2]
    assert sum(map(len, sources)) == 500


def test_default_sizes_are_twenty_thousand_one_thousand_one_thousand() -> None:
    task = get_task("reverse")
    assert (len(task.train), len(task.valid), len(task.test)) == (20_000, 1_000, 1_000)


def test_sequence_tasks_transform_as_named() -> None:
    assert all(t == s for s, t in get_task("copy", **SMALL).train)
    for src, tgt in get_task("reverse", **SMALL).train:
        assert tgt.split() == src.split()[::-1]
    for src, tgt in get_task("sort", **SMALL).train:
        assert sorted(src.split()) == sorted(tgt.split())
        digits = [c for c in tgt.split() if c.isdigit()]
        assert tgt.split() == sorted(digits) + sorted(c for c in tgt.split() if not c.isdigit())


def test_lengths_follow_the_options() -> None:
    task = get_task("copy", min_len=2, max_len=3, **SMALL)
    assert {len(s.split()) for s, _ in task.train} == {2, 3}
    assert {len(s.split()) for s, _ in get_task("copy", **SMALL).train} == set(range(4, 13))
    with pytest.raises(ValueError, match="distinct sequences"):
        get_task("copy", min_len=1, max_len=1, **SMALL)


def test_addition_sums_correctly_up_to_five_digits() -> None:
    task = get_task("add", **SMALL)
    for src, tgt in task.train + task.test:
        a, b = src.split(" + ")
        assert int(a.replace(" ", "")) + int(b.replace(" ", "")) == int(tgt.replace(" ", ""))
    operand_lengths = {len(side.split()) for src, _ in task.train for side in src.split(" + ")}
    assert operand_lengths == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("name", ALGORITHMIC)
def test_test_split_never_meets_unk(name: str) -> None:
    task = get_task(name, n_train=20, n_valid=10, n_test=200)
    src_tok, tgt_tok = task.build_tokenizers()
    assert src_tok.kind == tgt_tok.kind == "word"
    assert src_tok.vocab_size <= 25
    for src, tgt in task.test:
        assert UNK_ID not in src_tok.encode(src) and UNK_ID not in tgt_tok.encode(tgt)
        assert tgt_tok.decode(tgt_tok.encode(tgt)) == tgt
