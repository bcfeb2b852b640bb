"""Corpus upload: a good TSV is stored; each malformed one is refused with its reason and nothing is saved."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from webapp.training.models import Dataset

pytestmark = [pytest.mark.django_db]

GOOD = "".join(f"src {i} words\tziel {i} wörter\n" for i in range(40)).encode()


def upload(client, data: bytes, name: str = "toy"):
    return client.post("/training/datasets/", {"name": name, "file": SimpleUploadedFile("corpus.tsv", data)})


def stored_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.is_file()]


def test_a_good_corpus_is_stored_and_can_be_trained_on(client_as, admin, store):
    response = upload(client_as(admin), GOOD)
    assert response.status_code == 302
    dataset = Dataset.objects.get()
    assert (dataset.name, dataset.n_pairs, dataset.owner) == ("toy", 40, admin)
    assert dataset.n_train + dataset.n_valid + dataset.n_test == 40 and dataset.n_valid >= 1
    assert dataset.file.read_bytes() == GOOD
    page = client_as(admin).get("/training/new/").content.decode()
    assert f'<option value="{dataset.pk}">toy</option>' in page


@pytest.mark.parametrize(
    ("data", "reasons"),
    [
        (GOOD + b"one\ttwo\tthree\n" + b"no tab here\n",
         ["line 41: expected 2 tab-separated columns, got 3", "line 42: expected 2 tab-separated columns, got 1"]),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
         ["line 1: not valid UTF-8 (byte 0x89 at byte 1)", "line 3: contains a NUL byte (is this a binary file?)"]),
        (b"", ["The submitted file is empty."]),
        (b"\n\n  \n", ["the corpus is empty"]),
        (b"src 0\tziel 0\n" + "caf\xe9\tcoffee\n".encode("latin-1"), ["line 2: not valid UTF-8 (byte 0xe9 at byte 4)"]),
        (GOOD + b"a\t" + b"b" * 1200 + b"\n", ["line 41: 1202 characters, more than the limit of 1000"]),
        (b"a\tb\na\tc\n", ["need at least 3 distinct source sentences, found 1"]),
        (b"\tempty source\nok\t\n", ["line 1: empty source", "line 2: empty target"]),
    ],
    ids=["wrong-columns", "binary", "empty-file", "blank-lines", "bad-encoding", "overlong-line", "too-few", "empty-side"],
)
def test_a_malformed_corpus_is_refused_with_the_lines_at_fault(data, reasons, client_as, admin, store):
    response = upload(client_as(admin), data)
    assert response.status_code == 400
    html = response.content.decode()
    beside = html.split('data-field="file"', 1)[1].split("</form>", 1)[0]
    for reason in reasons:
        assert reason.replace("'", "&#x27;") in beside, beside
    assert not Dataset.objects.exists()
    assert stored_files(store) == []


def test_many_bad_lines_are_listed_by_number_after_the_first_twenty(client_as, admin, store):
    data = GOOD + b"".join(b"broken line\n" for _ in range(30))
    html = upload(client_as(admin), data).content.decode()
    assert "line 60: expected 2 tab-separated columns, got 1" in html
    assert "10 more malformed lines: 61, 62, 63, 64, 65, 66, 67, 68, 69, 70" in html
    assert not Dataset.objects.exists()


def test_a_file_over_the_size_limit_is_refused_unread(client_as, admin, store, settings):
    settings.TRAINING_UPLOAD_MAX_BYTES = 1024
    response = upload(client_as(admin), GOOD * 2)
    assert response.status_code == 400
    assert "the limit is 1.0\xa0KB" in response.content.decode()
    assert not Dataset.objects.exists() and stored_files(store) == []


def test_two_corpora_may_not_share_a_name(client_as, admin, store):
    assert upload(client_as(admin), GOOD).status_code == 302
    response = upload(client_as(admin), GOOD)
    assert response.status_code == 400 and "A corpus named toy exists already." in response.content.decode()
    assert Dataset.objects.count() == 1


def test_only_admins_upload(client_as, instructor, store):
    assert upload(client_as(instructor), GOOD).status_code == 403
    assert not Dataset.objects.exists()
