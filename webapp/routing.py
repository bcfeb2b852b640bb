"""WebSocket routes; every path starts with /ws/."""
from __future__ import annotations

from django.urls import path, re_path

from webapp.classroom.consumers import ClassroomSocket
from webapp.experiments.consumers import ExperimentSocket
from webapp.lesson.consumers import TrainingRunSocket
from webapp.playground.consumers import DecodeSocket
from webapp.realtime.consumers import NotifySocket
from webapp.realtime.socket_edge import NoSuchSocket
from webapp.training.consumers import TrainingJobSocket

websocket_urlpatterns = [
    path("ws/notify/", NotifySocket.as_asgi()),
    path("ws/training/<int:job_id>/", TrainingJobSocket.as_asgi()),
    path("ws/experiments/<int:run_id>/", ExperimentSocket.as_asgi()),
    path("ws/lesson/runs/<int:run_id>/", TrainingRunSocket.as_asgi()),
    path("ws/decode/", DecodeSocket.as_asgi()),
    path("ws/classroom/<str:code>/", ClassroomSocket.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),  # last: any other path is refused, not a 500
]
