"""Algorithmic tasks on space-separated symbols: copy, reverse, sort and multi-digit addition."""

from __future__ import annotations

import random
from collections.abc import Callable

from modelcore.tasks.base import Pair, Task, split_pairs

# Twenty symbols: small enough to learn in minutes, large enough that sorting is not trivial.
SYMBOLS = tuple("0123456789abcdefghij")
DIGITS = tuple("0123456789")


def _sorted_symbols(seq: list[str]) -> list[str]:
    return sorted(seq, key=SYMBOLS.index)


_TRANSFORMS: dict[str, Callable[[list[str]], list[str]]] = {
    "copy": lambda seq: list(seq),
    "reverse": lambda seq: seq[::-1],
    "sort": _sorted_symbols,
}


def sequence_task(
    name: str,
    seed: int = 0,
    *,
    min_len: int = 4,
    max_len: int = 12,
    n_train: int = 20_000,
    n_valid: int = 1_000,
    n_test: int = 1_000,
) -> Task:
    """`copy`, `reverse` or `sort` of random symbol sequences, e.g. reverse: "7 3 9 1" -> "1 9 3 7"."""
    transform = _TRANSFORMS[name]
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    total = _check_sizes(n_train, n_valid, n_test)
    capacity = sum(len(SYMBOLS) ** n for n in range(min_len, max_len + 1))
    if total > capacity:
        raise ValueError(
            f"only {capacity} distinct sequences of length {min_len}..{max_len}, asked for {total}"
        )
    rng = random.Random(f"{name}:{seed}")
    sources: dict[str, None] = {}  # insertion-ordered set, so the draw order is the seed's
    while len(sources) < total:
        length = rng.randint(min_len, max_len)
        sources[" ".join(rng.choice(SYMBOLS) for _ in range(length))] = None
    pairs = [(src, " ".join(transform(src.split()))) for src in sources]
    return _task(name, pairs, n_valid, n_test, seed, SYMBOLS, SYMBOLS)


def addition_task(
    seed: int = 0,
    *,
    max_digits: int = 5,
    n_train: int = 20_000,
    n_valid: int = 1_000,
    n_test: int = 1_000,
) -> Task:
    """`add`: two numbers of 1..max_digits digits, digits spaced: "4 7 + 1 8" -> "6 5"."""
    if not 1 <= max_digits <= 18:
        raise ValueError(f"max_digits must be in 1..18, got {max_digits}")
    total = _check_sizes(n_train, n_valid, n_test)
    if total > 10 ** (2 * max_digits):
        raise ValueError(f"too few distinct sums of {max_digits}-digit numbers for {total} pairs")
    rng = random.Random(f"add:{seed}")
    operands: dict[tuple[int, int], None] = {}
    while len(operands) < total:
        # Draw the number of digits first, so short and long numbers are equally common.
        a, b = (
            rng.randint(0 if n == 1 else 10 ** (n - 1), 10**n - 1)
            for n in rng.choices(range(1, max_digits + 1), k=2)
        )
        operands[(a, b)] = None
    pairs = [(f"{_spaced(a)} + {_spaced(b)}", _spaced(a + b)) for a, b in operands]
    return _task("add", pairs, n_valid, n_test, seed, (*DIGITS, "+"), DIGITS)


def _spaced(n: int) -> str:
    return " ".join(str(n))


def _check_sizes(n_train: int, n_valid: int, n_test: int) -> int:
    if n_train < 1 or n_valid < 0 or n_test < 0:
        raise ValueError(f"need n_train >= 1 and n_valid, n_test >= 0, got {n_train}, {n_valid}, {n_test}")
    return n_train + n_valid + n_test


def _task(
    name: str,
    pairs: list[Pair],
    n_valid: int,
    n_test: int,
    seed: int,
    src_alphabet: tuple[str, ...],
    tgt_alphabet: tuple[str, ...],
) -> Task:
    train, valid, test = split_pairs(pairs, n_valid, n_test, f"{name}:{seed}:split")
    return Task(
        name=name,
        train=train,
        valid=valid,
        test=test,
        src_kind="word",
        tgt_kind="word",
        src_alphabet=src_alphabet,
        tgt_alphabet=tgt_alphabet,
    )
