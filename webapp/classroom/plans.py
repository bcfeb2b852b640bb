"""Lesson plans: an instructor's ordered steps for a class (lesson parts, demonstrations, exercises, decodes,
questions, experiments), checked by the rules the console's frames are checked by, kept, duplicated, exported and
imported as JSON. The console steps through one (static/js/classroom.js), sending each step's frame as the console's
own controls would; `whole-lesson.json` is the plan that ships with the app.

The JSON form (docs/instructor-guide.md, "Lesson plans"):
    {"format": "encdec-lesson-plan", "version": 1, "title": "...", "steps": [{"do": "lesson", ...}, ...]}
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext, gettext_noop

from webapp.classroom.errors import ClassroomError
from webapp.classroom.frames import parse_run
from webapp.classroom.models import Answer, LessonPlan, LiveSession
from webapp.classroom.questions import parse_question
from webapp.classroom.steps.comparisons import comparison_checked
from webapp.classroom.steps.demos import demo_checked
from webapp.classroom.steps.exercises import exercise_checked
from webapp.classroom.steps.parts import part_checked

FORMAT, VERSION = "encdec-lesson-plan", 1
MAX_STEPS = 100
MAX_NOTE = 300
SHIPPED = Path(__file__).resolve().parent / "data" / "whole-lesson.json"


class PlanError(ValueError):
    """A plan that does not hold: `problems` names each (the step's number, from 1, and what is wrong)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _step(step: Any) -> dict[str, Any]:
    """One step, checked as the console's frame for it is checked; ClassroomError saying what is wrong."""
    if not isinstance(step, dict):
        raise ClassroomError("bad_params", "a step is an object with a `do` field")
    do, note = step.get("do"), step.get("note", "")
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise ClassroomError("bad_params", f"a note is text of at most {MAX_NOTE} characters")
    fields = {k: v for k, v in step.items() if k not in ("do", "note")}
    if "type" in fields:  # a step's frame type is its `do`: a plan cannot name another
        raise ClassroomError("bad_params", "unknown field 'type' (a step's kind is its `do`)")
    check = STEP_CHECKS.get(do)
    if check is None:
        raise ClassroomError("bad_params", f"`do` is one of: {', '.join(STEP_CHECKS)}")
    check(fields)
    return {"do": do, **fields, **({"note": note} if note else {})}


# Each step kind checked by the function that checks the console's frame for it.
STEP_CHECKS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "lesson": part_checked, "demo": demo_checked, "exercise": exercise_checked, "experiment": comparison_checked,
    "question": parse_question, "decode": lambda fields: parse_run(fields, "any", {"head": "mean"}),
}


STEP_QUESTIONS = ("next_token", "attention", "stop")  # questions about a step-by-step decode's next step


def plan_steps(steps: Any) -> list[dict[str, Any]]:
    """The plan's steps, each checked, and their order: a question about the model's next step needs a step-by-step
    decode before it (the console refuses it otherwise); PlanError listing every step that does not hold."""
    if not isinstance(steps, list) or not 1 <= len(steps) <= MAX_STEPS:
        raise PlanError([f"a plan has 1 to {MAX_STEPS} steps in a list"])
    checked, problems = [], []
    stepping = False  # the last decode before this step runs step by step
    for number, step in enumerate(steps, 1):
        try:
            checked.append(_step(step))
        except ClassroomError as error:
            problems.append(f"step {number}: {error.message}")
            continue
        if step["do"] == "decode":
            stepping = bool(step.get("step_mode"))
        elif step["do"] == "question" and step.get("kind") in STEP_QUESTIONS and not stepping:
            problems.append(f"step {number}: a {step['kind']} question is about a step-by-step decode's next step: "
                            "put a decode with \"step_mode\": true before it")
    if problems:
        raise PlanError(problems)
    return checked


def plan_json(text: str) -> Any:
    """A plan's JSON text parsed; PlanError for what is not JSON, nests too deep or holds a number too long to read
    (Python's own limits: RecursionError, ValueError), which would otherwise end the request in a 500."""
    try:
        return json.loads(text)
    except RecursionError:
        raise PlanError(["not JSON a plan can hold: nested too deep"]) from None
    except ValueError as error:  # JSONDecodeError, a lone surrogate, an integer of more than 4,300 digits
        raise PlanError([f"not JSON: {str(error)[:120]}"]) from None


def plan_from_json(text: str) -> tuple[str, list[dict[str, Any]]]:
    """An exported plan's title and checked steps; PlanError for anything else."""
    data = plan_json(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise PlanError([f'not a lesson plan: the file needs "format": "{FORMAT}" and "version": {VERSION}'])
    title = data.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > 120:
        raise PlanError(["a plan's title is text of 1 to 120 characters"])
    return title.strip(), plan_steps(data.get("steps"))


def plan_to_json(title: str, steps: list[dict[str, Any]]) -> str:
    return json.dumps({"format": FORMAT, "version": VERSION, "title": title, "steps": steps}, ensure_ascii=False,
                      indent=1) + "\n"


@functools.lru_cache(maxsize=1)
def shipped_plan() -> tuple[str, tuple[dict[str, Any], ...]]:
    """The plan that ships with the app (the whole lesson), checked as any imported plan is."""
    title, steps = plan_from_json(SHIPPED.read_text(encoding="utf-8"))
    return title, tuple(steps)


def plans_of(user: Any) -> QuerySet[LessonPlan]:
    return LessonPlan.objects.filter(owner=user).order_by("title", "pk")


# The shipped plan's title and notes, which its JSON holds in English: the console shows them in its own language
# (an exported or duplicated copy keeps the English, as the instructor will edit it).
SHIPPED_TEXTS = (gettext_noop("The whole lesson"),
                 gettext_noop("Press Step a few times, then Do this step asks the class for the next token."))


def console_plans(user: Any) -> list[dict[str, Any]]:
    """What the console steps through: the shipped plan (in the reader's language), then the instructor's own."""
    title, steps = shipped_plan()
    shown = [{**step, "note": gettext(step["note"])} if step.get("note") else step for step in steps]
    return [{"id": "shipped", "title": gettext(title), "steps": shown},
            *({"id": str(p.pk), "title": p.title, "steps": p.steps} for p in plans_of(user))]


def plan_save(*, owner: Any, title: str, steps: Any, plan: LessonPlan | None = None) -> LessonPlan:
    """Create (or change) a plan; PlanError when its steps do not hold."""
    checked = plan_steps(steps)
    plan = plan or LessonPlan(owner=owner)
    plan.title, plan.steps = title.strip()[:120], checked
    plan.save()
    return plan


def plan_duplicate(*, owner: Any, plan: LessonPlan | None) -> LessonPlan:
    """A copy the owner can change: of their plan, or of the shipped one (None)."""
    title, steps = (plan.title, plan.steps) if plan is not None else (shipped_plan()[0], list(shipped_plan()[1]))
    return LessonPlan.objects.create(owner=owner, title=f"{title} (copy)"[:120], steps=list(steps))


def plan_results(plan: LessonPlan) -> list[dict[str, Any]]:
    """Each session taught with the plan: its questions, answers and right answers (newest first)."""
    rows = []
    for session in LiveSession.objects.filter(plan=plan).order_by("-created_at"):
        answers = Answer.objects.filter(question__session=session)
        given, right = answers.count(), answers.filter(correct=True).count()
        rows.append({"session": session, "asked": session.questions.count(), "answers": given, "right": right,
                     "students": session.participants.count(), "share": round(100 * right / given) if given else None})
    return rows

def plan_choose(*, session: LiveSession, user: Any, frame: dict[str, Any]) -> None:
    """A console's `plan` frame: the session is taught with this plan of the instructor's (its results gather on the
    plan's page), or with none (`null`, or the shipped plan, which is nobody's to gather)."""
    chosen = frame.get("plan")
    plan = None
    if chosen not in (None, "", "shipped"):
        number = str(chosen) if isinstance(chosen, (str, int)) and not isinstance(chosen, bool) else ""
        if not re.fullmatch(r"[0-9]{1,12}", number):  # ASCII digits only: "²" is a digit to str.isdigit, not to int
            raise ClassroomError("bad_params", "plan must be a plan's number, \"shipped\" or null")
        plan = LessonPlan.objects.filter(owner=user, pk=int(number)).first()
        if plan is None:
            raise ClassroomError("bad_params", "you have no lesson plan with this number")
    session.plan = plan
    session.save(update_fields=["plan"])
