"""The classroom's pages: the list, joining, the student view, the console, the history and its CSV."""
from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from webapp.accounts.lockout import client_ip
from webapp.accounts.permissions import instructors_only, signed_in
from webapp.accounts.roles import Role, has_role
from webapp.classroom import services, session_run
from webapp.classroom.codes import LENGTH, looks_like_code, normalize_code
from webapp.classroom.errors import ClassroomError
from webapp.classroom.history import answers_csv_text, results_by_student, session_history
from webapp.classroom.models import VIEWS, LiveSession
from webapp.classroom.plans import console_plans
from webapp.classroom.steps import screens
from webapp.playground.examples import examples_for
from webapp.playground.protocol import MAX_BEAMS
from webapp.playground.strings import page_strings


class NewSessionForm(forms.Form):
    title = forms.CharField(label=gettext_lazy("Title"), max_length=120)
    model = forms.ChoiceField(label=gettext_lazy("Model"))

    def __init__(self, *args: Any, models: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [(m.name, m.name) for m in models]


class JoinForm(forms.Form):
    code = forms.CharField(label=gettext_lazy("Join code"), max_length=20)

    def __init__(self, *args: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request = request
        self.throttled = False

    def clean_code(self) -> str:
        code = normalize_code(self.cleaned_data["code"])
        if not looks_like_code(code):
            raise forms.ValidationError(_("A join code has %(n)s letters and digits, as shown on the projector.")
                                        % {"n": LENGTH})
        try:
            session = _by_code(self.request, code)
        except services.JoinThrottled as refusal:
            self.throttled = True
            raise forms.ValidationError(TOO_MANY_CODES()) from refusal
        if session is None:
            raise forms.ValidationError(_("No session has this code. Check it on the projector."))
        if not session.live:
            raise forms.ValidationError(_("This session has ended."))
        return code


def TOO_MANY_CODES() -> str:  # noqa: N802 (a message, read in the reader's language)
    return _("Too many wrong join codes came from you or your network. Wait a minute, then try again.")


def _by_code(request: HttpRequest | None, code: str) -> LiveSession | None:
    """The session a typed or followed code names, throttled per user and client address (JoinThrottled)."""
    if request is None:
        return services.session_by_code(code)
    return services.session_by_code_throttled(code, user_id=request.user.pk, address=client_ip(request))


class Throttled(Exception):
    pass


def _session_or_404(request: HttpRequest, code: str) -> LiveSession:
    from django.http import Http404

    try:
        session = _by_code(request, code)
    except services.JoinThrottled as refusal:
        raise Throttled from refusal
    if session is None:
        raise Http404(_("No session has this code."))
    return session


def _throttled_page(request: HttpRequest, code: str) -> HttpResponse:
    """The list, its join box holding the code and saying why it was not looked up."""
    form = JoinForm({"code": code})
    form.cleaned_data, form._errors = {}, ErrorDict()
    form.add_error(None, TOO_MANY_CODES())
    return _list_page(request, join_form=form, status=429)


def by_code(view: Any) -> Any:
    """A view addressed by a join code: past the throttle, the list page says so (429) instead of the page."""
    from functools import wraps

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except Throttled:
            return _throttled_page(request, kwargs.get("code", ""))

    return wrapped


def _list_page(request: HttpRequest, *, join_form: JoinForm | None = None,
               new_form: NewSessionForm | None = None, status: int = 200) -> HttpResponse:
    """The list: join by code, the sessions one sat in; for instructors their sessions and the new-session form."""
    teaches = has_role(request.user, Role.INSTRUCTOR)
    context: dict[str, Any] = {"teaches": teaches, "join_form": join_form or JoinForm(),
                               **services.sessions_for(request.user)}
    if teaches:
        context["new_form"] = new_form or NewSessionForm(models=services.session_models(request.user))
    return render(request, "classroom/index.html", context, status=status)


@signed_in
def index(request: HttpRequest) -> HttpResponse:
    return _list_page(request)


@instructors_only
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    """POST makes a session and opens its console; GET (a typed or bookmarked address) shows the list's form."""
    if request.method == "GET":
        return _list_page(request)
    form = NewSessionForm(request.POST, models=services.session_models(request.user))
    if form.is_valid():
        try:
            session = services.session_create(instructor=request.user, title=form.cleaned_data["title"],
                                              model_name=form.cleaned_data["model"])
        except ClassroomError as error:
            if error.code == "too_many_sessions":
                form.add_error(None, _("You have %(n)s live sessions, the most one instructor may have at once. "
                                       "End one (its console's End button) before you start another; a session "
                                       "left without activity for %(hours)s hours ends by itself.")
                               % {"n": settings.CLASSROOM_LIVE_SESSIONS_PER_INSTRUCTOR,
                                  "hours": settings.CLASSROOM_IDLE_HOURS})
            else:
                form.add_error("model", error.message)
        else:
            return redirect("classroom:console", code=session.code)
    return _list_page(request, new_form=form, status=400)


@signed_in
def join(request: HttpRequest) -> HttpResponse:
    """The join box: a good code goes to the session, a bad one back to the list with why."""
    form = JoinForm(request.GET or request.POST or None, request=request)
    if form.is_valid():
        return redirect("classroom:follow", code=form.cleaned_data["code"])
    return _list_page(request, join_form=form, status=429 if form.throttled else 400 if form.is_bound else 200)


@signed_in
@by_code
def follow(request: HttpRequest, code: str) -> HttpResponse:
    """A participant's screen: the instructor's tokens, views and questions, live."""
    session = _session_or_404(request, code)
    if not session.live:
        drives = services.can_drive(request.user, session)
        if drives or services.is_participant(request.user, session):
            messages.info(request, _ended_note(session, drives=drives))
            return redirect("classroom:history", code=session.code)
        return render(request, "classroom/ended.html", {"session": session}, status=410)
    services.session_join(user=request.user, session=session)
    context = {"session": session, "strings": _strings(), "fork_url": "/playground/",
               "idle_hours": settings.CLASSROOM_IDLE_HOURS}
    return render(request, "classroom/follow.html", context)


@signed_in
@by_code
def console(request: HttpRequest, code: str) -> HttpResponse:
    """The instructor's console: model, input, strategy, Run/Step/Cancel, views, questions, presence."""
    session = _driven(request, code)
    if not session.live:
        return redirect("classroom:history", code=session.code)
    services.session_touch(session)
    join_url = request.build_absolute_uri(f"/classroom/{session.code}/")
    models = services.session_models(request.user)
    chosen = next((m for m in models if m.name == session.model_name), None)
    context = {
        "session": session, "join_url": join_url, "qr": services.qr_svg(join_url), "models": models,
        "examples": examples_for(chosen.task) if chosen else [], "views": VIEWS, "strings": _strings(),
        "max_chars": settings.PLAYGROUND_MAX_SOURCE_CHARS, "max_beams": MAX_BEAMS,
        "idle_hours": settings.CLASSROOM_IDLE_HOURS, **_lesson_controls(request),
        "session_plan": str(session.plan_id) if session.plan_id else "",
    }
    return render(request, "classroom/console.html", context)


def _lesson_controls(request: HttpRequest) -> dict[str, Any]:
    """What the console's lesson controls list: each page with its parts (and their demonstrations) and exercises."""
    from webapp.lesson import content
    from webapp.lesson.parts import lesson_parts
    from webapp.lesson.services import DEFAULT_SENTENCE, DEMO_MAX_CHARS

    pages = [{"slug": page, "title": str(content.PAGE_TITLES[page]), "parts": parts,
              "exercises": content.exercises(page, [])} for page, parts in lesson_parts().items()]
    return {"lesson_parts": pages, "default_sentence": DEFAULT_SENTENCE, "demo_max_chars": DEMO_MAX_CHARS,
            "console_plans": console_plans(request.user)}


@signed_in
@require_http_methods(["GET", "POST"])
@by_code
def end(request: HttpRequest, code: str) -> HttpResponse:
    """GET asks first (the console's End button opens this question, or its dialog asks it on the page); POST ends the
    session: a decode still running is cancelled and kept in the history, and every screen is told who ended it."""
    session = _driven(request, code)
    if not session.live:
        return redirect("classroom:history", code=session.code)
    if request.method == "GET":
        return render(request, "classroom/end.html", {"session": session})
    session_run.session_end_keeping_run(session=session)
    from webapp.classroom.relay import event_message, session_group
    from webapp.realtime.feed import publish

    publish([(session_group(session.code), event_message({"type": "ended", "reason": session.end_reason}))])
    messages.success(request, _("You ended the session. Here is what happened in it."))
    return redirect("classroom:history", code=session.code)


def _ended_note(session: LiveSession, *, drives: bool) -> str:
    if session.end_reason == LiveSession.ENDED_IDLE:
        return _("This session ended by itself after %(hours)s hours without activity: here is what happened in it.") % {
            "hours": settings.CLASSROOM_IDLE_HOURS}
    if not drives:
        return _("The instructor ended this session: here is what happened in it.")
    return _("This session has ended: here is what happened in it.")


def _driven(request: HttpRequest, code: str) -> LiveSession:
    """The session, for its instructor and admins; 404 for a wrong code, 403 for anyone else."""
    session = _session_or_404(request, code)
    if not services.can_drive(request.user, session):
        raise PermissionDenied(_("Only this session's instructor drives it."))
    return session


def _may_read(request: HttpRequest, session: LiveSession) -> None:
    if not (services.can_drive(request.user, session) or services.is_participant(request.user, session)):
        raise PermissionDenied(_("Only this session's instructor and participants can read its history."))


@signed_in
@by_code
def history(request: HttpRequest, code: str) -> HttpResponse:
    """Replay a session: each run's tokens, each question with its answer counts and the model's answer."""
    session = _session_or_404(request, code)
    _may_read(request, session)
    drives = services.can_drive(request.user, session)
    context = {"session": session, "drives": drives, "strings": _strings(),
               "ended_idle": session.end_reason == LiveSession.ENDED_IDLE, "idle_hours": settings.CLASSROOM_IDLE_HOURS,
               "by_student": results_by_student(session) if drives else None,
               **session_history(session, request.user)}
    return render(request, "classroom/history.html", context)


@signed_in
@by_code
def answers_csv(request: HttpRequest, code: str) -> HttpResponse:
    session = _driven(request, code)
    response = HttpResponse(answers_csv_text(session), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="classroom-{session.code}-answers.csv"'
    return response


@signed_in
@by_code
def demo(request: HttpRequest, code: str) -> HttpResponse:
    """The demonstration the console ran for the class, drawn as the lesson page draws a student's own, in this
    reader's language: from the session's state, never a worker (it was computed once, for everyone)."""
    session = _session_or_404(request, code)
    _may_read(request, session)
    shown = session.run_state.demo
    if not shown:
        return render(request, "classroom/partials/no_demo.html")
    key = ("demo", session.code, shown["n"], get_language())  # as the screens' frames carry it: rendered once
    return HttpResponse(screens.html_kept(key) or screens.html_render(key, request.user, shown))


def _strings() -> dict[str, Any]:
    """The pages' script messages, in the reader's language; the views' own come from the playground."""
    return {
        **page_strings(),
        "live": _("Live"),
        "ended": _("The session has ended."),
        "waiting": _("Waiting for the instructor to run the model…"),
        "running": _("The model is decoding: {n} tokens so far."),
        "stepping": _("Step by step: {n} tokens so far."),
        "done": _("Done: {n} tokens."),
        "present": _("{n} present"),
        "answered": _("{n} answered"),
        "your_answer": _("Your answer: {answer}"),
        # A reveal says whose answer it gives: the lesson's, the training's, the instructor's or the model's.
        "reveals": {
            "exercise": _("The lesson's answer is {answer}."),
            "experiment": _("{answer} ended with the lowest training loss (last losses: {losses})."),
            "instructor": _("The instructor's answer is {answer}."),
            "model": _("The model chose {answer}."),
        },
        "right": _("Right! {whose}"),
        "wrong": _("Not this time. {whose}"),
        "no_answer": _("You did not answer. {whose}"),
        "diverged": _("diverged"),
        "revealed": _("Revealed."),
        "reveal_waits": _("Reveal waits for the experiment's result."),
        "experiment_queued": _("The experiment waits for a worker…"),
        "experiment_training": _("The experiment is training on a worker: {p} %"),
        "experiment_in": _("The result is in (it trained for {s} s)."),
        "experiment_in_kept": _("The result is in (kept from an earlier run of the same settings)."),
        "experiment_failed": _("The experiment failed on its worker: it cannot be revealed."),
        "plan_working": _("Doing this step…"),
        "query_console": _("The instructor picks the query token for the class."),
        "plan_refused": _("Not done: {why}"),
        "score": _("Your score: {n}"),
        "answer_label": _("answers"),
        "yes": _("yes"),
        "no": _("no"),
        "type_token": _("or type a token"),
        "demo_running": _("The instructor is running the demonstration on the model…"),
        "demo_refused": _("The demonstration could not run; the instructor was told why."),
        "demo_from": _("Run for the class on {model}."),
        "lesson_failed": _("This part of the lesson could not be loaded."),
        "explanation": _("Why: {text}"),
        "plan_none": _("No plan: the controls below are yours."),
        "plan_step": _("Step {n} of {total}: {what}"),
        "plan_done": _("The plan is done ({total} steps)."),
        "plan_lesson": _("show {what}"),
        "plan_demo": _("run the demonstration of “{kind}” on {sentence}"),
        "plan_exercise": _("ask the exercise “{what}”"),
        "plan_experiment": _("predict the experiment “{what}”"),
        "plan_question": _("ask “{what}”"),
        "plan_decode": _("decode {what}"),
        "plan_step_mode": _("decode {what} step by step"),
        "experiment_waiting": _("The experiment is training on a worker. Predict its outcome: its curves come with the reveal."),
        "experiment_result": _("The experiment's result: each arm's training loss, measured just now on a worker."),
        "replayed": _("Its loss curves are replayed step by step."),
        "experiment_kept_on": _("The experiment's result: each seed's training loss, measured before this question on "
                                "{machine} and kept (the same settings give the same curves on that machine; another "
                                "machine's arithmetic can end them a little differently)."),
        "experiment_kept": _("The experiment's result: each arm's training loss, measured on a worker before this "
                             "question and kept (the same settings give the same curves on that machine; another "
                             "machine's arithmetic can end them a little differently)."),
        "send": _("Answer"),
        # Add my seed: a student's own seed of a revealed comparison (steps/seeds.py).
        "seeds_counts": _("Seeds the class added: {added} in, {pending} training; {left} more allowed in this "
                          "session."),
        "seeds_closed": _("The instructor has closed adding seeds."),
        "seed_training": _("Your seed {seed} is training on a worker…"),
        "seed_in": _("Your seed {seed} is in the plot."),
        "seed_failed": _("Your seed {seed} failed on its worker."),
        "seeds_close": _("Close adding seeds"),
        "seeds_reopen": _("Reopen adding seeds"),
        "seeds_in_plot": _("The experiment's result with the seeds the class added: each seed's training loss faint, "
                           "the mean bold."),
        "kinds": {
            "next_token": _("What is the next token?"),
            "attention": _("Which source token will the next token attend to most?"),
            "stop": _("Will the model stop here?"),
            "choice": _("Question"),
            "exercise": _("Exercise"),
            "experiment": _("Predict the experiment"),
        },
        "error_codes": {
            "not_finished": _("the experiment has not finished: reveal it when its result is in"),
            "forbidden": _("only the instructor can do that"),
            "already_answered": _("you already answered this question"),
            "revealed": _("the answer was revealed: answers are closed"),
            "not_open": _("this question is not open"),
            "not_stepping": _("start a step-by-step decode first (Step)"),
            "not_stepped": _("the step has not arrived yet"),
            "question_open": _("reveal or close the open question first"),
            "not_revealed": _("a seed is added to a comparison over seeds once it is revealed, while it is on the "
                              "screens"),
            "seeds_closed": _("the instructor has closed adding seeds"),
            "seeds_full": _("this session has had all the seeds it may add"),
            "seed_pending": _("your seed is still training: add another once it is in"),
            "quota": _("you have used your experiment runs for today"),
        },
    }
