"""Static files storage: WhiteNoise's compressed, hashed-name storage, our JS module imports rewritten to hashed names."""
from __future__ import annotations

from collections.abc import Callable
from re import Match
from typing import Any

from whitenoise.storage import CompressedManifestStaticFilesStorage

OWN_MODULES = "js/"  # static/js: the app's ES modules (third-party scripts keep their text: some import paths we lack)


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed names for modules too: `import "./x.js"` becomes `./x.<hash>.js`, so every file can be cached for a year."""

    support_js_module_import_aggregation = True

    def url_converter(self, name: str, hashed_files: dict[str, str], template: str | None = None) -> Callable[[Match[str]], Any]:
        """Rewrite references in CSS and in our own modules; leave other packages' JavaScript as it ships."""
        if name.endswith(".js") and not name.startswith(OWN_MODULES):
            return lambda match: match.group(0)
        return super().url_converter(name, hashed_files, template)
