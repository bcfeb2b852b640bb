"""The lesson pages: every page for a signed-in student in both languages, the errata, the formulas, exercises."""
from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from tests.fixtures.lesson import in_both
from webapp.lesson.content import ERRATA, EXERCISES, GLOSSARY
from webapp.lesson.models import PageProgress

pytestmark = pytest.mark.django_db
PATHS = {"overview": "/lesson/", "encoder": "/lesson/encoder/", "decoder": "/lesson/decoder/",
         "residual-norm": "/lesson/residual-norm/", "questions": "/lesson/questions/", "glossary": "/lesson/glossary/"}
LESSON = Path(__file__).resolve().parents[4] / "shared" / "lesson.md"  # the course's text, beside the checkout


def text_of(response) -> str:
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", response.content.decode(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def get(client, path: str, language: str):
    return client.get(path, HTTP_ACCEPT_LANGUAGE="zh-Hans" if language == "zh" else "en")


@pytest.mark.parametrize("page", list(PATHS))
def test_every_page_renders_for_a_student_in_both_languages(client_as, student, zh_en, page):
    client = client_as(student)
    zh, en = get(client, PATHS[page], "zh"), get(client, PATHS[page], "en")
    assert zh.status_code == en.status_code == 200
    titles = {"overview": ("总览", "Overview"), "encoder": ("编码器", "The encoder"), "decoder": ("解码器", "The decoder"),
              "residual-norm": ("残差连接与层归一化", "Residual connections"), "questions": ("重点答疑", "Questions"),
              "glossary": ("术语表", "Glossary")}[page]
    assert titles[0] in text_of(zh) and titles[1] not in re.sub(r"Post-LN|Pre-LN", "", text_of(zh).split("术语表")[-1])
    assert titles[1] in text_of(en)


def test_anonymous_visitors_go_to_the_login_page(client):
    for path in PATHS.values():
        response = client.get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_overview_is_drawn_from_the_real_models_config(client_as, student, zh_en):
    content = get(client_as(student), "/lesson/", "en").content.decode()
    assert content.count('data-testid="encoder-layer"') == 3 and content.count('data-testid="decoder-layer"') == 3
    assert content.count('data-testid="sublayer"') == 3 * 2 + 3 * 3
    assert content.count('data-testid="memory-line"') == 3  # the memory reaches every decoder layer
    table = text_of(get(client_as(student), "/lesson/", "en"))
    for figure in ("512", "2048", "4000", "0.98", "128", "256"):
        assert figure in table


@pytest.mark.parametrize("language", ["zh", "en"])
def test_post_ln_and_pre_ln_formulas_are_the_correct_ones(client_as, student, zh_en, language):
    content = get(client_as(student), "/lesson/residual-norm/", language).content.decode()
    post = re.search(r'data-testid="formula-post">([^<]*)<', content).group(1)
    pre = re.search(r'data-testid="formula-pre">([^<]*)<', content).group(1)
    assert post == "x = LN(x + Sublayer(x))"
    assert pre == "x = x + Sublayer(LN(x))"
    assert 'data-testid="formula-final"' in content  # Pre-LN's final norm after the stack


@pytest.mark.parametrize("language", ["zh", "en"])
def test_each_erratum_quotes_the_lesson_and_corrects_it(client_as, student, zh_en, language):
    client = client_as(student)
    shown = {}
    for path in PATHS.values():
        content = get(client, path, language).content.decode()
        for found in re.finditer(r'data-testid="erratum-(\w)".*?data-testid="erratum-quote">(.*?)</blockquote>(.*?)</aside>',
                                 content, re.S):
            shown[found.group(1)] = (html.unescape(found.group(2)), html.unescape(found.group(3)))
    assert set(shown) == set(ERRATA) == {"a", "b", "c", "d", "e", "f"}
    for key, (quote, rest) in shown.items():
        assert quote == ERRATA[key].quote
        assert in_both(ERRATA[key].correction)[language] in rest
    if language == "en":
        assert all(ERRATA[k].quote_en in shown[k][1] for k in shown)
    # The corrected formulas, in the erratum about them:
    assert "x = LN(x + Sublayer(x))" in shown["a"][1] and "x = x + Sublayer(LN(x))" in shown["a"][1]


@pytest.mark.skipif(not LESSON.is_file(), reason="the course's lesson.md is not beside this checkout")
def test_every_quote_is_the_lessons_own_sentence():
    lesson = LESSON.read_text(encoding="utf-8")
    for erratum in ERRATA.values():
        assert erratum.quote in lesson, erratum.id


def test_the_rumoured_figures_about_other_models_are_not_repeated(client_as, student, zh_en):
    for path in PATHS.values():
        for language in ("zh", "en"):
            text = text_of(get(client_as(student), path, language))
            assert "GPT-4" not in text and "120层" not in text and "96层" not in text


def test_the_glossary_lists_every_term_in_both_languages_with_a_link(client_as, student, zh_en):
    content = get(client_as(student), "/lesson/glossary/", "zh").content.decode()
    for term in GLOSSARY:
        assert html.escape(term["zh"]) in content and html.escape(term["en"]) in content
    for term in ("层归一化", "逐位置前馈网络", "掩码", "交叉注意力"):
        assert term in content
    assert content.count("#") >= len(GLOSSARY)


@pytest.mark.parametrize("language", ["zh", "en"])
def test_every_glossary_link_lands_on_an_element_of_its_page(client_as, student, zh_en, language):
    client = client_as(student)
    links = re.findall(r'<a href="(/lesson/[\w/-]*)#([\w-]+)">', get(client, "/lesson/glossary/", language).content.decode())
    assert len(links) == len(GLOSSARY)
    for path, anchor in links:
        assert f'id="{anchor}"' in get(client, path, language).content.decode(), (path, anchor)


def test_visits_and_revealed_answers_are_kept_and_the_instructor_sees_them(client_as, student, instructor, admin, zh_en,
                                                                         seated):
    client = client_as(student)
    page = client.get("/lesson/encoder/").content.decode()
    first = EXERCISES["encoder"][0]["id"]
    assert 'data-testid="answer"' not in page
    answer = client.post(f"/lesson/exercises/{first}/reveal/", HTTP_HX_REQUEST="true")
    assert answer.status_code == 200 and 'data-testid="answer"' in answer.content.decode()
    assert 'data-testid="answer"' in client.get("/lesson/encoder/").content.decode()  # stays revealed
    assert PageProgress.objects.get(user=student, page="encoder").exercises == [first]
    assert client.post("/lesson/exercises/nope/reveal/").status_code == 404
    assert client.get("/lesson/progress/").status_code == 403
    row = f'data-testid="progress-{student.get_username()}">(.*?)</tr>'
    if seated(student, instructor):  # with the classroom, an instructor sees the students of their sessions only
        assert re.search(row, client_as(admin).get("/lesson/progress/").content.decode(), re.S)
        other = User.objects.create_user("other-teacher", password="x")
        other.groups.add(Group.objects.get_or_create(name="instructors")[0])
        assert not re.search(row, client_as(other).get("/lesson/progress/").content.decode(), re.S)
    table = client_as(instructor).get("/lesson/progress/").content.decode()
    assert "✓ 1/3" in re.search(row, table, re.S).group(1)


def test_the_home_page_points_to_the_lesson(client_as, student):
    assert 'href="/lesson/"' in client_as(student).get("/").content.decode()


def test_the_questions_page_draws_the_two_masks_side_by_side(client_as, student, zh_en):
    content = get(client_as(student), "/lesson/questions/", "en").content.decode()
    figures = json.loads(re.search(r'<script type="application/json">(.*?)</script>', content, re.S).group(1))
    encoder, decoder = (trace["z"] for trace in figures["masks"]["data"])
    n = len(encoder)
    assert all(all(row) for row in encoder)  # bidirectional: every key
    assert decoder == [[int(k <= q) for k in range(n)] for q in range(n)]  # causal: keys up to the query


def test_the_overview_follows_the_registry_when_the_model_is_retrained(client_as, student, zh_en):
    from webapp.registry.models import TrainedModel

    client = client_as(student)
    before = re.search(r'data-testid="train-time">(.*?)</span>', get(client, "/lesson/", "en").content.decode()).group(1)
    model = TrainedModel.objects.get(name=zh_en)
    model.metrics = {**model.metrics, "train_seconds": 60 * 97, "step": 12345}
    model.save()
    after = re.search(r'data-testid="train-time">(.*?)</span>', get(client, "/lesson/", "en").content.decode()).group(1)
    assert after != before and "97 minutes for its 12345 training steps" in after
    assert "12345" in text_of(get(client, "/lesson/", "zh"))


def test_a_page_opened_again_within_a_minute_is_not_written_again(client_as, student, zh_en):
    client = client_as(student)
    client.get("/lesson/encoder/")
    first = PageProgress.objects.get(user=student, page="encoder").last_visit_at
    client.get("/lesson/encoder/")
    assert PageProgress.objects.get(user=student, page="encoder").last_visit_at == first
    PageProgress.objects.filter(user=student, page="encoder").update(last_visit_at=first - timedelta(minutes=2))
    client.get("/lesson/encoder/")
    assert PageProgress.objects.get(user=student, page="encoder").last_visit_at > first
