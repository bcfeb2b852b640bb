"""Every datetime field named *_at (issue 26): the same columns' data, renamed."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("lesson", "0006_run_help_texts")]

    operations = [
        migrations.RenameField("pageprogress", "first_visit", "first_visit_at"),
        migrations.RenameField("pageprogress", "last_visit", "last_visit_at"),
    ]
