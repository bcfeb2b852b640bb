"""End every live session idle longer than CLASSROOM_IDLE_HOURS (each also ends when next read; this sweeps all)."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from webapp.classroom.services import sessions_end_idle


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: object, **options: object) -> None:
        ended = sessions_end_idle()
        self.stdout.write(f"{ended} live session(s) idle over {settings.CLASSROOM_IDLE_HOURS} h ended")
