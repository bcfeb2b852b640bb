"""The zh→en toy lexicon: every word the generated corpus uses, with its English forms.

The grammar (modelcore/tasks/zh_en.py) builds one sentence from these parts:

    Chinese:  [time] subject [negation/aspect] [place] verb(+了) object 。
    English:  subject [auxiliary (+ not)] verb object [place] [time] .

Time and place come before the verb in Chinese and after the object in English, so
the alignment a model must learn is not monotonic. Tense comes from the time phrase
(昨天 → past, 明天 → will, 现在 → is ...ing) or, without one, from the verb group alone
(吃了 → ate, 没有吃 → did not eat, 正在吃 → is eating, otherwise present with third-person -s);
an English time word appears only when the Chinese has a time phrase. Negation is 不 (present),
没有 (past, progressive) or 不会 (future); a verb of state (喜欢) takes no 了 or 没有, so its past
needs a time phrase (去年我不喜欢猫 → i did not like cats last year). Noun phrases take a
measure word chosen by the noun (一只猫 a cat, 一条鱼 a fish, 一本书 a book, 两杯茶 two
cups of tea), and English plurals and a/an follow the number. Every Chinese sentence
has exactly one English translation, so a model can learn it perfectly.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Noun:
    """A noun, its measure word, its English forms and what it can do in a sentence."""

    zh: str
    en: str
    plural: str  # "" for a mass noun: counted with a container measure word ("two cups of tea")
    measure: str  # 只, 条, 本 ...; for mass nouns the container (杯 cup, 碗 bowl)
    kinds: frozenset[str]  # which verbs take it: person, animal, food, drink, text, thing
    adjectives: frozenset[str]  # adjective classes that fit it


@dataclass(frozen=True)
class Adjective:
    zh: str  # with 的 when Chinese needs it before a noun (红色的), bare when it binds (大猫)
    en: str
    kind: str


@dataclass(frozen=True)
class Verb:
    zh: str
    base: str
    third: str  # he/she/it, present
    past: str
    ing: str  # "" for stative verbs: no progressive, and no place phrase ("like cats in the park")
    subjects: frozenset[str]  # noun kinds that can do it
    objects: frozenset[str]  # noun kinds it takes; "pronoun" allows me/him/them...
    perfective: bool = True  # takes 了 and 没有 for the past; a state (喜欢) does not: 去年我喜欢猫, 我不喜欢猫


@dataclass(frozen=True)
class Pronoun:
    zh: str
    subject: str
    object: str
    person: int  # 1, 2 or 3: picks am/is/are and -s
    plural: bool
    possessive: str  # English word for zh + 的


@dataclass(frozen=True)
class TimePhrase:
    zh: str
    en: str
    tense: str  # "present" | "past" | "future" | "progressive"


def _f(*items: str) -> frozenset[str]:
    return frozenset(items)


_ANIMAL_ADJ = _f("size", "colour", "cute")
_THING_ADJ = _f("size", "colour", "age")
NOUNS: tuple[Noun, ...] = (
    Noun("猫", "cat", "cats", "只", _f("animal"), _ANIMAL_ADJ),
    Noun("狗", "dog", "dogs", "只", _f("animal"), _ANIMAL_ADJ),
    Noun("鸟", "bird", "birds", "只", _f("animal"), _ANIMAL_ADJ),
    Noun("兔子", "rabbit", "rabbits", "只", _f("animal"), _ANIMAL_ADJ),
    Noun("老鼠", "mouse", "mice", "只", _f("animal"), _ANIMAL_ADJ),
    Noun("羊", "sheep", "sheep", "只", _f("animal"), _f("size", "cute")),
    Noun("鱼", "fish", "fish", "条", _f("animal", "food"), _f("size", "colour", "fresh")),
    Noun("蛇", "snake", "snakes", "条", _f("animal"), _f("size", "colour")),
    Noun("马", "horse", "horses", "匹", _f("animal"), _ANIMAL_ADJ),
    Noun("牛", "cow", "cows", "头", _f("animal"), _f("size", "colour")),
    Noun("学生", "student", "students", "个", _f("person"), _f("person")),
    Noun("孩子", "child", "children", "个", _f("person"), _f("person", "cute")),
    Noun("女孩", "girl", "girls", "个", _f("person"), _f("person", "cute")),
    Noun("男孩", "boy", "boys", "个", _f("person"), _f("person", "cute")),
    Noun("老师", "teacher", "teachers", "位", _f("person"), _f("person")),
    Noun("医生", "doctor", "doctors", "位", _f("person"), _f("person")),
    Noun("苹果", "apple", "apples", "个", _f("food"), _f("size", "colour", "fresh", "sweet")),
    Noun("鸡蛋", "egg", "eggs", "个", _f("food"), _f("size", "fresh")),
    Noun("香蕉", "banana", "bananas", "根", _f("food"), _f("size", "fresh", "sweet")),
    Noun("蛋糕", "cake", "cakes", "块", _f("food", "dish"), _f("size", "fresh", "sweet")),
    Noun("米饭", "rice", "", "碗", _f("food", "dish"), _f("hot")),
    Noun("面条", "noodles", "", "碗", _f("food", "dish"), _f("hot")),
    Noun("茶", "tea", "", "杯", _f("drink"), _f("hot")),
    Noun("咖啡", "coffee", "", "杯", _f("drink"), _f("hot")),
    Noun("牛奶", "milk", "", "瓶", _f("drink"), _f("hot")),
    Noun("水", "water", "", "瓶", _f("drink"), _f("hot")),
    Noun("书", "book", "books", "本", _f("text", "thing"), _THING_ADJ),
    Noun("信", "letter", "letters", "封", _f("text", "thing"), _f("age")),
    Noun("报纸", "newspaper", "newspapers", "份", _f("text", "thing"), _f("age")),
    Noun("车", "car", "cars", "辆", _f("thing", "vehicle"), _THING_ADJ),
    Noun("自行车", "bicycle", "bicycles", "辆", _f("thing", "vehicle"), _THING_ADJ),
    Noun("船", "boat", "boats", "条", _f("thing", "vehicle"), _THING_ADJ),
    Noun("衬衫", "shirt", "shirts", "件", _f("thing", "clothes"), _THING_ADJ),
    Noun("裙子", "skirt", "skirts", "条", _f("thing", "clothes"), _THING_ADJ),
    Noun("帽子", "hat", "hats", "顶", _f("thing", "clothes"), _THING_ADJ),
    Noun("伞", "umbrella", "umbrellas", "把", _f("thing"), _THING_ADJ),
    Noun("椅子", "chair", "chairs", "把", _f("thing", "furniture"), _THING_ADJ),
    Noun("桌子", "table", "tables", "张", _f("thing", "furniture"), _THING_ADJ),
    Noun("花", "flower", "flowers", "朵", _f("thing"), _f("size", "colour")),
    Noun("房子", "house", "houses", "座", _f("thing"), _THING_ADJ),
)

# Containers read "cup of", "bowl of", "bottle of" in English.
CONTAINERS: dict[str, tuple[str, str]] = {
    "杯": ("cup", "cups"),
    "碗": ("bowl", "bowls"),
    "瓶": ("bottle", "bottles"),
}

ADJECTIVES: tuple[Adjective, ...] = (
    Adjective("大", "big", "size"),
    Adjective("小", "small", "size"),
    Adjective("红色的", "red", "colour"),
    Adjective("白色的", "white", "colour"),
    Adjective("黑色的", "black", "colour"),
    Adjective("黄色的", "yellow", "colour"),
    Adjective("蓝色的", "blue", "colour"),
    Adjective("绿色的", "green", "colour"),
    Adjective("新", "new", "age"),
    Adjective("旧", "old", "age"),
    Adjective("可爱的", "lovely", "cute"),
    Adjective("聪明的", "clever", "person"),
    Adjective("年轻的", "young", "person"),
    Adjective("友好的", "friendly", "person"),
    Adjective("新鲜的", "fresh", "fresh"),
    Adjective("甜的", "sweet", "sweet"),
    Adjective("热", "hot", "hot"),
)

_ANIMATE = _f("person", "animal")
_GOODS = _f("food", "drink", "thing", "animal")
VERBS: tuple[Verb, ...] = (
    Verb("吃", "eat", "eats", "ate", "eating", _ANIMATE, _f("food")),
    Verb("喝", "drink", "drinks", "drank", "drinking", _ANIMATE, _f("drink")),
    Verb(
        "喜欢", "like", "likes", "liked", "", _ANIMATE, _f("person", "animal", "food", "drink", "thing"), perfective=False
    ),
    Verb("看见", "see", "sees", "saw", "", _ANIMATE, _f("person", "animal", "thing", "pronoun")),
    Verb("买", "buy", "buys", "bought", "buying", _f("person"), _GOODS),
    Verb("卖", "sell", "sells", "sold", "selling", _f("person"), _GOODS),
    Verb("读", "read", "reads", "read", "reading", _f("person"), _f("text")),
    Verb("写", "write", "writes", "wrote", "writing", _f("person"), _f("text")),
    Verb("画", "draw", "draws", "drew", "drawing", _f("person"), _f("animal", "person", "vehicle", "thing")),
    Verb(
        "洗",
        "wash",
        "washes",
        "washed",
        "washing",
        _f("person"),
        _f("vehicle", "clothes", "animal", "furniture"),
    ),
    Verb("做", "make", "makes", "made", "making", _f("person"), _f("dish", "clothes", "furniture")),
    Verb(
        "找", "look for", "looks for", "looked for", "looking for", _ANIMATE, _GOODS | _f("person", "pronoun")
    ),
    Verb("抓", "catch", "catches", "caught", "catching", _ANIMATE, _f("animal")),
    Verb("追", "chase", "chases", "chased", "chasing", _ANIMATE, _f("animal", "person", "pronoun")),
    Verb("帮助", "help", "helps", "helped", "helping", _f("person"), _f("person", "pronoun")),
    Verb("等", "wait for", "waits for", "waited for", "waiting for", _ANIMATE, _f("person", "pronoun")),
)

PRONOUNS: tuple[Pronoun, ...] = (
    Pronoun("我", "i", "me", 1, False, "my"),
    Pronoun("你", "you", "you", 2, False, "your"),
    Pronoun("他", "he", "him", 3, False, "his"),
    Pronoun("她", "she", "her", 3, False, "her"),
    Pronoun("我们", "we", "us", 1, True, "our"),
    Pronoun("你们", "you", "you", 2, True, "your"),
    Pronoun("他们", "they", "them", 3, True, "their"),
)

NUMBERS: tuple[tuple[str, str], ...] = (
    ("一", "a"),  # becomes "an" before a vowel
    ("两", "two"),  # 两, not 二, before a measure word
    ("三", "three"),
    ("四", "four"),
    ("五", "five"),
    ("六", "six"),
    ("七", "seven"),
    ("八", "eight"),
    ("九", "nine"),
    ("十", "ten"),
)

DEMONSTRATIVES: tuple[tuple[str, str, str, str], ...] = (
    # zh singular, en singular, zh plural, en plural
    ("这", "this", "这些", "these"),
    ("那", "that", "那些", "those"),
)

TIMES: tuple[TimePhrase, ...] = (
    TimePhrase("昨天", "yesterday", "past"),
    TimePhrase("昨天晚上", "last night", "past"),
    TimePhrase("上个星期", "last week", "past"),
    TimePhrase("去年", "last year", "past"),
    TimePhrase("今天", "today", "present"),
    TimePhrase("每天", "every day", "present"),
    TimePhrase("每个星期", "every week", "present"),
    TimePhrase("明天", "tomorrow", "future"),
    TimePhrase("明天早上", "tomorrow morning", "future"),
    TimePhrase("下个星期", "next week", "future"),
    TimePhrase("明年", "next year", "future"),
    TimePhrase("现在", "now", "progressive"),
)

PLACES: tuple[tuple[str, str], ...] = (
    ("在公园里", "in the park"),
    ("在学校", "at school"),
    ("在家", "at home"),
    ("在河边", "by the river"),
    ("在商店里", "in the shop"),
    ("在厨房里", "in the kitchen"),
    ("在图书馆", "in the library"),
    ("在花园里", "in the garden"),
    ("在街上", "on the street"),
    ("在房间里", "in the room"),
)
