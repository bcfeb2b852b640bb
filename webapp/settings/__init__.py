"""Settings family: base (shared), dev (make run), test (pytest), production (docker)."""
