"""Create (or reset) the demo accounts: admin, instructor and a few students."""
from __future__ import annotations

import os

from django.core.management.base import BaseCommand

from webapp.accounts.services import demo_accounts_ensure, demo_password_make


class Command(BaseCommand):
    help = "Create or reset the demo accounts; the password comes from DEMO_PASSWORD or is made up and printed."

    def handle(self, *args: object, **options: object) -> None:
        password = os.environ.get("DEMO_PASSWORD") or demo_password_make()
        made = demo_accounts_ensure(password=password)
        names = ", ".join(f"{name} ({role})" for name, role in made)
        self.stdout.write(f"Demo accounts: {names}")
        if os.environ.get("DEMO_PASSWORD"):
            self.stdout.write("Their password is the one in DEMO_PASSWORD.")
        else:
            self.stdout.write(f"Their password: {password}   (set DEMO_PASSWORD to choose it)")
