"""Every sentence a shipped model's card quotes, decoded again: the card says what the model really answers."""
from __future__ import annotations

import pytest

from modelcore.checkpoint import load_model, shipped_models
from modelcore.decoding import DecodeParams, DoneEvent, decode_stream
from webapp.registry.cards import SHIPPED_CARDS


@pytest.mark.parametrize("name", sorted(SHIPPED_CARDS))
def test_each_quoted_translation_is_the_model_s_own(name):
    loaded = load_model(name)
    card = SHIPPED_CARDS[name]
    assert card.handles, name
    for probe in card.handles + card.fails:
        done = next(e for e in decode_stream(loaded, probe.source, DecodeParams()) if isinstance(e, DoneEvent))
        assert done.text == probe.output, (name, probe.source)
    for probe in card.handles:
        assert probe.note is None
    for probe in card.fails:
        assert probe.note


def test_every_shipped_model_has_a_card():
    assert set(SHIPPED_CARDS) == set(shipped_models())
