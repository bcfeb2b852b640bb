"""The admin's model form keeps every model folder inside the model store."""
from __future__ import annotations

import json

import pytest

from webapp.registry.models import TrainedModel
from webapp.registry.services import model_register_folder

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/etc", "../../etc", "tiny/../../outside"])
def test_the_admin_refuses_a_model_path_outside_the_model_store(client_as, admin, tiny_model_folder, settings, path):
    settings.MODEL_STORE = tiny_model_folder.parent
    model = model_register_folder(folder=tiny_model_folder, name="tiny")
    form = {
        "name": "tiny", "title": "", "task": "reverse", "description": "", "config": json.dumps(model.config),
        "metrics": json.dumps(model.metrics), "path": path, "size_bytes": model.size_bytes,
    }
    response = client_as(admin).post(f"/admin/registry/trainedmodel/{model.pk}/change/", form)
    assert response.status_code == 200 and b"inside the model store" in response.content
    assert TrainedModel.objects.get(pk=model.pk).path == model.path

    form["path"] = "tiny"  # relative to MODEL_STORE: accepted
    assert client_as(admin).post(f"/admin/registry/trainedmodel/{model.pk}/change/", form).status_code == 302
