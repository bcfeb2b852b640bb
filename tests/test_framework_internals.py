"""The framework code the app re-types or reaches into, pinned by its source: an upgrade of daphne, Twisted, Django or
Channels that changes one of these fails here, naming the module of ours to review against the new version.

Each was re-typed for speed or for a bound the framework lacks (docs/benchmarks.md, "The ASGI server: daphne or
uvicorn"); the behaviour each keeps is tested where it lives (tests/webapp/test_server_bounds.py,
tests/webapp/test_request_threads.py, tests/webapp/realtime/test_server_settings.py and the sockets' tests).
"""
from __future__ import annotations

import hashlib
import importlib
import inspect

import pytest

# (module, qualified name, the first 16 hex digits of its source's SHA-256, ours that depends on it)
PINNED = [
    ("daphne.server", "Server.create_application", "f1e300b4ecf636c8", "webapp/server.py: BoundedServer.create_application"),
    ("daphne.server", "Server.handle_reply", "9d9dbaea6de0657a", "webapp/server.py: BoundedServer.handle_reply"),
    ("twisted.internet.abstract", "FileDescriptor.write", "3e46c97fc173bc7e",
     "webapp/server.py: eager_writes and unsent_bytes (dataBuffer, offset, _tempDataLen, _writeDisconnected)"),
    ("twisted.internet.abstract", "FileDescriptor.doWrite", "a986d7b1b1054e43", "webapp/server.py: unsent_bytes"),
    ("django.core.handlers.asgi", "ASGIHandler.__call__", "f756809e9c9308dc",
     "webapp/request_threads.py: PooledASGIHandler.__call__"),
    ("channels.consumer", "AsyncConsumer.__call__", "e52238720872dbc3", "webapp/realtime/sockets.py: JsonSocket.__call__"),
    ("channels.consumer", "AsyncConsumer.dispatch", "39f34e7d4fb0f655", "webapp/realtime/sockets.py: JsonSocket.dispatch"),
]


@pytest.mark.parametrize(("module", "name", "digest", "ours"), PINNED, ids=[f"{m}.{n}" for m, n, _, _ in PINNED])
def test_the_framework_code_we_retype_is_the_version_we_read(module: str, name: str, digest: str, ours: str) -> None:
    target = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part, None)
        assert target is not None, f"{module}.{name} is gone in this version: review {ours}"
    seen = hashlib.sha256(inspect.getsource(target).encode()).hexdigest()[:16]
    assert seen == digest, f"{module}.{name} changed in this version: review {ours} against it, then pin {seen}"
