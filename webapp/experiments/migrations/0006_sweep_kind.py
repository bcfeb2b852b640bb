from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('experiments', '0005_error_help_text'),
    ]

    operations = [
        migrations.AlterField(
            model_name='experimentrun',
            name='kind',
            field=models.CharField(choices=[('gradflow', 'gradients at initialisation'), ('compare', 'paired training runs'), ('drift', 'representation drift'), ('norms', 'norm statistics'), ('sweep', 'paired training runs, several seeds')], max_length=20),
        ),
    ]
