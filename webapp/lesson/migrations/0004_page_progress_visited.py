from django.db import migrations, models


class Migration(migrations.Migration):
    """A reveal alone no longer counts as a visit: rows made before are taken as visits (they were shown as such)."""

    dependencies = [("lesson", "0003_demo_result_used_at")]

    operations = [
        migrations.AddField(
            model_name="pageprogress",
            name="visited",
            field=models.BooleanField(default=True,
                                      help_text="The student opened the page (a reveal alone is no visit)."),
        ),
    ]
