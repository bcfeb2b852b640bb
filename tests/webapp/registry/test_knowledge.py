"""Before a decode: the words of a source the model does not know, and its card (what it was trained on)."""
from __future__ import annotations

import pytest

from webapp.registry.models import TrainedModel

pytestmark = pytest.mark.django_db


def _knows(client, model: str, source: str):
    return client.get(f"/models/{model}/knows/", {"source": source})


def test_an_unknown_word_is_marked_and_the_model_s_data_named(client_as, student, shipped):
    response = _knows(client_as(student), "zh-en-post", "我们明天去北京。")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<mark data-testid="unknown-word"' in html and ">去北京</mark>" in html
    assert "It will still translate the sentence" in html
    assert "40 nouns, 16 verbs" in html  # what it was trained on
    assert "昨天我在花园里画了三条大鱼。" in html  # a sentence it handles well
    assert 'href="/models/zh-en-post/"' in html


def test_a_sentence_inside_the_grammar_has_nothing_marked(client_as, student, shipped):
    html = _knows(client_as(student), "zh-en-pre", "昨天我在花园里画了三条大鱼。").content.decode()
    assert "<mark" not in html and "Every word of this sentence is one the model was trained on" in html


def test_a_word_tokenizer_model_marks_a_symbol_it_never_saw(client_as, student, shipped):
    html = _knows(client_as(student), "reverse", "a b x 3").content.decode()
    assert ">x</mark>" in html and "the digits 0 to 9 and the letters a to j" in html


def test_it_speaks_chinese_to_a_chinese_browser(client_as, student, shipped):
    client = client_as(student)
    client.cookies["django_language"] = "zh-hans"
    html = _knows(client, "zh-en-post", "他没有吃饭。").content.decode()
    assert ">饭</mark>" in html
    assert "从没见过" in html and "训练数据" in html


def test_too_long_a_source_is_a_clear_error_not_a_500(client_as, student, shipped):
    response = _knows(client_as(student), "zh-en-post", "猫" * 501)
    assert response.status_code == 400
    assert "at most 500 characters" in response.content.decode()


def test_a_hidden_model_is_not_found_for_a_student(client_as, student, admin, shipped):
    TrainedModel.objects.filter(name="reverse").update(published=False)
    assert _knows(client_as(student), "reverse", "a b").status_code == 404
    assert _knows(client_as(admin), "reverse", "a b").status_code == 200


def test_the_card_page_shows_data_size_training_and_known_failures(client_as, student, shipped):
    html = client_as(student).get("/models/zh-en-post/").content.decode()
    assert 'data-testid="trained-on"' in html and "40 nouns, 16 verbs" in html
    assert "1076325" in html and "4000 × 64" in html
    assert "我的猫追了一只老鼠。" in html and "my cat chased a mouse ." in html  # grammar 2: no "yesterday" added
    assert "我的狗不会游泳。" in html and "saying one word over and over" in html  # the failure its tests found


def test_the_playground_carries_the_knowledge_panel(client_as, student, shipped):
    html = client_as(student).get("/playground/").content.decode()
    assert 'data-testid="knowledge-panel"' in html and "/models/__model__/knows/" in html
    assert "js/model_knowledge.js" in html
