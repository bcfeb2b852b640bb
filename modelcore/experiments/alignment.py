"""Cross-attention against a reference alignment: does a head look at the Chinese word whose gloss is the English word?

The HSK sentences gloss every Chinese word in English (hsk.HskSentence.words). Teacher-forced on the human
translation, the row of a decoder layer's cross-attention that predicts the English word y_j has one strongest
source character; it is a hit when that character lies inside a Chinese word whose gloss contains y_j. The rules:

- characters belong to words by finding each word, in order, in the Chinese text; punctuation belongs to none;
- a gloss is compared word by word, tokenised as the targets are (hsk.normalise_english): "to love; to like"
  glosses "love" and "like", not "lovely";
- only target words that some word of the sentence glosses are counted, and never a function word (STOP_WORDS),
  punctuation or <unk>;
- the strongest position is taken among the sentence's characters: the source's closing <eos> is left out (a
  head that parks its weight there points at no word; `eos_strongest` says how often it would have won).

The chance rate is what a head that picked a character at random would score: per counted word, the share of the
sentence's characters inside its matching words, averaged over the counted words.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from modelcore.model import EncoderDecoder
from modelcore.model.instrument import record
from modelcore.tasks.hsk import HskSentence, normalise_english
from modelcore.tokenization import UNK, Tokenizer
from modelcore.training.batching import collate, encode_pairs

# English words that carry grammar rather than a meaning a gloss would name; they are never counted.
STOP_WORDS = frozenset({
    "the", "a", "an", "to", "of", "is", "are", "was", "were", "be", "been", "am", "and", "or",
    "in", "on", "at", "for", "with", "by", "as", "do", "does", "did",
})
ALIGNMENT_FILE = "alignment.json"  # beside a model's weights: the figure its card shows
SPLIT = {"task": "hsk", "seed": 0, "n_valid": 200, "n_test": 400}  # the held-out sentences the card's figure is on


@dataclass(frozen=True)
class Reference:
    """What one sentence's glosses say: for each counted target position, the source characters glossing it."""

    n_chars: int  # source positions that are the sentence's own characters (the <eos> after them is not)
    rows: tuple[tuple[int, frozenset[int]], ...]  # (target position j, characters of the words glossing y_j)


def word_spans(zh: str, words: Sequence[tuple[str, str]]) -> list[range]:
    """The characters of each word, found in order in `zh` (an empty range for a word not found after the last)."""
    spans, start = [], 0
    for word, _gloss in words:
        at = zh.find(word, start)
        if at < 0:
            spans.append(range(0))
            continue
        spans.append(range(at, at + len(word)))
        start = at + len(word)
    return spans


def gloss_words(gloss: str) -> frozenset[str]:
    """The English words of a gloss, tokenised as a target is: '(bound form) to love; to like' -> {love, like, ...}."""
    return frozenset(normalise_english(gloss).split())


def counts(word: str) -> bool:
    """Whether a target word may be counted at all: a word with a letter or digit, no function word, not <unk>."""
    return word != UNK and word not in STOP_WORDS and any(c.isalnum() for c in word)


def reference_alignment(sentence: HskSentence, target_tokens: Sequence[str]) -> Reference:
    """The counted target positions of `sentence` (its tokens as the target tokenizer reads them)."""
    glossed = [(span, gloss_words(gloss)) for span, (_word, gloss) in zip(
        word_spans(sentence.zh, sentence.words), sentence.words, strict=True)]
    rows = []
    for j, word in enumerate(target_tokens):
        if not counts(word):
            continue
        chars = frozenset(i for span, glossary in glossed if word in glossary for i in span)
        if chars:
            rows.append((j, chars))
    return Reference(len(sentence.zh), tuple(rows))


class Tally:
    """Hits per layer and head (and for the heads' mean) over the counted words of many sentences."""

    def __init__(self, n_layers: int, n_heads: int) -> None:
        self.hits = torch.zeros(n_layers, n_heads, dtype=torch.long)
        self.eos = torch.zeros(n_layers, n_heads, dtype=torch.long)
        self.mean_hits = torch.zeros(n_layers, dtype=torch.long)
        self.counted = 0
        self.chance_sum = 0.0

    def add(self, cross: Sequence[Tensor], reference: Reference) -> None:
        """One sentence: `cross` holds each decoder layer's weights (h, T, S), S = its characters + <eos> (+ pad)."""
        if not reference.rows:
            return
        rows = torch.tensor([j for j, _ in reference.rows])
        inside = torch.zeros(len(reference.rows), reference.n_chars, dtype=torch.bool)  # (N, n_chars)
        for r, (_j, chars) in enumerate(reference.rows):
            inside[r, list(chars)] = True
        n = reference.n_chars
        for layer, weights in enumerate(cross):
            picked = weights[:, rows, :]  # (h, N, S)
            strongest = picked[..., :n].argmax(dim=-1)  # (h, N): the <eos> at n is left out
            self.hits[layer] += inside.gather(1, strongest.T).sum(dim=0)
            self.eos[layer] += (picked[..., n] > picked[..., :n].amax(dim=-1)).sum(dim=-1)
            mean_strongest = picked[..., :n].mean(dim=0).argmax(dim=-1)  # (N,)
            self.mean_hits[layer] += int(inside.gather(1, mean_strongest[:, None]).sum())
        self.counted += len(reference.rows)
        self.chance_sum += float(inside.sum()) / n

    def figures(self) -> dict[str, Any]:
        """Rates in 0..1 (hit rate per layer and head, for the heads' mean, the chance rate) and the counts."""
        if not self.counted:
            raise ValueError("no target word matched a gloss: nothing to count")
        return {
            "heads": (self.hits.double() / self.counted).tolist(),  # [layer][head]
            "mean_over_heads": (self.mean_hits.double() / self.counted).tolist(),  # [layer]
            "eos_strongest": (self.eos.double() / self.counted).tolist(),  # [layer][head]
            "chance": self.chance_sum / self.counted,
            "counted_words": self.counted,
        }


@torch.no_grad()
def measure_alignment(
    model: EncoderDecoder, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, sentences: Sequence[HskSentence],
    *, batch_size: int = 64,
) -> dict[str, Any]:
    """Teacher-forced on each reference translation, how often each cross-attention head's strongest character is
    a word whose gloss is the English word predicted (see the module's docstring for what counts).

    The model runs on a float64 copy: the strongest position must not depend on a machine's rounding.
    """
    model = copy.deepcopy(model).double().eval()
    pairs = [(s.zh, s.target) for s in sentences]
    examples = encode_pairs(pairs, src_tokenizer, tgt_tokenizer, model.config.max_len)
    tally = Tally(model.config.n_decoder_layers, model.config.n_heads)
    target_words = 0
    for start in range(0, len(examples), batch_size):
        chunk = range(start, min(start + batch_size, len(examples)))
        batch = collate([examples[i] for i in chunk])  # tgt_in = <bos> y: row j predicts y_j (batching.Batch)
        with record(model) as recording:
            model(batch.src, batch.tgt_in)
        for b, i in enumerate(chunk):
            sentence, example = sentences[i], examples[i]
            if len(example.src) != len(sentence.zh) + 1:
                raise ValueError(f"{sentence.id}: the source tokenizer does not give one position per character")
            tokens = [tgt_tokenizer.id_to_token(t) for t in example.tgt]
            target_words += sum(1 for t in tokens if any(c.isalnum() for c in t))
            tally.add([layer[b] for layer in recording.cross], reference_alignment(sentence, tokens))
    return {**tally.figures(), "sentences": len(sentences), "target_words": target_words}


def hsk_alignment_figures(name: str = "zh-en-hsk") -> dict[str, Any]:
    """The card's figure: `measure_alignment` for a model on the hsk task's test split, with what was counted."""
    from modelcore.checkpoint import load_model
    from modelcore.tasks.hsk import hsk_split, load_hsk_sentences

    loaded = load_model(name)
    _train, _valid, test = hsk_split(load_hsk_sentences(), n_valid=SPLIT["n_valid"], n_test=SPLIT["n_test"],
                                     seed=SPLIT["seed"])
    figures = measure_alignment(loaded.model, loaded.src_tokenizer, loaded.tgt_tokenizer, test)
    return {
        "model": name, "split": dict(SPLIT), **figures,
        "rules": {
            "strongest": "argmax over the sentence's characters; the source's <eos> is left out",
            "match": "the target word is a word of the gloss, both tokenised by hsk.normalise_english",
            "stop_words": sorted(STOP_WORDS),
            "chance": "per counted word, the share of the sentence's characters inside matching words; averaged",
        },
    }
