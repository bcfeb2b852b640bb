"""What a job's page offers and says: Retry names what it resumes from, and a running job says how long is left."""
from __future__ import annotations

import pytest

from tests.fixtures.training import tiny_config
from webapp.training.models import TrainingJob

pytestmark = [pytest.mark.django_db]
Status = TrainingJob.Status


def page_of(client, job: TrainingJob, language: str = "en") -> str:
    accept = "zh-Hans" if language == "zh" else "en"
    return client.get(f"/training/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE=accept).content.decode()


@pytest.mark.parametrize(("language", "words"), [("en", "Start again from step 0"), ("zh", "从第 0 步重新开始")])
def test_a_job_cancelled_in_the_queue_offers_to_start_again_not_a_checkpoint_it_never_had(client_as, admin, store,
                                                                                        language, words):
    job = TrainingJob.objects.create(owner=admin, task="reverse", steps=60, config={"train": tiny_config()},
                                     status=Status.CANCELLED, step=0)
    page = page_of(client_as(admin), job, language)
    retry = page.split('data-testid="retry">', 1)[1].split("</button>", 1)[0]
    assert words in retry and "Retry from the last checkpoint" not in retry and "从最近的检查点" not in retry


@pytest.mark.parametrize(("language", "words"), [("en", ("measuring the pace", "about {n} min left")),
                                                 ("zh", ("正在测量速度", "大约还要 {n} 分钟"))])
def test_a_running_job_has_a_place_for_the_time_left_in_the_readers_language(client_as, admin, store, language, words):
    job = TrainingJob.objects.create(owner=admin, task="reverse", steps=60, config={"train": tiny_config()},
                                     status=Status.RUNNING, step=5)
    page = page_of(client_as(admin), job, language)
    eta = page.split('data-role="eta"', 1)[1].split("</span>", 1)[0]
    assert all(word in eta for word in words)
    job.status = Status.SUCCEEDED
    job.save()
    assert 'data-role="eta"' not in page_of(client_as(admin), job, language)
