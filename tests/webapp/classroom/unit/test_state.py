"""A live session's typed state (SessionState) against the JSON object LiveSession.state stores: read back, written,
defaults, changed. Nothing runs but SessionState and LiveSession of webapp/classroom/models.py, on unsaved objects: no
database, Redis, worker or web server."""
from __future__ import annotations

import pytest

from webapp.classroom.models import DEFAULT_VIEWS, LiveSession, SessionState, default_state

# What a session created before SessionState stored, then a run and a views change merged into it.
STORED = {"source": "a b c", "params": {"strategy": "greedy", "step_mode": True, "pace_ms": 250},
          "views": ["cross", "kv"], "layer": 1, "head": 2, "request_id": "r1", "tokens": [], "running": True,
          "driver": 7, "encoder_layer": None, "lesson": {"page": "encoder", "part": "ffn"}, "demo": None,
          "revealed": 12, "experiment_shown": None}


def test_the_stored_object_reads_back_field_by_field_and_writes_the_same_keys_and_values():
    state = SessionState.from_json(STORED)
    assert (state.source, state.request_id, state.running, state.driver, state.views, state.lesson) == \
        ("a b c", "r1", True, 7, ["cross", "kv"], {"page": "encoder", "part": "ffn"})
    assert state.to_json() == STORED


def test_a_fresh_session_stores_the_old_defaults_and_a_missing_key_reads_as_its_default():
    fresh = default_state()
    old = {"source": "", "params": {"strategy": "greedy"}, "views": list(DEFAULT_VIEWS), "layer": None,
           "head": "mean", "request_id": None, "tokens": []}
    assert {k: fresh[k] for k in old} == old
    assert not fresh["running"] and fresh["driver"] is None and fresh["encoder_layer"] is None
    assert fresh["lesson"] is None and fresh["demo"] is None  # no lesson part shown, no demonstration run
    assert fresh["revealed"] is None and fresh["experiment_shown"] is None  # no reveal on the screens
    state = SessionState.from_json(old)
    assert not state.running and state.running_request is None and not state.stepping
    assert LiveSession(state=old).run_state == state


def test_running_request_and_stepping_need_a_running_run():
    state = SessionState.from_json(STORED)
    assert state.running_request == "r1" and state.stepping
    stopped = state.changed(running=False)
    assert stopped.running_request is None and not stopped.stepping and stopped.request_id == "r1"
    assert not state.changed(params={"strategy": "greedy"}).stepping


def test_a_field_it_does_not_have_is_refused_and_the_original_stays_as_it_was():
    state = SessionState.from_json(STORED)
    with pytest.raises(TypeError):
        state.changed(colour="red")
    assert state.to_json() == STORED


def test_the_attention_view_names_only_the_layers_chosen_and_always_the_head():
    assert SessionState().attention_view() == {"head": "mean"}
    assert SessionState(layer=0, encoder_layer=2, head=1).attention_view() == {"layer": 0, "encoder_layer": 2, "head": 1}
