"""The model registry: registering folders, who sees what, publishing."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from webapp.registry.models import TrainedModel
from webapp.registry.services import RegistryError, model_register_folder

pytestmark = pytest.mark.django_db


def test_registering_a_folder_reads_its_config_metrics_and_hash(tiny_model_folder):
    model = model_register_folder(folder=tiny_model_folder, name="tiny")
    assert model.task == "reverse"
    assert model.config["d_model"] == 32 and model.config["norm_position"] == "post"
    assert model.headline_metrics == {"exact_match": 0.0, "token_accuracy": 0.05}
    assert len(model.checkpoint_hash) == 64 and model.size_bytes > 10_000
    assert model.published is False


def test_registering_again_keeps_the_admins_publication_choice(tiny_model_folder):
    model = model_register_folder(folder=tiny_model_folder, name="tiny", published=True)
    model.published = False
    model.save()
    again = model_register_folder(folder=tiny_model_folder, name="tiny", published=True)
    assert again.pk == model.pk and again.published is False
    assert TrainedModel.objects.count() == 1


def test_an_incomplete_folder_is_refused_with_the_missing_file(tiny_model_folder):
    (tiny_model_folder / "tokenizer.json").unlink()
    with pytest.raises(RegistryError, match="tokenizer.json is missing"):
        model_register_folder(folder=tiny_model_folder, name="broken")
    assert not TrainedModel.objects.exists()


def test_the_shipped_models_register_published_and_idempotently():
    from modelcore.checkpoint import shipped_models

    call_command("register_shipped_models")
    call_command("register_shipped_models")
    names = set(TrainedModel.objects.values_list("name", flat=True))
    assert names == set(shipped_models()) == {"zh-en-post", "zh-en-pre", "zh-en-hsk", "reverse"}
    assert all(m.published and m.shipped for m in TrainedModel.objects.all())


def test_students_see_published_models_only(client_as, student, admin, tiny_model_folder):
    model_register_folder(folder=tiny_model_folder, name="hidden-one")
    model_register_folder(folder=tiny_model_folder, name="public-one", published=True)
    page = client_as(student).get("/models/").content.decode()
    assert "public-one" in page and "hidden-one" not in page
    assert client_as(student).get("/models/hidden-one/").status_code == 404
    assert "hidden-one" in client_as(admin).get("/models/").content.decode()


def test_an_admin_publishes_with_htmx_and_a_student_then_sees_it(client_as, student, admin, tiny_model_folder):
    model_register_folder(folder=tiny_model_folder, name="fresh")
    response = client_as(admin).post("/models/fresh/publish/", {"published": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"Unpublish" in response.content
    assert TrainedModel.objects.get(name="fresh").published
    assert client_as(student).get("/models/fresh/").status_code == 200


def test_a_student_cannot_publish(client_as, student, tiny_model_folder):
    model_register_folder(folder=tiny_model_folder, name="fresh")
    assert client_as(student).post("/models/fresh/publish/", {"published": "1"}).status_code == 403
    assert not TrainedModel.objects.get(name="fresh").published


def test_the_detail_page_shows_figures_and_curves(client_as, student, tiny_model_folder):
    model_register_folder(folder=tiny_model_folder, name="tiny", published=True)
    page = client_as(student).get("/models/tiny/").content.decode()
    assert "token_accuracy" in page and 'id="history-data"' in page and "plotly.min.js" in page


def test_the_model_pages_name_their_figures_as_a_reader_would(client_as, student, shipped):
    client = client_as(student)
    listing = client.get("/models/").content.decode()
    detail = client.get("/models/zh-en-post/").content.decode()
    for html in (listing, detail):
        assert "exact match" in html and "token accuracy (teacher-forced)" in html
        assert "exact_match" not in html.split("<script", 1)[0]  # no raw key in what the page shows
    client.cookies["django_language"] = "zh-hans"
    assert "完全匹配率" in client.get("/models/").content.decode()
