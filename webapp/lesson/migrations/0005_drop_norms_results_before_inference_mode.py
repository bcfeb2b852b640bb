"""Drop the stored results of the norms demonstration: those written before it read the first norm's input and
showed BatchNorm's inference mode lack what its page now draws. They are recomputed on demand."""
from django.db import migrations


def drop_norms_results(apps, schema_editor):
    apps.get_model("lesson", "DemoResult").objects.filter(kind="norms").delete()


class Migration(migrations.Migration):
    dependencies = [("lesson", "0004_page_progress_visited")]

    operations = [migrations.RunPython(drop_norms_results, migrations.RunPython.noop)]
