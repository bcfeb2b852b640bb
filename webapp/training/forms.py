"""The job form (every field within bounds, each mistake beside its field) and the corpus upload form."""
from __future__ import annotations

import functools
from typing import Any

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext_lazy as _

from modelcore.config import KNOBS, model_overrides
from modelcore.tasks import TASK_NAMES
from modelcore.training.schedule import SCHEDULES
from webapp.site_pages.model_forms import check_model, model_choice_field
from webapp.site_pages.redact import without_paths
from webapp.training.models import Dataset, TrainingJob
from webapp.training.spec import dataset_bytes, job_task, train_config_dict


def _int(label: str, initial: int, low: int, high: int, help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(label=label, initial=initial, min_value=low, max_value=high, help_text=help_text)


class JobForm(forms.Form):
    """What to train and how: data, architecture, optimisation."""

    task = forms.ChoiceField(label=_("Task"), required=False, choices=[("", "—")] + [(t, t) for t in TASK_NAMES],
                             help_text=_("A built-in task, or leave empty and pick an uploaded corpus."))
    dataset = forms.ModelChoiceField(label=_("Uploaded corpus"), required=False, queryset=Dataset.objects.all(),
                                     empty_label="—")
    layers = _int(_("Layers (encoder and decoder each)"), 2, 1, 12)
    d_model = _int(_("d_model"), 64, 8, 1024, _("Width of every layer; a multiple of the number of heads."))
    n_heads = _int(_("Heads"), 4, 1, 16)
    d_ff = _int(_("d_ff"), 256, 8, 8192, _("Width of the feed-forward sublayer (the paper: 4 × d_model)."))
    norm_position = model_choice_field("norm_position", label=_("Norm position"), initial="pre", labels={
        "post": _("Post-LN: x = LN(x + F(x)), the 2017 paper"),
        "pre": _("Pre-LN: x = x + F(LN(x)), one final norm per stack"),
    })
    norm = model_choice_field("norm", label=_("Norm type"), initial="layernorm",
                              labels={"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"})
    residual = forms.BooleanField(label=_("Residual connections"), initial=True, required=False,
                                  help_text=_("Off only to see what the model loses without them."))
    dropout = forms.FloatField(label=_("Dropout"), initial=0.1, min_value=0.0, max_value=0.5)
    steps = _int(_("Steps"), 2000, 1, 500_000)
    batch_size = _int(_("Batch size (sentence pairs)"), 64, 1, 1024)
    schedule = forms.ChoiceField(label=_("Learning-rate schedule"), initial="noam", choices=[
        ("noam", _("Warmup, then 1/√step decay (the paper)")), ("constant", _("Constant")),
        ("linear", _("Warmup to the learning rate, then linear decay to 0")),
    ])
    warmup_steps = _int(_("Warmup steps"), 400, 1, 100_000)
    lr_factor = forms.FloatField(label=_("Rate factor (warmup schedule)"), initial=1.0, min_value=0.01, max_value=10.0)
    lr = forms.FloatField(label=_("Learning rate (constant schedule; the linear schedule's peak)"), initial=1e-3, min_value=1e-6, max_value=1.0)
    seed = _int(_("Seed"), 0, 0, 2**31 - 1)
    checkpoint_every = _int(_("Checkpoint every (steps)"), 200, 1, 100_000,
                            _("A killed worker loses at most this many steps."))
    eval_every = _int(_("Validate every (steps, 0: only at the end)"), 500, 0, 100_000)

    ARCHITECTURE = KNOBS
    OPTIMISATION = ("steps", "batch_size", "schedule", "warmup_steps", "lr_factor", "lr", "seed", "checkpoint_every",
                    "eval_every")

    def architecture_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.ARCHITECTURE]

    def optimisation_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.OPTIMISATION]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        task, dataset = data.get("task"), data.get("dataset")
        if task and dataset:
            self.add_error("dataset", _("Choose a task or a corpus, not both."))
        elif not task and not dataset and "dataset" not in self.errors:
            self.add_error("task", _("Choose a task or an uploaded corpus."))
        if not any(name in self.errors for name in KNOBS):
            words = {"heads": _("d_model (%(d)s) must be a multiple of the number of heads.") % {"d": data["d_model"]}}
            check_model(self, self._model(), words=words)
        if not self.errors:
            self._check_memory()
        if data.get("schedule") not in SCHEDULES:
            self.add_error("schedule", _("Unknown schedule."))
        return data

    def _check_memory(self) -> None:
        """Refuse a model whose weights, gradients and Adam's two moments alone outgrow the training worker."""
        task, dataset = self.cleaned_data.get("task") or "", self.cleaned_data.get("dataset")
        try:
            vocab = data_vocab_sizes(task, dataset)
        except ValueError as error:  # the worker could not build this data either
            self.add_error("dataset" if dataset else "task", _("This data cannot be read: %(reason)s")
                           % {"reason": without_paths(str(error))})
            return
        needed = training_state_bytes(self._model(), *vocab)
        limit = settings.TRAINING_WORKER_MEMORY_GIB * 2**30
        if needed > limit:
            self.add_error(None, _(
                "This model needs %(needed).1f GiB for its weights, gradients and optimizer state alone; the training "
                "worker has %(limit)d GiB. Use fewer layers or a smaller d_model or d_ff."
            ) % {"needed": needed / 2**30, "limit": settings.TRAINING_WORKER_MEMORY_GIB})

    def train_config(self) -> dict[str, Any]:
        """The TrainConfig fields of the job this form describes (call after is_valid)."""
        return train_config_dict(model=self._model(), **{name: self.cleaned_data[name] for name in self.OPTIMISATION})

    def _model(self) -> dict[str, Any]:
        return model_overrides(**{name: self.cleaned_data[name] for name in KNOBS})


def data_vocab_sizes(task: str, dataset: Dataset | None) -> tuple[int, int]:
    """The source and target vocabulary sizes the training worker builds for this task or corpus; a ValueError
    when it could not build the data (a corpus file that vanished or changed since its upload)."""
    if dataset is None:
        return _vocab_sizes(task, None, "")
    dataset_bytes(dataset)  # the cache is keyed by the corpus's content: the file must still hold it
    return _vocab_sizes("", dataset.pk, dataset.sha256)


@functools.lru_cache(maxsize=64)
def _vocab_sizes(task: str, dataset_id: int | None, sha256: str) -> tuple[int, int]:
    """Built once per process and data: a 20 MB corpus's BPE takes the worker's CPUs many seconds."""
    dataset = Dataset.objects.get(pk=dataset_id) if dataset_id is not None else None
    src, tgt = job_task(TrainingJob(task=task, dataset=dataset, config={})).build_tokenizers()  # as the worker does
    return src.vocab_size, tgt.vocab_size


def training_state_bytes(model: dict[str, Any], src_vocab_size: int, tgt_vocab_size: int) -> int:
    """fp32 weights, their gradients and Adam's two moments: 16 bytes a parameter (counted on the meta device)."""
    import torch

    from modelcore.config import ModelConfig
    from modelcore.model import EncoderDecoder

    with torch.device("meta"):  # shapes only: nothing is allocated
        built = EncoderDecoder(ModelConfig.from_preset("tiny", src_vocab_size=src_vocab_size,  # train_config_dict's
                                                       tgt_vocab_size=tgt_vocab_size, **model))
    return 16 * sum(p.numel() for p in built.parameters())


class DatasetForm(forms.Form):
    """A TSV corpus: one source<TAB>target pair a line, UTF-8."""

    name = forms.SlugField(label=_("Name"), max_length=60, help_text=_("Letters, digits, - and _."))
    file = forms.FileField(label=_("TSV file"))

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Dataset.objects.filter(name=name).exists():
            raise forms.ValidationError(_("A corpus named %(name)s exists already.") % {"name": name})
        return name

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        limit = settings.TRAINING_UPLOAD_MAX_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                _("The file is %(size)s; the limit is %(limit)s.")
                % {"size": filesizeformat(upload.size), "limit": filesizeformat(limit)}
            )
        return upload
