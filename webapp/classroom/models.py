"""A live session, who joined it, its questions and one answer per participant per question, and its runs."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

VIEWS = ("cross", "self", "encoder", "topk", "beams", "kv")  # what the console may show the students
DEFAULT_VIEWS = ["cross", "topk"]


def default_state() -> dict[str, Any]:
    return {"source": "", "params": {"strategy": "greedy"}, "views": list(DEFAULT_VIEWS), "layer": None,
            "head": "mean", "request_id": None, "tokens": []}


class LiveSession(models.Model):
    """One class: the instructor drives the model, every participant's screen follows."""

    instructor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="led_sessions")
    title = models.CharField(max_length=120)
    model_name = models.CharField(max_length=80, help_text="The registry model the session decodes with.")
    code = models.CharField(max_length=12, unique=True)
    state = models.JSONField(default=default_state, help_text="Source, parameters, views, current request, tokens.")
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    ended = models.DateTimeField(null=True, blank=True)
    last_active = models.DateTimeField(default=timezone.now, db_index=True,
                                       help_text="The last time it was driven or joined; idle too long, it ends.")
    end_reason = models.CharField(max_length=16, blank=True, help_text="Why it ended: instructor or idle.")

    ENDED_BY_INSTRUCTOR, ENDED_IDLE = "instructor", "idle"

    class Meta:
        ordering = ["-created"]
        verbose_name = _("live session")
        verbose_name_plural = _("live sessions")

    def __str__(self) -> str:
        return f"{self.title} ({self.code})"

    @property
    def live(self) -> bool:
        return self.ended is None


class Participant(models.Model):
    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="classroom_seats")
    joined = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)
    present = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "user"], name="one_seat_per_user")]
        ordering = ["joined"]
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
    created = models.DateTimeField(auto_now_add=True)
    revealed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created"]
        verbose_name = _("question")
        verbose_name_plural = _("questions")


class Answer(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="answers")
    choice = models.CharField(max_length=200)
    correct = models.BooleanField(null=True)
    at = models.DateTimeField(default=timezone.now, help_text="When the student answered (not when the question closed).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["question", "participant"], name="one_answer_each")]
        verbose_name = _("student answer")
        verbose_name_plural = _("student answers")


class Run(models.Model):
    """One decode of the session, kept for its history: what went in and every frame that came out."""

    session = models.ForeignKey(LiveSession, on_delete=models.CASCADE, related_name="runs")
    request_id = models.CharField(max_length=64, unique=True)
    source = models.TextField()
    params = models.JSONField(default=dict)
    frames = models.JSONField(default=list)
    text = models.TextField(blank=True)
    reason = models.CharField(max_length=32, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    ended = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started"]
        verbose_name = _("run")
        verbose_name_plural = _("runs")
