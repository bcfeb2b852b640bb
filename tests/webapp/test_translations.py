"""The Chinese catalogues are complete: every string the sources mark for translation has a reviewed zh_Hans entry.

The project's catalogue is locale/; an app may keep its own (webapp/<app>/locale/), where makemessages
puts the strings of that app's files; every catalogue is checked the same way.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = Path("locale/zh_Hans/LC_MESSAGES/django.po")
CATALOGUES = [CATALOGUE, *sorted(p.relative_to(ROOT) for p in ROOT.glob("webapp/*/locale/zh_Hans/LC_MESSAGES/django.po"))]
SOURCES = ("manage.py", "webapp", "templates", "static/js", "modelcore", "locale")


def msgids(po: Path, *flags: str) -> list[str]:
    """The msgids msgattrib selects with these flags (the header excluded)."""
    out = subprocess.run(["msgattrib", *flags, "--no-obsolete", "--no-wrap", str(po)],
                         capture_output=True, text=True, check=True).stdout
    return [line[6:] for line in out.splitlines() if line.startswith("msgid ") and line != 'msgid ""']


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> Path:
    """The catalogue after makemessages over a copy of the sources: new strings appear untranslated there."""
    copy = tmp_path_factory.mktemp("messages")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.safetensors", "vendor"))
        else:
            shutil.copy2(source, copy / name)
    subprocess.run([sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "-v", "0"], cwd=copy, check=True)
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("catalogue", CATALOGUES, ids=str)
def test_no_string_of_the_sources_is_left_untranslated(merged, catalogue):
    assert msgids(merged / catalogue, "--untranslated") == []


@pytest.mark.slow
@pytest.mark.parametrize("catalogue", CATALOGUES, ids=str)
def test_no_entry_is_fuzzy(merged, catalogue):
    assert msgids(ROOT / catalogue, "--only-fuzzy") == []
    assert msgids(merged / catalogue, "--only-fuzzy") == []


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=str)
def test_the_catalogue_compiles_with_its_format_strings_checked(tmp_path, catalogue):
    result = subprocess.run(["msgfmt", "--check-format", "-o", str(tmp_path / "django.mo"), str(ROOT / catalogue)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_server_error_page_speaks_the_readers_language():
    from django.template.loader import render_to_string
    from django.utils import translation

    with translation.override("zh-hans"):
        page = render_to_string("500.html")
    assert "服务器这边出了问题" in page and 'lang="zh-hans"' in page
    assert "went wrong" not in page
