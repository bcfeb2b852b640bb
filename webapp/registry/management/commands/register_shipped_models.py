"""Register the models that ship in modelcore/shipped (idempotent; run by `make setup`)."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from webapp.registry.services import shipped_models_register


class Command(BaseCommand):
    help = "Register (or refresh) the shipped models in the model registry."

    def handle(self, *args: object, **options: object) -> None:
        models = shipped_models_register()
        names = ", ".join(m.name for m in models) or "none found"
        self.stdout.write(f"Shipped models registered: {names}")
