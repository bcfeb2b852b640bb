"""The `done` frame of a real decode says how sure the model is and what to beware of."""
from __future__ import annotations

import pytest

from modelcore.folder import SHIPPED_DIR
from tests.fixtures.playground import connected, receive, until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.slow]


@pytest.fixture
def zh_en_post(transactional_db):
    from webapp.registry.services import model_register_folder

    return model_register_folder(folder=SHIPPED_DIR / "zh-en-post", name="zh-en-post", task="zh-en", published=True)


async def test_the_done_frame_warns_of_unknown_words_and_low_confidence(worker, zh_en_post, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "zh-en-post", "source": "他哥哥在北京工作。"})
    done = (await until_final(ws))[-1]
    assert done["type"] == "done" and done["calibrated"] is True
    assert done["unknown_words"] == ["哥哥", "北京", "工作"]
    assert done["warnings"] == ["low_confidence", "unknown_words", "dropped_words"]
    assert done["confidence"] < done["confidence_threshold"]
    # The word check says which source words the output lost: 北京 is a name, always reported.
    assert {"word": "北京", "kind": "name", "covered": False, "looked_for": ["beijing"]} in done["coverage"]
    await ws.send_json_to({"type": "decode", "model": "zh-en-post", "source": "我的猫追了一只老鼠。",
                           "strategy": "beam"})
    done = (await until_final(ws))[-1]
    assert done["text"] == "my cat chased a mouse ." and done["warnings"] == []
    assert done["confidence"] > done["confidence_threshold"]
    assert done["coverage"] and all(word["covered"] for word in done["coverage"])
    await ws.disconnect()


async def test_a_cancelled_decode_has_no_confidence(worker, zh_en_post, student):
    ws = await connected(student)
    await ws.send_json_to({"type": "decode", "model": "zh-en-post", "source": "我的猫追了一只老鼠。", "step_mode": True})
    start = await receive(ws, timeout=30)
    await ws.send_json_to({"type": "cancel", "request_id": start["request_id"]})
    done = (await until_final(ws))[-1]
    assert done["reason"] == "cancelled" and done["confidence"] is None and done["warnings"] == []
    await ws.disconnect()
