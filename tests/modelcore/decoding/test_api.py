"""The public decoding API: clear errors on bad requests, events that survive JSON, text in and out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelcore.checkpoint import save_model
from modelcore.decoding import (
    BatchDecoder,
    BeamsEvent,
    DecodeError,
    DecodeParams,
    DoneEvent,
    StartEvent,
    TokenEvent,
    decode,
    decode_stream,
)
from modelcore.tokenization import Tokenizer
from tests.fixtures.decoding import SRC, tiny_model


@pytest.mark.parametrize(
    "fields,message",
    [
        (dict(strategy="beam", beam_size=0), "beam_size"),
        (dict(strategy="sample", top_p=1.5), "top_p"),
        (dict(strategy="sample", temperature=0.0), "temperature"),
        (dict(strategy="banana"), "strategy"),
        (dict(max_len=0), "max_len"),
        (dict(strategy="beam", beam_size=2, n_best=3), "n_best"),
        (dict(top_k=-1), "top_k"),
        (dict(min_len=5, max_len=3), "min_len"),
    ],
)
def test_bad_parameters_raise_a_clear_error(fields: dict, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        DecodeParams(**fields)


def refusal(call) -> DecodeError:  # type: ignore[no-untyped-def]
    with pytest.raises(DecodeError) as caught:
        call()
    return caught.value


def test_bad_requests_raise_a_clear_error_with_a_code() -> None:
    model = tiny_model()
    for source, code, words in [([], "empty_source", "empty"), ([5, 999], "bad_source", "source ids"),
                                ("hello", "bad_source", "source tokenizer"),
                                ([5] * 513, "source_too_long", "513 tokens; the model takes at most 512")]:
        error = refusal(lambda source=source: decode_stream(model, source))
        assert error.code == code and words in str(error)
    assert refusal(lambda: DecodeParams(beam_size=0)).code == "bad_params"
    with pytest.raises(DecodeError, match="forced_prefix"):
        decode_stream(model, SRC, DecodeParams(forced_prefix=(1,)))  # <bos> is not an output
    with pytest.raises(DecodeError, match="unknown decoding parameters: bogus"):
        DecodeParams.from_dict({"strategy": "greedy", "bogus": 1})
    decoder = BatchDecoder(model)
    decoder.add("x", SRC)
    assert refusal(lambda: decoder.add("x", SRC)).code == "bad_request"
    with pytest.raises(DecodeError, match="no active request"):
        decoder.cancel("nope")


def test_an_unknown_model_raises_a_clear_error(tmp_path: Path) -> None:
    for name in ("no-such-shipped-model", tmp_path / "empty"):
        with pytest.raises(DecodeError, match="unknown model"):
            decode_stream(name, SRC)
    with pytest.raises(DecodeError, match="unknown model"):
        decode(object(), [SRC])  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
def test_every_event_turns_into_json_and_back_without_loss(strategy: str) -> None:
    params = DecodeParams(strategy=strategy, seed=1, max_len=4, capture_attention=True, beam_size=2, n_best=1)
    events = list(decode_stream(tiny_model(), SRC, params))
    assert isinstance(events[0], StartEvent) and isinstance(events[-1], DoneEvent)
    step_type = BeamsEvent if strategy == "beam" else TokenEvent
    assert all(isinstance(e, step_type) for e in events[1:-1])
    assert [e.seq for e in events[1:-1]] == list(range(len(events) - 2))  # type: ignore[attr-defined]
    for event in events:
        line = event.to_json()
        assert "\n" not in line and json.loads(line) == event.to_dict()
    token = events[1].to_dict()
    assert token["type"] == ("beams" if strategy == "beam" else "token") and token["seq"] == 0
    if strategy != "beam":
        assert {"id", "token", "prob", "alternatives", "cache", "attention"} <= set(token)
        assert len(token["attention"]["self"][0][0]) == 1 and len(token["attention"]["cross"][0][0]) == len(SRC)


def test_text_in_text_out_through_a_saved_model_folder(tmp_path: Path) -> None:
    src_tok = Tokenizer.train(["the cat sat", "a dog ran"], kind="word")
    tgt_tok = Tokenizer.train(["le chat", "un chien", "il court"], kind="word")
    model = tiny_model()
    model = type(model)(model.config.replace(src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size))
    folder = save_model(tmp_path / "m", model.eval(), src_tok, tgt_tok)
    events = list(decode_stream(str(folder), "the dog sat", DecodeParams(max_len=5, min_len=5)))
    start, tokens, final = events[0], events[1:-1], events[-1]
    assert isinstance(start, StartEvent) and start.src_tokens == ["the", "dog", "sat", "<eos>"]  # as in training
    assert isinstance(final, DoneEvent)
    assert all(isinstance(e, TokenEvent) and e.token == tgt_tok.id_to_token(e.id) for e in tokens)
    assert final.text == tgt_tok.decode(final.ids) and len(final.text.split()) == 5


@pytest.mark.parametrize(
    ("params", "src_len", "max_tokens", "expected"),
    [
        (DecodeParams(), 5, 128, (20, 0)),  # twice the source plus 10
        (DecodeParams(), 40, 128, (63, 0)),  # ... within the model's 64 positions (one holds <bos>)
        (DecodeParams(max_len=30, min_len=4), 5, 12, (12, 4)),  # the server's cap
        (DecodeParams(min_len=9), 5, 5, (5, 5)),  # min_len cut to fit under it
        (DecodeParams(max_len=500), 5, 1000, (63, 0)),  # cut, not refused
    ],
)
def test_a_server_caps_the_step_limit_instead_of_refusing(params, src_len, max_tokens, expected) -> None:
    capped = params.capped(src_len, 64, max_tokens)
    assert (capped.max_len, capped.min_len) == expected
    assert capped.resolved_max_len(src_len, 64) == expected[0]  # and the decoder takes it as it is


def test_an_explicit_max_len_past_the_models_positions_is_refused() -> None:
    assert DecodeParams().resolved_max_len(5, 64) == 20
    with pytest.raises(DecodeError, match="exceeds what the model's positions allow"):
        DecodeParams(max_len=64).resolved_max_len(5, 64)
