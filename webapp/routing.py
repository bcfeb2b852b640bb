"""WebSocket routes; every path starts with /ws/."""
from __future__ import annotations

from django.urls import path

from webapp.core.consumers import NotifyConsumer

websocket_urlpatterns = [
    path("ws/notify/", NotifyConsumer.as_asgi()),
]
