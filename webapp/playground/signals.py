"""Worker start and stop: an `interactive` worker loads the shipped models and starts its decoding loop."""
from __future__ import annotations

import gc
import logging
import sys
import threading
from typing import Any

from celery import current_app
from celery.signals import worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown

log = logging.getLogger(__name__)

QUEUE = "interactive"


def _consumes_interactive(app: Any) -> bool:
    return QUEUE in app.amqp.queues.consume_from


_preloaded = threading.Event()  # the solo pool sends both signals below: warm up once per process


def _preload() -> None:
    if _preloaded.is_set():
        return
    _preloaded.set()
    from modelcore.checkpoint import SHIPPED_DIR, shipped_models
    from webapp.playground.worker.loop import decode_loop, warm_up

    warmed = warm_up(decode_loop(), [str(SHIPPED_DIR / name) for name in shipped_models()])
    # Django, Celery, torch and the warm models are loaded for good: move their objects out of the
    # collector's reach, so that a full collection during decoding walks only what decoding made.
    gc.freeze()
    log.info("playground: decoding loop running, %d shipped model(s) warm", len(warmed))


@worker_ready.connect
def _on_worker_ready(sender: Any = None, **_: Any) -> None:
    """Solo and thread pools decode in this process: warm it now. Prefork children do it themselves."""
    pool = type(getattr(sender, "pool", None)).__module__
    if sender is not None and _consumes_interactive(sender.app) and not pool.endswith("prefork"):
        _preload()


@worker_process_init.connect
def _on_child_start(**_: Any) -> None:
    if _consumes_interactive(current_app):
        _preload()


@worker_shutdown.connect
@worker_process_shutdown.connect
def _on_worker_stop(**_: Any) -> None:
    """Running requests get an error frame instead of silence."""
    loop_module = sys.modules.get("webapp.playground.worker.loop")
    if loop_module is not None and loop_module.decode_loop.cache_info().currsize:
        loop_module.decode_loop().stop()
