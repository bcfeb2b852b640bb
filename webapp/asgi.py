"""ASGI entry point: past the door's budgets (webapp.realtime.door), HTTP goes to Django (after webapp.realtime.hold), WebSockets
to Channels consumers (signed-in, origin-checked)."""
from __future__ import annotations

import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings.dev")

from webapp.request_threads import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()  # before importing consumers: it sets up Django (requests on kept threads)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from webapp.realtime.door import Door, know_stored_sessions  # noqa: E402
from webapp.realtime.hold import HoldRefused  # noqa: E402
from webapp.realtime.socket_edge import SameOriginValidator, socket_auth_stack  # noqa: E402
from webapp.routing import websocket_urlpatterns  # noqa: E402

know_stored_sessions()  # a restarted web process lets its signed-in students back in as such
# The door, outermost: a request or handshake past its session's or address's budget is refused in the event loop.
application = Door(ProtocolTypeRouter(
    {
        "http": HoldRefused(django_asgi_app),  # a session just refused for its rate waits it out first
        "websocket": SameOriginValidator(HoldRefused(socket_auth_stack(URLRouter(websocket_urlpatterns)))),
    }
))

# What is loaded by now (Django, Channels, Twisted; never torch) stays for the life of the process: frozen, it is
# out of the collector's reach, so a full collection walks only what serving has made since instead of pausing every
# student's stream to walk it all (docs/benchmarks.md).
gc.collect()
gc.freeze()
