"""A live session, who joined it, its questions and one answer per participant per question, and its runs' transcripts."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

VIEWS = ("cross", "self", "encoder", "topk", "beams", "kv")  # what the console may show the students
DEFAULT_VIEWS = ["cross", "topk"]


@dataclass(frozen=True)
class SessionState:
    """What a live session shows and runs now, as `LiveSession.state` stores it (a JSON object of these keys).

    Read it with `session.run_state`; write it only with `services.session_state_update`.
    """

    source: str = ""  # the current (or last) run's source
    params: dict[str, Any] = field(default_factory=lambda: {"strategy": "greedy"})  # its decode parameters
    views: list[str] = field(default_factory=lambda: list(DEFAULT_VIEWS))  # what every screen shows
    layer: int | None = None  # the attention's decoder layer (None: the last)
    encoder_layer: int | None = None  # the encoder's (None: the last)
    head: int | str = "mean"  # a head's index, or "mean"
    request_id: str | None = None  # the current (or last) run
    running: bool = False  # that run is decoding now
    tokens: list[str] = field(default_factory=list)  # its output tokens, once it ended
    driver: int | None = None  # the user who started it (their decode slot)
    # The lesson part on every screen ({"page", "part"}) and the demonstration run for the class there ({"kind",
    # "model", "params", "result", "cached"}, or None): see docs/classroom-socket.md, `lesson` and `demo`.
    lesson: dict[str, Any] | None = None
    demo: dict[str, Any] | None = None
    # The question last revealed (on every screen with its answer while it is the session's latest question); and the
    # experiment question whose result is in the lesson's panel (until a part or a demonstration replaces it).
    revealed: int | None = None
    experiment_shown: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> SessionState:
        """The stored object; a key it lacks takes its default, one it does not know is left out."""
        data = data or {}
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def changed(self, **changes: Any) -> SessionState:
        """A copy with these fields changed (TypeError for a field it does not have)."""
        return replace(self, **changes)

    @property
    def running_request(self) -> str | None:
        """The run decoding now, if any."""
        return self.request_id if self.running and self.request_id else None

    @property
    def stepping(self) -> bool:
        """A step-by-step run is decoding now (the console's Step and model questions need one)."""
        return bool(self.running and self.params.get("step_mode"))

    def attention_view(self) -> dict[str, Any]:
        """The session's layers and head as a decode's `view` (docs/protocol.md); absent: the last layers."""
        view = {name: getattr(self, name) for name in ("layer", "encoder_layer") if getattr(self, name) is not None}
        return {**view, "head": self.head}


def default_state() -> dict[str, Any]:
    return SessionState().to_json()


class LessonPlan(models.Model):
    """An instructor's ordered steps for a class, checked by webapp/classroom/plans.py (its JSON form there)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lesson_plans")
    title = models.CharField(max_length=120)
    steps = models.JSONField(default=list, help_text="The steps, in order: {do: lesson|demo|exercise|experiment|"
                                                     "question|decode, ...}.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "pk"]
        verbose_name = _("lesson plan")
        verbose_name_plural = _("lesson plans")

    def __str__(self) -> str:
        return self.title


class LiveSession(models.Model):
    """One class: the instructor drives the model, every participant's screen follows."""

    instructor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="led_sessions")
    title = models.CharField(max_length=120)
    model_name = models.CharField(max_length=80, help_text="The registry model the session decodes with.")
    code = models.CharField(max_length=12, unique=True)
    state = models.JSONField(default=default_state, help_text="Source, parameters, views, current request, tokens.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_active_at = models.DateTimeField(default=timezone.now, db_index=True,
                                          help_text="The last time it was driven or joined; idle too long, it ends.")
    end_reason = models.CharField(max_length=16, blank=True, help_text="Why it ended: instructor or idle.")
    plan = models.ForeignKey(LessonPlan, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions",
                             help_text="The lesson plan it was taught with, if any.")
    seeds_open = models.BooleanField(default=True, help_text="Students may add their own seed to a revealed "
                                                             "comparison (the console closes and reopens it).")

    ENDED_BY_INSTRUCTOR, ENDED_IDLE = "instructor", "idle"

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("live session")
        verbose_name_plural = _("live sessions")

    def __str__(self) -> str:
        return f"{self.title} ({self.code})"

    @property
    def live(self) -> bool:
        return self.ended_at is None

    @property
    def run_state(self) -> SessionState:
        """`state`, typed (every reader goes through it)."""
        return SessionState.from_json(self.state)


class Participant(models.Model):
    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="classroom_seats")
    joined_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)
    present = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "user"], name="one_seat_per_user")]
        ordering = ["joined_at"]
        verbose_name = _("participant")
        verbose_name_plural = _("participants")

    def __str__(self) -> str:
        return f"{self.user} in {self.session.code}"


class Question(models.Model):
    NEXT_TOKEN = "next_token"
    ATTENTION = "attention"
    STOP = "stop"
    CHOICE = "choice"
    KINDS = [(NEXT_TOKEN, _("What is the next token?")), (ATTENTION, _("Which source token will it attend to most?")),
             (STOP, _("Will the model stop here?")), (CHOICE, _("Multiple choice"))]
    OPEN, REVEALED, CLOSED = "open", "revealed", "closed"

    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="questions")
    kind = models.CharField(max_length=16, choices=KINDS)
    prompt = models.CharField(max_length=300, blank=True)
    options = models.JSONField(default=list, help_text="What students pick from (empty: typed answers too).")
    request_id = models.CharField(max_length=64, blank=True)
    seq = models.IntegerField(null=True, blank=True, help_text="The step the question is about.")
    layer = models.IntegerField(null=True, blank=True)
    head = models.CharField(max_length=8, default="mean")
    status = models.CharField(max_length=10, default=OPEN)
    answer = models.CharField(max_length=200, blank=True)
    exercise = models.CharField(max_length=40, blank=True, help_text="The lesson exercise it asks, if any.")
    training_run = models.ForeignKey("lesson.TrainingRun", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+", help_text="The lesson training comparison it predicts, if any.")
    experiment_run = models.ForeignKey("experiments.ExperimentRun", null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+", help_text="The experiments page's comparison it predicts.")
    created_at = models.DateTimeField(auto_now_add=True)
    revealed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name = _("question")
        verbose_name_plural = _("questions")


class Answer(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="answers")
    choice = models.CharField(max_length=200)
    correct = models.BooleanField(null=True)
    answered_at = models.DateTimeField(default=timezone.now, help_text="When the student answered (not when the question closed).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["question", "participant"], name="one_answer_each")]
        verbose_name = _("student answer")
        verbose_name_plural = _("student answers")


class Transcript(models.Model):
    """The record of one run (decode) of the session, kept for its history: what went in and every frame that came
    out. session_run.py owns the run itself and writes this; a queued job is something else (webapp.ops.jobs.Run)."""

    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="transcripts")
    request_id = models.CharField(max_length=64, unique=True)
    source = models.TextField()
    params = models.JSONField(default=dict)
    frames = models.JSONField(default=list)
    text = models.TextField(blank=True)
    reason = models.CharField(max_length=32, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at"]
        verbose_name = _("run transcript")
        verbose_name_plural = _("run transcripts")


class AddedSeed(models.Model):
    """A student's own seed of a revealed comparison ("Add my seed"): a one-seed sweep of the question's
    configuration on the experiments queue, merged into the class's result when it finishes
    (webapp/classroom/steps/seeds.py)."""

    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="added_seeds")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="added_seeds")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey("experiments.ExperimentRun", on_delete=models.CASCADE, related_name="+",
                            help_text="The one-seed sweep that trains it (or the stored one of the same seed).")
    seed = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    announced_at = models.DateTimeField(null=True, blank=True,
                                        help_text="When every screen was told it finished (once, by one process).")

    class Meta:
        ordering = ["pk"]
        constraints = [models.UniqueConstraint(fields=["question", "seed"], name="one_seed_once_per_question")]
        verbose_name = _("added seed")
        verbose_name_plural = _("added seeds")
