"""Compute the results every experiment page shows on a fresh install, into webapp/experiments/defaults/."""
from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modelcore.experiments import canonical_params, run_experiment, torch_threads
from webapp.experiments.pages import PAGES, defaults_path
from webapp.experiments.services import params_key


class Command(BaseCommand):
    help = "Compute the shipped experiment results (CPU, a few minutes); keeps up-to-date ones unless --force."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--page", action="append", choices=sorted(PAGES), help="only this page (repeatable)")
        parser.add_argument("--force", action="store_true", help="recompute results that are already shipped")
        parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: small models)")

    def handle(self, *args: Any, page: list[str] | None, force: bool, threads: int, **options: Any) -> None:
        if threads < 1:
            raise CommandError("--threads must be at least 1")
        with torch_threads(threads):
            for name in page or sorted(PAGES):
                self._page(name, force)

    def _page(self, page: str, force: bool) -> None:
        path = defaults_path(page)
        stored: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        entries: dict[str, Any] = {}
        elsewhere = _keys_shipped_by_other_pages(page)
        for name, (kind, params) in PAGES[page].items():
            key = params_key(kind, params)
            if key in elsewhere:  # shown here too, computed and stored once, with the other page
                continue
            if not force and stored.get(name, {}).get("params_key") == key:
                entries[name] = stored[name]
                continue
            started = time.perf_counter()
            result = run_experiment(kind, params)
            entries[name] = {"kind": kind, "params": canonical_params(kind, params), "params_key": key, "result": result}
            self.stdout.write(f"{page}/{name}: {kind} in {time.perf_counter() - started:.1f} s")
            # Written after each result, so an interrupted run keeps what it finished.
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({**stored, **entries}, ensure_ascii=False, separators=(",", ":")) + "\n",
                            encoding="utf-8")
        path.write_text(json.dumps(entries, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
        self.stdout.write(self.style.SUCCESS(f"{path.name}: {len(entries)} results"))


def _keys_shipped_by_other_pages(page: str) -> set[str]:
    """The params keys already in another page's shipped file (pages look results up by key)."""
    keys: set[str] = set()
    for other in PAGES:
        path = defaults_path(other)
        if other != page and path.is_file():
            keys.update(entry["params_key"] for entry in json.loads(path.read_text(encoding="utf-8")).values())
    return keys
