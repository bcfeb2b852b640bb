"""What users read of an exception names no path of the server."""
from __future__ import annotations

import pytest

from webapp.site_pages.redact import without_paths


@pytest.mark.parametrize(("text", "shown"), [
    ("FileNotFoundError: No such file or directory: '/srv/lab/models/x/model.safetensors'",
     "FileNotFoundError: No such file or directory: '…/model.safetensors'"),
    ("could not open /tmp/run-7/checkpoint.pt for writing", "could not open …/checkpoint.pt for writing"),
    ("loss diverged at step 12 (lr 3e-3, ratio 1/2)", "loss diverged at step 12 (lr 3e-3, ratio 1/2)"),
    ("shape mismatch: (2, 3) vs (3/4)", "shape mismatch: (2, 3) vs (3/4)"),
])
def test_absolute_paths_keep_only_their_last_part(text, shown):
    assert without_paths(text) == shown
