"""Static files as `make run` and production serve them: collected, compressed, hashed names cached for a year."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

YEAR = 315360000  # WhiteNoise's "forever" for a file whose name carries its hash

SERVED_AS_DEPLOYED = {
    "STORAGES": {"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                 "staticfiles": {"BACKEND": "webapp.ops.storage.StaticStorage"}},
    "WHITENOISE_USE_FINDERS": False,
    "WHITENOISE_AUTOREFRESH": False,
}


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory, django_db_blocker) -> Path:
    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=root, **SERVED_AS_DEPLOYED), django_db_blocker.unblock():
        call_command("collectstatic", "--noinput", "-v", "0")
    return root


@pytest.fixture
def client(collected: Path, settings) -> Client:
    settings.STATIC_ROOT = collected
    for name, value in SERVED_AS_DEPLOYED.items():
        setattr(settings, name, value)
    return Client()  # a new client builds the middleware, and WhiteNoise reads the collected files then


def asset_urls(client: Client) -> list[str]:
    page = client.get("/accounts/login/").content.decode()
    return re.findall(r'(?:href|src)="(/static/[^"]+)"', page)


@pytest.mark.django_db
def test_pages_link_hashed_names_served_compressed_and_cached_for_a_year(client):
    urls = asset_urls(client)
    assert any(re.search(r"/css/app\.[0-9a-f]{12}\.css$", url) for url in urls), urls
    assert any(re.search(r"/img/favicon\.[0-9a-f]{12}\.svg$", url) for url in urls), urls
    for url in urls:
        response = client.get(url, HTTP_ACCEPT_ENCODING="gzip, br")
        assert response.status_code == 200, url
        assert f"max-age={YEAR}" in response["Cache-Control"] and "immutable" in response["Cache-Control"], url
        assert response.get("Vary") == "Accept-Encoding", url


@pytest.mark.django_db
def test_plotly_goes_compressed_to_a_fraction_of_its_size(client, collected):
    plotly = next(collected.glob("vendor/plotly/plotly.min.*.js"))
    response = client.get(f"/static/vendor/plotly/{plotly.name}", HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] in ("gzip", "br")
    size = int(response["Content-Length"])
    assert size < plotly.stat().st_size / 3  # 4.8 MB becomes about 1.4 MB
    assert f"max-age={YEAR}" in response["Cache-Control"]


@pytest.mark.django_db
def test_module_imports_name_the_hashed_files_too(client, collected):
    playground = next(collected.glob("js/playground.*.js")).read_text()
    imports = re.findall(r'from "(\./[^"]+)"', playground)
    assert imports and all(re.search(r"\.[0-9a-f]{12}\.js$", path) for path in imports), imports
    for path in imports:
        assert client.get(f"/static/js/{path[2:]}").status_code == 200


@pytest.mark.django_db
def test_the_favicon_answers_at_the_root(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    assert b"".join(response.streaming_content)[:4] == b"\0\0\1\0"  # an ICO header
