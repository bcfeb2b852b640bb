"""Text for users out of exception messages: the server's file system stays in its log."""
from __future__ import annotations

import re

# An absolute path: a slash-led run of path characters with at least two parts (not "1/2" or "a/b").
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[\w.@+-]+/)+([\w.@+-]*)")


def without_paths(text: str) -> str:
    """'No such file: /srv/lab/models/x/model.safetensors' -> 'No such file: …/model.safetensors'."""
    return _ABSOLUTE_PATH.sub(lambda match: "…/" + match.group(1), text)
