"""The model registry pages: the list, one model, publishing."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from webapp.accounts.permissions import admins_only, signed_in
from webapp.registry.alignment import alignment_for
from webapp.registry.cards import card_for
from webapp.registry.coverage import coverage_for
from webapp.registry.learning import learning_curve_for
from webapp.registry.models import TrainedModel
from webapp.registry.reliability import reliability_for
from webapp.registry.services import RegistryError, model_knowledge, model_set_published, models_visible_to


@signed_in
def model_list(request: HttpRequest) -> HttpResponse:
    """Published models (admins: all of them)."""
    return render(request, "registry/list.html", {"models": models_visible_to(request.user)})


@signed_in
def model_detail(request: HttpRequest, name: str) -> HttpResponse:
    """One model: its configuration, figures, card, alignment figure, learning curve and reliability diagram (if it
    has them) and training curves."""
    model = get_object_or_404(models_visible_to(request.user), name=name)
    history = model.metrics.get("history") or []
    card = card_for(name=model.name, task=model.task)
    context = {"model": model, "history": history, "card": card, "alignment": alignment_for(folder=model.folder),
               "learning_curve": learning_curve_for(folder=model.folder),
               "reliability": reliability_for(folder=model.folder, checkpoint_hash=model.checkpoint_hash),
               "coverage": coverage_for(folder=model.folder)}
    return render(request, "registry/detail.html", context)


@signed_in
def model_knows(request: HttpRequest, name: str) -> HttpResponse:
    """The fragment that marks the words of ?source= this model does not know, with what it was trained on."""
    model = get_object_or_404(models_visible_to(request.user), name=name)
    try:
        context = model_knowledge(model=model, source=request.GET.get("source", ""))
    except RegistryError as error:
        return render(request, "registry/partials/knowledge.html", {"model": model, "error": str(error)}, status=400)
    return render(request, "registry/partials/knowledge.html", context)


@admins_only
@require_POST
def model_publish(request: HttpRequest, name: str) -> HttpResponse:
    """Publish or unpublish (POST published=1|0); answers the row fragment for htmx."""
    model = get_object_or_404(TrainedModel, name=name)
    model_set_published(model=model, published=request.POST.get("published") == "1")
    return render(request, "registry/partials/publish.html", {"model": model})
