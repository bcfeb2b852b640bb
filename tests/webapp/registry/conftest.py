"""The registry's tests: the shipped models registered as `make setup` registers them."""
from __future__ import annotations

import pytest
from django.core.management import call_command


@pytest.fixture
def shipped():
    call_command("register_shipped_models")
