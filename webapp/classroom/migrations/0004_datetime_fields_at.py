"""Every datetime field named *_at (issue 26): the same columns' data, renamed."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("classroom", "0003_answer_time_and_session_activity")]

    operations = [
        migrations.RenameField("livesession", "created", "created_at"),
        migrations.RenameField("livesession", "started", "started_at"),
        migrations.RenameField("livesession", "ended", "ended_at"),
        migrations.RenameField("livesession", "last_active", "last_active_at"),
        migrations.RenameField("participant", "joined", "joined_at"),
        migrations.RenameField("participant", "last_seen", "last_seen_at"),
        migrations.RenameField("question", "created", "created_at"),
        migrations.RenameField("question", "revealed", "revealed_at"),
        migrations.RenameField("answer", "at", "answered_at"),
        migrations.RenameField("run", "started", "started_at"),
        migrations.RenameField("run", "ended", "ended_at"),
        migrations.AlterModelOptions(
            name="livesession",
            options={"ordering": ["-created_at"], "verbose_name": "live session", "verbose_name_plural": "live sessions"},
        ),
        migrations.AlterModelOptions(
            name="participant",
            options={"ordering": ["joined_at"], "verbose_name": "participant", "verbose_name_plural": "participants"},
        ),
        migrations.AlterModelOptions(
            name="question",
            options={"ordering": ["created_at"], "verbose_name": "question", "verbose_name_plural": "questions"},
        ),
        migrations.AlterModelOptions(
            name="run",
            options={"ordering": ["started_at"], "verbose_name": "run", "verbose_name_plural": "runs"},
        ),
    ]
