from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID, SourceError, Tokenizer

ZH = ["我的猫喜欢吃鱼。", "昨天他们在公园里没有看见那只狗。", "这本书很好 看"]
EN = ["the cat eats fish .", "they did not see that dog in the park yesterday .", "a red book"]


def test_special_ids_are_fixed_for_every_kind() -> None:
    for kind, texts in [("char", ZH), ("word", EN), ("bpe", EN + ZH)]:
        tok = Tokenizer.train(texts, kind)
        ids = [tok.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")]
        assert ids == [PAD_ID, BOS_ID, EOS_ID, UNK_ID] == [0, 1, 2, 3]


def test_char_level_round_trips_chinese_with_its_spaces() -> None:
    tok = Tokenizer.train(ZH, "char")
    for text in ZH:
        assert tok.decode(tok.encode(text)) == text
    assert tok.tokens("很好 看") == ["很", "好", " ", "看"]
    assert UNK_ID not in tok.encode("这本书很好 看")


def test_char_level_unknown_character_becomes_unk_without_crashing() -> None:
    tok = Tokenizer.train(ZH, "char")
    ids = tok.encode("我的龙🐉")
    assert ids[:2] == tok.encode("我的")
    assert ids[2:] == [UNK_ID, UNK_ID]
    assert tok.decode(ids) == "我的<unk><unk>"


def test_word_level_round_trips_and_maps_unknown_words_to_unk() -> None:
    tok = Tokenizer.train(EN, "word")
    for text in EN:
        assert tok.decode(tok.encode(text)) == text
    assert tok.tokens("the  cat\teats") == ["the", "cat", "eats"]
    ids = tok.encode("the zebra eats fish")
    assert ids[1] == UNK_ID and UNK_ID not in ids[:1] + ids[2:]


def test_bpe_round_trips_natural_text_including_words_it_never_saw_whole() -> None:
    tok = Tokenizer.train(EN * 5 + ZH, "bpe", vocab_size=80)
    assert tok.vocab_size <= 80
    for text in [*EN, "the cat sees a dog ."]:
        assert tok.decode(tok.encode(text)) == text
    assert tok.decode(tok.encode("我的猫")) == "我的猫"
    assert tok.encode("the cat ☃")[-1] == UNK_ID


def test_decode_drops_framing_tokens() -> None:
    tok = Tokenizer.train(EN, "word")
    ids = [BOS_ID, *tok.encode("the cat"), EOS_ID, PAD_ID, PAD_ID]
    assert tok.decode(ids) == "the cat"


def test_vocab_size_limits_to_the_most_frequent_symbols() -> None:
    tok = Tokenizer.train(["aaab", "aac"], "char", vocab_size=5)
    assert tok.vocab_size == 5
    assert tok.encode("abc") == [4, UNK_ID, UNK_ID]


@pytest.mark.parametrize(("kind", "texts"), [("char", ZH), ("word", EN), ("bpe", EN + ZH)])
def test_saved_and_serialised_tokenizers_behave_the_same(kind: str, texts: list[str], tmp_path) -> None:
    tok = Tokenizer.train(texts, kind)
    tok.save(tmp_path / "tok.json")
    for copy in (Tokenizer.load(tmp_path / "tok.json"), Tokenizer.from_str(tok.to_str())):
        assert copy.kind == kind
        assert copy.vocab_size == tok.vocab_size
        for text in [*texts, "unseen 龙 text"]:
            assert copy.encode(text) == tok.encode(text)
            assert copy.decode(copy.encode(text)) == tok.decode(tok.encode(text))


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer kind 'morpheme'"):
        Tokenizer.train(EN, "morpheme")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=30))
def test_char_level_round_trips_any_text_made_of_known_characters(text: str) -> None:
    text = unicodedata.normalize("NFC", text)
    tok = Tokenizer.train([text + "x"], "char")
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize("kind", ["char", "word", "bpe"])
def test_a_special_token_typed_as_text_is_text_not_a_control_id(kind: str) -> None:
    tok = Tokenizer.train(EN + ["<eos> <pad> <bos> <unk>"], kind)
    text = "the cat <eos> eats"
    ids = tok.encode(text)
    assert not {PAD_ID, BOS_ID, EOS_ID} & set(ids)  # a typed "<eos>" neither ends the source nor vanishes
    assert tok.decode(ids) == text
    assert Tokenizer.from_str(tok.to_str()).encode(text) == ids  # a saved tokenizer reads it the same way


@pytest.mark.parametrize("kind, texts", [("char", ZH), ("word", EN), ("bpe", EN + ZH)])
def test_joining_the_tokens_of_a_growing_output_reads_as_decoding_its_ids(kind: str, texts: list[str]) -> None:
    tok = Tokenizer.train(texts, kind)
    ids = tok.encode(texts[1])
    for n in range(1, len(ids) + 1):  # the playground shows the text after every step
        assert tok.join([tok.id_to_token(i) for i in ids[:n]]) == tok.decode(ids[:n])
    assert tok.join([tok.id_to_token(i) for i in ids]) == texts[1]


def test_a_source_is_its_ids_then_eos_refused_when_empty_or_too_long_and_cut_when_training() -> None:
    tokenizer = Tokenizer.train(["abcd"], kind="char")
    ids = tokenizer.encode("abc")
    assert tokenizer.source_ids("abc", max_len=4) == [*ids, EOS_ID]
    for text, max_len, code in [("   ", None, "empty_source"), ("", 4, "empty_source"), ("abcd", 4, "source_too_long")]:
        with pytest.raises(SourceError) as caught:
            tokenizer.source_ids(text, max_len)
        assert caught.value.code == code
    assert "5 tokens; the model takes at most 4" in str(caught.value)
    assert tokenizer.source_ids("abcd", 4, truncate=True) == [*ids, EOS_ID]  # training keeps the pair, cut to fit
