"""Settings come from the environment and fail loudly on bad values."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def load_settings(module: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Import a settings module in a fresh interpreter with exactly this environment on top of a clean one."""
    clean = {k: v for k, v in os.environ.items() if k not in {
        "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL", "MODELCORE_DEVICE", "DJANGO_SETTINGS_MODULE"}}
    clean.update(env)
    code = f"import django, os; os.environ['DJANGO_SETTINGS_MODULE']='{module}'; from django.conf import settings; " \
           "print(settings.DEBUG, settings.DATABASES['default']['ENGINE'], settings.REDIS_URL, settings.MODELCORE_DEVICE)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60)


def test_production_refuses_to_start_without_a_secret_key():
    result = load_settings("webapp.settings.production", ALLOWED_HOSTS="example.org")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"MODELCORE_DEVICE": "tpu"}, "MODELCORE_DEVICE='tpu' must be one of: auto, cpu, cuda"),
        ({"REDIS_URL": "http://x"}, "REDIS_URL='http://x' must start with redis://"),
        ({"AXES_FAILURE_LIMIT": "zero"}, "AXES_FAILURE_LIMIT='zero' is not an integer"),
    ],
)
def test_a_bad_value_is_named_at_start_up(env, message):
    result = load_settings("webapp.settings.base", SECRET_KEY="x" * 50, **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_database_and_redis_come_from_the_environment():
    result = load_settings("webapp.settings.base", SECRET_KEY="x" * 50,
                           DATABASE_URL="postgres://u:p@db.internal:5432/lab", REDIS_URL="redis://cache:6379/2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "django.db.backends.postgresql", "redis://cache:6379/2", "auto"]


def test_the_defaults_are_sqlite_and_the_embedded_redis_socket():
    result = load_settings("webapp.settings.dev")
    assert result.returncode == 0, result.stderr
    debug, engine, redis_url, device = result.stdout.split()
    assert (debug, engine, device) == ("False", "django.db.backends.sqlite3", "auto")  # debug pages only with DEBUG=1
    assert redis_url.startswith("unix://") and redis_url.endswith("/run/redis.sock")


def test_production_settings_pass_the_deploy_check(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_SETTINGS_MODULE"}}
    env.update(SECRET_KEY="a-very-long-production-secret-key-with-enough-entropy-0123456789-abcdef",
               ALLOWED_HOSTS="lab.example.org", DJANGO_SETTINGS_MODULE="webapp.settings.production",
               DATA_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_env_example_lists_every_variable_the_settings_read():
    import re

    read = set()
    for path in (ROOT / "webapp" / "settings").glob("*.py"):
        read |= set(re.findall(r'env_\w+\(\s*"([A-Z_]+)"', path.read_text()))
    listed = set(re.findall(r"^#?\s*([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert read <= listed, f"missing from .env.example: {sorted(read - listed)}"
