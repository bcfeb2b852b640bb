from __future__ import annotations

from django.contrib import admin

from webapp.classroom.models import Answer, LessonPlan, LiveSession, Participant, Question, Transcript


class ParticipantInline(admin.TabularInline):
    model = Participant
    extra = 0
    readonly_fields = ("joined_at", "last_seen_at")


@admin.register(LiveSession)
class LiveSessionAdmin(admin.ModelAdmin):
    list_display = ("title", "code", "instructor", "model_name", "plan", "created_at", "ended_at")
    search_fields = ("title", "code", "instructor__username")
    inlines = [ParticipantInline]


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ("session", "kind", "seq", "status", "answer", "created_at")
    list_filter = ("kind", "status")


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ("question", "participant", "choice", "correct", "answered_at")


@admin.register(Transcript)
class TranscriptAdmin(admin.ModelAdmin):
    list_display = ("session", "request_id", "source", "text", "reason", "started_at")


@admin.register(LessonPlan)
class LessonPlanAdmin(admin.ModelAdmin):
    list_display = ("title", "owner", "updated_at")
    search_fields = ("title", "owner__username")
