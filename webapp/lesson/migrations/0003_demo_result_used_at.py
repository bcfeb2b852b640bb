import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("lesson", "0002_drop_demo_results_before_isolation")]

    operations = [
        migrations.AddField(
            model_name="demoresult",
            name="used_at",
            field=models.DateTimeField(auto_now_add=True, db_index=True, default=django.utils.timezone.now,
                                       help_text="Last asked for: the cache keeps the recently used (lesson.services)."),
            preserve_default=False,
        ),
    ]
