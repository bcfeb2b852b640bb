"""Form fields and checks built from modelcore's ModelConfig: its choices and its rules, each mistake beside its field."""
from __future__ import annotations

from typing import Any

from django import forms

from modelcore.config import CHOICES, ConfigError, ModelConfig

# ModelConfig's per-stack fields appear in the forms as one `layers`.
_FORM_FIELD = {"n_encoder_layers": "layers", "n_decoder_layers": "layers"}


def model_choice_field(name: str, *, label: Any, labels: dict[str, Any] | None = None, **kwargs: Any) -> forms.ChoiceField:
    """A ChoiceField over ModelConfig's choices for `name`; `labels` words a value (else the value shows)."""
    labels = labels or {}
    return forms.ChoiceField(label=label, choices=[(value, labels.get(value, value)) for value in CHOICES[name]],
                             **kwargs)


def check_model(form: forms.Form, overrides: dict[str, Any], *, words: dict[str, Any],
                place: dict[str, str] | None = None) -> None:
    """Check the model the form describes by ModelConfig's rules; a mistake goes beside its field.

    `words` gives the form's own message per ConfigError code (else modelcore's English one); `place`
    moves an error to another field (one the user chose, when the form fixes the field itself).
    """
    try:
        ModelConfig.check(**overrides)
    except ConfigError as error:
        field = (place or {}).get(error.field) or _FORM_FIELD.get(error.field, error.field)
        form.add_error(field if field in form.fields else None, words.get(error.code, str(error)))
