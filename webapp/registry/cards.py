"""Model cards: what each model was trained on, sentences it handles, and where it fails.

A probe's output is the model's greedy translation as measured; tests/webapp/registry/test_cards.py
decodes every one again, so a card never claims what its model does not do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

# The data behind each task, in words a student reads before typing a sentence of their own.
TRAINED_ON: dict[str, Promise] = {
    "zh-en": _(
        "Chinese sentences generated from a small grammar: 40 nouns, 16 verbs, 17 adjectives, 7 pronouns, "
        "12 time phrases and 10 places (20,000 pairs). It has never seen a word outside that grammar."
    ),
    "hsk": _(
        "Real graded Chinese sentences (HSK 3.0, levels 1 to 6) with human English translations: "
        "about 3,750 pairs, a few thousand words, most of them seen only once or twice."
    ),
    "reverse": _("Sequences of 4 to 12 symbols (the digits 0 to 9 and the letters a to j) and the same sequence reversed."),
    "copy": _("Sequences of 4 to 12 symbols (the digits 0 to 9 and the letters a to j), copied."),
    "sort": _("Sequences of 4 to 12 symbols (the digits 0 to 9 and the letters a to j), sorted."),
    "add": _("Sums of two numbers of 1 to 5 digits, written digit by digit."),
}
LEXICON_TASKS = frozenset({"zh-en"})  # grammar models: a word outside the grammar's lexicon is unknown too

HSK_ATTRIBUTION = _(
    "The HSK sentences come from the hsk-sentences-audio package, © its contributors, under the CC-BY-SA-4.0 "
    "licence; a model trained on them is shared under the same licence."
)
HSK_TATOEBA_ATTRIBUTION = _(
    "The HSK sentences come from the hsk-sentences-audio package, © its contributors, under the CC-BY-SA-4.0 "
    "licence; the Tatoeba pairs from tatoeba.org, © their contributors, under the CC-BY 2.0 FR licence, as the hsg "
    "package ships them. A model trained on them is shared under CC-BY-SA-4.0."
)

# The alignment figure (registry.alignment draws it for a model with an alignment.json).
ALIGNMENT_TITLE = _("Does each attention head look at the word being translated?")
ALIGNMENT_MEASURE = _(
    "The model reads each held-out sentence's human translation (teacher forcing); for every English word that the dictionary "
    "gloss of a Chinese word in the sentence contains, we ask whether the source character a cross-attention "
    "head weighs most lies in that Chinese word."
)
ALIGNMENT_CAVEAT = _(
    "Attention is no guaranteed explanation: a head can look at the right word without the model using it, and "
    "the other way round. The glosses are a rough reference too: a dictionary gloss is not the translator's "
    "choice, so a correct translation in other words counts as a miss, and function words (the, of, is) are not "
    "counted."
)

OUTSIDE_THE_GRAMMAR = _(
    "Words outside its grammar (去, 北京, 游泳) give an output that has nothing to do with the source: the model "
    "never says that it does not know a word."
)
WRONG_TIME = _(
    "It can get a time word wrong and still sound fluent: 晚上 (in the evening) comes out as \"last night\"."
)
LOST_SUBJECT = _("It can drop who the sentence is about: 近来他很忙 (he has been busy lately) loses its 他 (he).")
LITERAL_NAME = _("A place name can come out as what its characters say: 上海 (Shanghai, \"on the sea\") as \"the sea\".")
REPEATS_A_WORD = _(
    "A word outside its grammar (游泳) can also send it into saying one word over and over until the length limit "
    "stops it."
)
TOO_LONG = _("A sequence longer than the 12 symbols it was trained on comes out cut short.")
UNKNOWN_SYMBOL = _("A symbol it never saw (x) gives an empty output.")


@dataclass(frozen=True)
class Probe:
    """A source, the model's greedy output, and (for a failure) what is wrong with it."""

    source: str
    output: str
    note: Promise | None = None


@dataclass(frozen=True)
class Card:
    trained_on: Promise | str
    handles: tuple[Probe, ...] = ()
    fails: tuple[Probe, ...] = ()
    attribution: Promise | None = None
    lexicon: bool = False
    notes: tuple[Promise, ...] = field(default=())


_ZH_EN_HANDLES = (
    Probe("昨天我在花园里画了三条大鱼。", "i drew three big fish in the garden yesterday ."),
    Probe("我的猫追了一只老鼠。", "my cat chased a mouse ."),  # grammar 2: 了 says the past, not "yesterday"
    Probe("他没有吃饭。", "he did not eat rice ."),  # grammar 2: 没有 + verb says "did not"
    Probe("明天你不会帮助七个男孩。", "you will not help seven boys tomorrow ."),
)
_REVERSE_HANDLES = (Probe("3 h 9 5 g", "g 5 9 h 3"), Probe("j f a j 4 8 f j", "j f 8 4 j a f j"))

SHIPPED_CARDS: dict[str, Card] = {
    "zh-en-post": Card(
        TRAINED_ON["zh-en"], _ZH_EN_HANDLES, lexicon=True, fails=(
            Probe("我们明天去北京。", "we did not write boys last day .", OUTSIDE_THE_GRAMMAR),
            Probe("我的狗不会游泳。", "my dog will" + " not" * 25, REPEATS_A_WORD),
        ),
    ),
    "zh-en-pre": Card(
        TRAINED_ON["zh-en"], _ZH_EN_HANDLES, lexicon=True, fails=(
            Probe("我们明天去北京。", "we did not buy shirts last night .", OUTSIDE_THE_GRAMMAR),
            Probe("我的狗不会游泳。", "my dog will not do not buy shirts next year .", OUTSIDE_THE_GRAMMAR),
        ),
    ),
    "zh-en-hsk": Card(
        _(
            "The real graded HSK sentences of its task's training split (3,682 pairs with human translations; the 72 "
            "whose translation is a stand-in left out), 54,116 everyday sentence pairs from Tatoeba and 10,000 "
            "sentences of the zh-en grammar. It is scored on 400 real HSK sentences it never saw (the Tatoeba pairs of "
            "any of them were left out). One Tatoeba sentence in 25 (2,033) was kept out of its training too: its "
            "warnings are measured on them."
        ),
        (
            Probe("你有时间吗？", "do you have time ?"),
            Probe("请关门。", "please close the door ."),
            Probe("我们明天去北京。", "we will go to beijing tomorrow ."),
            Probe("他哥哥在北京工作。", "his brother works in beijing ."),
            Probe("我认为他说得对。", "i think he is right ."),
            Probe("他最终成功了。", "he finally succeeded ."),
        ),
        attribution=HSK_TATOEBA_ATTRIBUTION, fails=(
            Probe("晚上我常常看书。", "i often read books last night .", WRONG_TIME),
            Probe("近来他很忙。", "it's very busy recently .", LOST_SUBJECT),
            Probe("我的朋友住在上海。", "my friend lives in the sea .", LITERAL_NAME),
        ),
    ),
    "reverse": Card(
        TRAINED_ON["reverse"], _REVERSE_HANDLES, fails=(
            Probe("a b c d e f g h i j 0 1 2 3 4 5", "2 0 j i h g f e d c b a", TOO_LONG),
            Probe("a b x", "", UNKNOWN_SYMBOL),
        ),
    ),
}


def card_for(*, name: str, task: str) -> Card:
    """The shipped model's card, or what its task says for any other model."""
    if name in SHIPPED_CARDS:
        return SHIPPED_CARDS[name]
    attribution = HSK_ATTRIBUTION if task == "hsk" else None
    return Card(TRAINED_ON.get(task, task), attribution=attribution, lexicon=task in LEXICON_TASKS)
