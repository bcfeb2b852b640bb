"""The classroom's Run is a Transcript (issue 44: one meaning per name; a Run is a queued job, webapp.ops.jobs.Run).
The same table's rows, renamed; the session reaches them as `transcripts`."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("classroom", "0006_added_seeds")]

    operations = [
        migrations.RenameModel("Run", "Transcript"),
        migrations.AlterModelOptions(
            name="transcript",
            options={"ordering": ["started_at"], "verbose_name": "run transcript",
                     "verbose_name_plural": "run transcripts"},
        ),
        migrations.AlterField(
            model_name="transcript",
            name="session",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="transcripts",
                                    to="classroom.livesession"),
        ),
    ]
