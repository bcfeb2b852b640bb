"""`view`: a client that switches layer or head gets the request's attention in the new view, running or ended."""
from __future__ import annotations

import pytest

from tests.fixtures.attention import step_attention
from tests.fixtures.playground import SOURCE, connected, receive, until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

STEPPED = {"type": "decode", "model": "tiny", "source": SOURCE, "attention": True, "step_mode": True,
           "min_len": 20, "max_len": 20}


async def test_a_running_request_answers_with_every_step_then_follows_the_new_view(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({**STEPPED, "view": {"layer": 1, "head": "mean"}})
    start = await receive(ws)
    assert start["attention_view"] == {"layer": 1, "encoder_layer": 1, "head": "mean"}
    for _ in range(2):
        await ws.send_json_to({"type": "step"})
        assert (await receive(ws))["attention"]["layer"] == 1
    await ws.send_json_to({"type": "view", "request_id": start["request_id"], "layer": 0, "encoder_layer": 0,
                           "head": 1})
    await ws.send_json_to({"type": "step"})
    answer, token = await receive(ws), await receive(ws)
    assert answer["type"] == "attention" and answer["view"] == {"layer": 0, "encoder_layer": 0, "head": 1}
    assert len(answer["steps"]) == 2 and answer["encoder_attention"]["layer"] == 0
    assert [len(step_attention(a)[0]) for a in answer["steps"]] == [1, 2]
    assert (token["type"], token["seq"], token["attention"]["layer"], token["attention"]["head"]) == ("token", 2, 0, 1)
    await ws.send_json_to({"type": "cancel"})
    assert (await until_final(ws))[-1]["reason"] == "cancelled"
    await ws.disconnect()


async def test_an_ended_request_answers_from_the_copy_its_worker_kept(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "attention": True, "min_len": 5,
                           "max_len": 5})
    frames = await until_final(ws)
    await ws.send_json_to({"type": "view", "request_id": frames[0]["request_id"], "layer": 0, "head": 0})
    answer = await receive(ws)
    assert answer["type"] == "attention" and answer["view"] == {"layer": 0, "encoder_layer": 1, "head": 0}
    assert len(answer["steps"]) == 5 and answer["encoder_attention"]["size"] == len(frames[0]["src_ids"])
    await ws.disconnect()


async def test_a_bad_or_unknown_view_is_answered_and_the_socket_stays_open(worker, tiny, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "view", "request_id": "abc", "head": "all"})
    assert (await receive(ws))["code"] == "bad_params"
    await ws.send_json_to({"type": "view", "request_id": "abc", "layer": 0, "colour": "red"})
    assert (await receive(ws))["code"] == "bad_params"
    await ws.send_json_to({"type": "view", "layer": 0})
    assert (await receive(ws))["code"] == "bad_params"
    await ws.send_json_to({"type": "view", "request_id": "abc", "layer": 0})
    assert (await receive(ws))["code"] == "not_running"
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "view": {"layer": -1}})
    assert (await receive(ws))["code"] == "bad_params"
    await ws.send_json_to({"type": "decode", "model": "tiny", "source": SOURCE, "max_len": 2, "min_len": 2})
    assert (await until_final(ws))[-1]["type"] == "done"
    await ws.disconnect()
