"""Drop every stored demonstration result: those written before instrumented runs were isolated per thread may
hold another request's data (concurrent demonstrations shared one model's recorders). They are recomputed on demand."""
from django.db import migrations


def drop_results(apps, schema_editor):
    apps.get_model("lesson", "DemoResult").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("lesson", "0001_initial")]

    operations = [migrations.RunPython(drop_results, migrations.RunPython.noop)]
