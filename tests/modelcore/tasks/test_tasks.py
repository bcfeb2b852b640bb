from __future__ import annotations

import pytest

from modelcore.tasks import TASK_NAMES, CorpusError, Task, get_task, load_tsv_corpus
from modelcore.tasks.zh_en import generate_sentences
from modelcore.tokenization import UNK_ID

SMALL = {"n_train": 400, "n_valid": 50, "n_test": 50}
ALGORITHMIC = ["copy", "reverse", "sort", "add"]


def test_task_names_are_the_documented_six() -> None:
    assert TASK_NAMES == ("copy", "reverse", "sort", "add", "zh-en", "hsk")


def test_unknown_task_names_the_choices() -> None:
    with pytest.raises(ValueError) as err:
        get_task("translate")
    assert str(err.value) == "unknown task 'translate' (choose from: copy, reverse, sort, add, zh-en, hsk)"


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


# zh-en ---------------------------------------------------------------------------------------------

MEASURES = {
    "猫": "只",
    "鸟": "只",
    "鱼": "条",
    "蛇": "条",
    "书": "本",
    "学生": "个",
    "马": "匹",
    "车": "辆",
    "信": "封",
}
PLURALS = {"猫": "cats", "鱼": "fish", "书": "books", "孩子": "children", "老鼠": "mice", "学生": "students"}
NUMBERS = {"两": "two", "三": "three", "五": "five", "十": "ten"}


@pytest.fixture(scope="module")
def zh_en() -> Task:
    return get_task("zh-en")


def test_zh_en_has_twenty_thousand_distinct_training_pairs_and_disjoint_splits(zh_en: Task) -> None:
    assert len(zh_en.train) >= 20_000 and len(zh_en.valid) == len(zh_en.test) == 1_000
    sources = [s for s, _ in zh_en.train + zh_en.valid + zh_en.test]
    assert len(set(sources)) == len(sources)
    assert all(len(s) <= 20 and " " not in s and s.endswith("。") for s in sources)


def test_zh_en_gives_each_source_one_translation() -> None:
    translations: dict[str, set[str]] = {}
    for sentence in generate_sentences(3_000, seed=5) + generate_sentences(3_000, seed=6):
        translations.setdefault(sentence.zh, set()).add(sentence.en)
    assert all(len(targets) == 1 for targets in translations.values())


def test_zh_en_splits_depend_on_the_seed_only() -> None:
    small = {"n_train": 300, "n_valid": 30, "n_test": 30}
    a, b, c = (
        get_task("zh-en", seed=3, **small),
        get_task("zh-en", seed=3, **small),
        get_task("zh-en", seed=4, **small),
    )
    assert (a.train, a.valid, a.test) == (b.train, b.valid, b.test)
    assert a.train != c.train and a.test != c.test


def test_time_moves_from_the_front_of_the_chinese_to_the_end_of_the_english(zh_en: Task) -> None:
    times = {"昨天": "yesterday", "今天": "today", "明天": "tomorrow", "每天": "every day", "现在": "now"}
    checked = 0
    for zh, en in zh_en.train:
        for time_zh, time_en in times.items():
            if zh.startswith(time_zh) and not zh.startswith(("昨天晚上", "明天早上")):
                assert en.endswith(f" {time_en} ."), (zh, en)
                assert not en.startswith(time_en)
                checked += 1
    assert checked > 2_000


def test_place_comes_before_the_verb_in_chinese_and_after_the_object_in_english(zh_en: Task) -> None:
    pairs = [(zh, en) for zh, en in zh_en.train if "在公园里" in zh]
    assert len(pairs) > 100
    for zh, en in pairs:
        assert zh.index("在公园里") < len(zh) - 3  # a verb and an object follow it
        after = en.split("in the park", 1)[1]
        assert after in {
            " .",
            " yesterday .",
            " last night .",
            " last week .",
            " last year .",
            " today .",
            " every day .",
            " every week .",
            " tomorrow .",
            " tomorrow morning .",
            " next week .",
            " next year .",
            " now .",
        }, (zh, en)


def test_measure_words_and_numbers_agree_with_the_noun(zh_en: Task) -> None:
    checked = 0
    for sentence in generate_sentences(5_000, seed=1):
        for phrase in sentence.phrases:
            if phrase.role not in ("subject", "object") or phrase.zh[0] not in "一两三四五六七八九十":
                continue
            for noun, measure in MEASURES.items():
                if phrase.zh.endswith(noun) and not phrase.zh.endswith("自行车"):
                    assert phrase.zh[1] == measure, phrase
                    checked += 1
            if phrase.zh[0] == "一":
                assert phrase.en.split()[0] in ("a", "an"), phrase
            noun = next((n for n in PLURALS if phrase.zh.endswith(n)), None)
            if phrase.zh[0] in NUMBERS and noun:
                assert phrase.en.startswith(NUMBERS[phrase.zh[0]]) and phrase.en.endswith(PLURALS[noun]), (
                    phrase
                )
    assert checked > 300
    assert any("一个苹果" in zh and "an apple" in e for zh, e in zh_en.train)
    assert any("两只老鼠" in zh and "two mice" in e for zh, e in zh_en.train)


def test_negation_and_tense_are_translated(zh_en: Task) -> None:
    starts = {
        "他不": "he does not ",
        "我不": "i do not ",
        "他们不": "they do not ",
        "昨天他没有": "he did not ",
        "明天他不会": "he will not ",
        "明天我们会": "we will ",
        "现在他没有": "he is not ",
        "现在我正": "i am ",
    }
    seen = dict.fromkeys(starts, 0)
    for zh, en in zh_en.train:
        for zh_start, en_start in starts.items():
            if zh.startswith(zh_start) and not zh.startswith(zh_start + "的"):
                assert en.startswith(en_start), (zh, en)
                seen[zh_start] += 1
        if zh.startswith("昨天他") and "没有" not in zh and "喜欢" not in zh:  # a state takes no 了
            assert "了" in zh and " not " not in en
        if zh.startswith("每天他") and not zh.startswith(("每天他们", "每天他的")) and "不" not in zh:
            assert en.split()[1].endswith("s"), (zh, en)  # he eats, he washes
    assert min(seen.values()) > 0, seen


def test_sentence_alignment_lists_the_reordered_phrases() -> None:
    sentence = next(s for s in generate_sentences(500, seed=2) if s.phrase("time") and s.phrase("place"))
    assert [p.role for p in sentence.phrases][:2] == ["time", "subject"]
    english = [p.role for p in sentence.english_phrases()]
    assert english[0] == "subject" and english[-3:] == ["place", "time", "end"]
    assert sentence.en == " ".join(p.en for p in sentence.english_phrases())
    assert sentence.zh == "".join(p.zh for p in sentence.phrases)


def test_zh_en_tokenizers_are_chinese_characters_and_english_words(zh_en: Task) -> None:
    src_tok, tgt_tok = zh_en.build_tokenizers()
    assert (src_tok.kind, tgt_tok.kind) == ("char", "word")
    assert src_tok.vocab_size < 300 and tgt_tok.vocab_size < 300
    for zh, en in zh_en.test:
        assert UNK_ID not in src_tok.encode(zh) and UNK_ID not in tgt_tok.encode(en)
        assert src_tok.decode(src_tok.encode(zh)) == zh and tgt_tok.decode(tgt_tok.encode(en)) == en


# user corpora --------------------------------------------------------------------------------------

GOOD_TSV = "".join(f"我有{n}只猫。\tI have {n} cats.\n" for n in range(40))


def test_a_good_tsv_file_loads_and_splits_ninety_five_five(tmp_path) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_text(GOOD_TSV, encoding="utf-8")
    task = load_tsv_corpus(path, name="cats")
    assert task.name == "cats"
    assert (len(task.train), len(task.valid), len(task.test)) == (36, 2, 2)
    assert set(task.train + task.valid + task.test) == {
        (f"我有{n}只猫。", f"I have {n} cats.") for n in range(40)
    }
    assert (task.src_kind, task.tgt_kind) == ("char", "bpe")
    again, other = load_tsv_corpus(str(path), name="cats"), load_tsv_corpus(path, name="cats", seed=1)
    assert again.test == task.test and other.test != task.test
    src_tok, tgt_tok = task.build_tokenizers()
    assert tgt_tok.decode(tgt_tok.encode("I have 7 cats.")) == "I have 7 cats."


def test_corpus_accepts_text_bytes_crlf_a_bom_and_blank_lines() -> None:
    text = "\ufeff" + GOOD_TSV.replace("\n", "\r\n") + "\r\n\r\n"
    assert load_tsv_corpus(text).train == load_tsv_corpus(GOOD_TSV).train
    assert load_tsv_corpus(text.encode("utf-8")).train == load_tsv_corpus(GOOD_TSV).train


def test_every_malformed_line_is_named() -> None:
    lines = [
        b"good\tline",
        b"only one column",
        b"three\tcolumns\there",
        b"empty target\t",
        b"\tempty source",
        "长".encode() * 1001 + b"\tx",
        b"caf\xe9\tbad latin-1 byte",
        b"bin\x00ary\tdata",
        b"bell\x07\tcontrol character",
        b"another\tgood line",
    ]
    with pytest.raises(CorpusError) as err:
        load_tsv_corpus(b"\n".join(lines))
    assert [line for line, _ in err.value.errors] == [2, 3, 4, 5, 6, 7, 8, 9]
    message = str(err.value)
    for expected in [
        "line 2: expected 2 tab-separated columns, got 1",
        "line 3: expected 2 tab-separated columns, got 3",
        "line 4: empty target",
        "line 5: empty source",
        "line 6: 1003 characters, more than the limit of 1000",
        "line 7: not valid UTF-8 (byte 0xe9 at byte 4)",
        "line 8: contains a NUL byte",
        "line 9: contains control character U+0007",
    ]:
        assert expected in message


def test_line_limit_is_an_option() -> None:
    with pytest.raises(CorpusError, match="line 1: 12 characters, more than the limit of 10"):
        load_tsv_corpus("abcde\tfghijk\n", max_line_chars=10)


def test_empty_and_binary_files_are_refused() -> None:
    for empty in (b"", "", b"\n\n  \n"):
        with pytest.raises(CorpusError, match="the corpus is empty"):
            load_tsv_corpus(empty)
    with pytest.raises(CorpusError) as err:
        load_tsv_corpus(bytes(range(256)) * 4)
    assert err.value.errors and all("NUL" in reason or "UTF-8" in reason for _, reason in err.value.errors)


def test_a_long_list_of_errors_still_names_every_line() -> None:
    with pytest.raises(CorpusError) as err:
        load_tsv_corpus("no tab here\n" * 50)
    assert [line for line, _ in err.value.errors] == list(range(1, 51))
    assert "line 20: expected 2" in str(err.value) and ", 50" in str(err.value)


def test_a_source_with_two_translations_stays_in_one_split() -> None:
    text = GOOD_TSV + "".join(f"我有{n}只猫。\tThere are {n} cats with me.\n" for n in range(40))
    task = load_tsv_corpus(text)
    splits = [{s for s, _ in split} for split in (task.train, task.valid, task.test)]
    assert not splits[0] & splits[1] and not splits[0] & splits[2] and not splits[1] & splits[2]
    assert len(task.train) == 72


def test_too_small_a_corpus_is_refused() -> None:
    with pytest.raises(CorpusError, match="at least 3 distinct source sentences, found 2"):
        load_tsv_corpus("a\tb\nc\td\na\tb\n")
