"""What a job trains: its data (a built-in task or an uploaded corpus) and its modelcore TrainConfig."""
from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.utils.text import slugify

from modelcore.tasks import Task, get_task, load_tsv_corpus
from modelcore.training import TrainConfig
from webapp.training.models import Dataset, TrainingJob

MAX_LINE_CHARS = 1000  # longer corpus lines are refused at upload (and cannot fit max_len anyway)


class JobDataError(ValueError):
    """The job's data cannot be built: an unknown task, a corpus that vanished or changed."""


def train_config_dict(*, model: dict[str, Any], **train: Any) -> dict[str, Any]:
    """A job's TrainConfig fields, checked by modelcore: `model` overrides the tiny preset, `train` the rest."""
    # The device is left out: the worker's MODELCORE_DEVICE decides.
    config = TrainConfig(
        preset="tiny", model=model, **train,
        log_every=max(1, train["steps"] // 500),  # at most ~500 loss points in metrics.json
    ).to_dict()
    config.pop("device")
    return config


def job_train_config(job: TrainingJob) -> TrainConfig:
    """The job's TrainConfig on this worker's device."""
    return TrainConfig(**job.config["train"], device=settings.MODELCORE_DEVICE)


def dataset_task_name(dataset: Dataset) -> str:
    return f"dataset-{dataset.pk}"


def job_task(job: TrainingJob) -> Task:
    """Build the job's data: the same task name, seed and options always give the same splits."""
    options = job.config.get("task_options", {})
    if job.dataset_id is None:
        try:
            return get_task(job.task, seed=options.get("seed", 0), **{k: v for k, v in options.items() if k != "seed"})
        except ValueError as exc:
            raise JobDataError(str(exc)) from None
    dataset = job.dataset
    return load_tsv_corpus(dataset_bytes(dataset), name=dataset_task_name(dataset), max_line_chars=MAX_LINE_CHARS)


def dataset_bytes(dataset: Dataset) -> bytes:
    """The corpus file as it was uploaded; JobDataError when it vanished or changed since."""
    try:
        data = dataset.file.read_bytes()
    except FileNotFoundError:
        raise JobDataError(f"the corpus file of dataset {dataset.name!r} is missing ({dataset.file})") from None
    if hashlib.sha256(data).hexdigest() != dataset.sha256:
        raise JobDataError(f"the corpus file of dataset {dataset.name!r} changed since it was uploaded")
    return data


def job_model_name(job: TrainingJob) -> str:
    """Its registry name: job-<id>-<task or dataset>."""
    source = job.task or (job.dataset.name if job.dataset_id else "data")
    return f"job-{job.pk}-{slugify(source)}"[:80].rstrip("-")


def job_model_title(job: TrainingJob) -> str:
    model = job.config["train"]["model"]
    return (
        f"{job.source_label} · {model['norm_position']}-LN · {model['n_encoder_layers']}+{model['n_decoder_layers']}"
        f" layers · d={model['d_model']} (training job {job.pk})"
    )
