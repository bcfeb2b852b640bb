"""The instructors' lesson plans: the list (with the shipped plan), one plan's page (its steps and its results
across sessions), duplicating, deleting, exporting and importing (webapp/classroom/plans.py)."""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from webapp.accounts.permissions import instructors_only
from webapp.classroom import plans
from webapp.classroom.models import LessonPlan

MAX_IMPORT_BYTES = 256 * 1024


class PlanForm(forms.Form):
    title = forms.CharField(label=gettext_lazy("Title"), max_length=120)
    steps = forms.CharField(label=gettext_lazy("Steps (JSON, one object per step)"),
                            widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false", "class": "plan-steps"}))

    def clean_steps(self) -> list[dict[str, Any]]:
        try:
            return plans.plan_steps(plans.plan_json(self.cleaned_data["steps"]))
        except plans.PlanError as error:
            raise forms.ValidationError(error.problems) from None


class ImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("A plan exported from here (JSON)"))

    def clean_file(self) -> tuple[str, list[dict[str, Any]]]:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            raise forms.ValidationError(_("The file is larger than %(n)s kB.") % {"n": MAX_IMPORT_BYTES // 1024})
        try:
            return plans.plan_from_json(upload.read().decode("utf-8", errors="strict"))
        except UnicodeDecodeError:
            raise forms.ValidationError(_("The file is not UTF-8 text.")) from None
        except plans.PlanError as error:
            raise forms.ValidationError(error.problems) from None


def _steps_text(steps: list[dict[str, Any]]) -> str:
    return json.dumps(steps, ensure_ascii=False, indent=1)


def _own(request: HttpRequest, pk: int) -> LessonPlan:
    """The signed-in instructor's plan (another's is not found, not forbidden: its existence is theirs)."""
    plan = plans.plans_of(request.user).filter(pk=pk).first()
    if plan is None:
        raise Http404(_("You have no lesson plan with this number."))
    return plan


def _list(request: HttpRequest, *, new_form: PlanForm | None = None, import_form: ImportForm | None = None,
          status: int = 200) -> HttpResponse:
    title, steps = plans.shipped_plan()
    context = {"plans": plans.plans_of(request.user), "shipped_title": title, "shipped_steps": len(steps),
               "new_form": new_form or PlanForm(initial={"steps": _steps_text(list(steps)[:3])}),
               "import_form": import_form or ImportForm()}
    return render(request, "classroom/plans.html", context, status=status)


@instructors_only
@require_http_methods(["GET", "POST"])
def plan_list(request: HttpRequest) -> HttpResponse:
    """GET: the instructor's plans and the shipped one; POST: a new plan from the form."""
    if request.method == "GET":
        return _list(request)
    form = PlanForm(request.POST)
    if not form.is_valid():
        return _list(request, new_form=form, status=400)
    plan = plans.plan_save(owner=request.user, title=form.cleaned_data["title"], steps=form.cleaned_data["steps"])
    messages.success(request, _("Your lesson plan is saved."))
    return redirect("classroom:plan", pk=plan.pk)


@instructors_only
@require_http_methods(["GET", "POST"])
def plan_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One plan: its steps to change, and the sessions taught with it."""
    plan = _own(request, pk)
    status = 200
    if request.method == "POST":
        form = PlanForm(request.POST)
        if form.is_valid():
            plans.plan_save(owner=request.user, title=form.cleaned_data["title"], steps=form.cleaned_data["steps"],
                            plan=plan)
            messages.success(request, _("Your lesson plan is saved."))
            return redirect("classroom:plan", pk=plan.pk)
        status = 400
    else:
        form = PlanForm(initial={"title": plan.title, "steps": _steps_text(plan.steps)})
    context = {"plan": plan, "form": form, "results": plans.plan_results(plan)}
    return render(request, "classroom/plan.html", context, status=status)


@instructors_only
@require_POST
def plan_duplicate(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """A copy to change: of one of the instructor's plans, or of the shipped one (no pk)."""
    copy = plans.plan_duplicate(owner=request.user, plan=_own(request, pk) if pk is not None else None)
    messages.success(request, _("This is your copy: change it and save."))
    return redirect("classroom:plan", pk=copy.pk)


@instructors_only
@require_http_methods(["GET", "POST"])
def plan_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks first (the plan's Delete opens this question); POST deletes."""
    plan = _own(request, pk)
    if request.method == "GET":
        return render(request, "classroom/plan_delete.html", {"plan": plan, "sessions": plan.sessions.count()})
    plan.delete()
    messages.success(request, _("The lesson plan “%(title)s” is deleted; its sessions' histories stay.") % {
        "title": plan.title})
    return redirect("classroom:plans")


@instructors_only
def plan_export(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """The plan as a JSON file (the shipped one without pk), to keep or to import elsewhere."""
    if pk is None:
        title, steps = plans.shipped_plan()
        name, body = "whole-lesson", plans.plan_to_json(title, list(steps))
    else:
        plan = _own(request, pk)
        name, body = f"lesson-plan-{plan.pk}", plans.plan_to_json(plan.title, plan.steps)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.json"'
    return response


@instructors_only
@require_POST
def plan_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _list(request, import_form=form, status=400)
    title, steps = form.cleaned_data["file"]
    plan = plans.plan_save(owner=request.user, title=title, steps=steps)
    messages.success(request, _("The lesson plan is imported."))
    return redirect("classroom:plan", pk=plan.pk)

