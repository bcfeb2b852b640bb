"""The playground page and its model picker fragment."""
from __future__ import annotations

import pytest

from tests.fixtures.models import make_model_folder
from webapp.playground.examples import EXAMPLES
from webapp.registry.services import model_register_folder


@pytest.fixture
def models(db, tmp_path):
    """A published zh-en model, a published reverse one and a hidden one."""
    zh = make_model_folder(tmp_path / "zh", task="zh-en")
    rev = make_model_folder(tmp_path / "rev")
    return [
        model_register_folder(folder=zh, name="zh-small", task="zh-en", published=True),
        model_register_folder(folder=rev, name="rev-small", task="reverse", published=True),
        model_register_folder(folder=rev, name="rev-draft", task="reverse", published=False),
    ]


def test_a_student_picks_among_published_models_with_zh_en_first(client_as, student, models):
    page = client_as(student).get("/playground/")
    html = page.content.decode()
    assert page.status_code == 200
    assert html.index('value="zh-small"') < html.index('value="rev-small"')
    assert "rev-draft" not in html
    assert EXAMPLES["zh-en"][0] in html  # the first example fills the source box
    assert 'href="/playground/"' in client_as(student).get("/").content.decode()  # the nav links here


def test_an_admin_may_also_try_an_unpublished_model(client_as, admin, models):
    assert 'value="rev-draft"' in client_as(admin).get("/playground/").content.decode()


def test_the_picker_fragment_shows_the_chosen_model_and_its_examples(client_as, student, models):
    response = client_as(student).get("/playground/model/", {"model": "rev-small"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert 'data-model="rev-small"' in html and 'data-heads="2"' in html
    assert all(f'data-example="{example}"' in html for example in EXAMPLES["reverse"])
    assert client_as(student).get("/playground/model/", {"model": "rev-draft"}).status_code == 404


def test_without_a_published_model_the_page_says_so(client_as, student, db):
    assert b'data-testid="no-models"' in client_as(student).get("/playground/").content


def test_the_views_are_explained_in_chinese_for_a_chinese_reader(client_as, student, models):
    html = client_as(student).get("/playground/", headers={"Accept-Language": "zh-Hans"}).content.decode()
    assert "交叉注意力" in html and "因果掩码" in html


def test_every_zh_en_example_is_in_the_task_vocabulary(models):
    from modelcore.checkpoint import load_model
    from modelcore.tokenization import UNK_ID

    tokenizer = load_model(models[0].folder).src_tokenizer
    for example in EXAMPLES["zh-en"]:
        assert UNK_ID not in tokenizer.encode(example), example
