"""docker/compose.yaml holds the production topology (checked statically: no Docker engine runs here)."""
from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "compose.yaml"


def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def test_it_runs_postgres_redis_web_and_one_worker_per_queue():
    found = services()
    assert {"postgres", "redis", "migrate", "web", "worker-interactive", "worker-demonstrations", "worker-experiments",
            "worker-training"} <= set(found)
    queues = {name: svc["command"][svc["command"].index("-Q") + 1] for name, svc in found.items()
              if "celery" in svc.get("command", [])}
    # Students' experiment runs never wait behind a training job, nor decodes behind the lesson's demonstrations:
    # each has its own queue and worker.
    assert queues == {"worker-interactive": "interactive", "worker-demonstrations": "demonstrations",
                      "worker-experiments": "experiments", "worker-training": "training"}


def test_the_training_worker_reserves_a_gpu_and_uses_cuda():
    worker = services()["worker-training"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"] and devices[0]["count"] == 1
    assert worker["environment"]["MODELCORE_DEVICE"] == "cuda"
    assert worker["build"]["dockerfile"] == "docker/Dockerfile.cuda"


def test_app_services_wait_for_migrations_and_share_postgres_redis_and_the_model_store():
    for name in ("web", "worker-interactive", "worker-demonstrations", "worker-experiments", "worker-training"):
        svc = services()[name]
        assert svc["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert svc["environment"]["DATABASE_URL"].startswith("postgres://")
        assert svc["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert "models:/data/models" in svc["volumes"]


def test_the_dockerfiles_pin_python_311_and_install_the_pinned_requirements():
    for name in ("Dockerfile", "Dockerfile.cuda"):
        text = (ROOT / "docker" / name).read_text()
        assert "python3.11" in text or "python:3.11" in text
        assert "requirements/app.txt" in text
