"""Home page and health check."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from webapp.accounts.permissions import signed_in
from webapp.ops.health import current_report


@signed_in
def home(request: HttpRequest) -> HttpResponse:
    """What this role can do here."""
    return render(request, "site_pages/home.html")


@require_GET
@never_cache
async def healthz(request: HttpRequest) -> JsonResponse:
    """JSON health report, from the background checks; 503 when the database, Redis or a queue's workers are missing."""
    healthy, report = await current_report()
    return JsonResponse(report, status=200 if healthy else 503)
