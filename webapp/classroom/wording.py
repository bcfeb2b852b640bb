"""The words of a classroom frame, in its reader's language.

A frame that carries the lesson's own words (an exercise's prompt, options and explanation, a predicted comparison's
question and arms) is stored and sent with the English words as its keys: students answer with a key, the ballot
counts keys, the history keeps keys. Each screen gets the words in its own language beside them (`labels`), built here
once per question and language in each web process, whatever language the console asked in. An instructor's own
question carries the instructor's words as they typed them (there is nothing to translate).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from webapp.experiments.figures import machine_words, verdict_sentence
from webapp.lesson.content import PREDICTIONS, exercise_question
from webapp.lesson.figures import ARM_LABELS, arm_label
from webapp.lesson.services import TRAIN_KINDS
from webapp.site_pages.figure_style import label_text

KEYS_LANGUAGE = "en"  # the language of the keys a question is stored and answered with
# The experiments pages' comparisons a class predicts: the page, its preset, and its arms in order.
COMPARISONS = {"norm-position": ("norm-position", "compare_norm_position", ("post", "pre")),
               "warmup": ("norm-position", "compare_warmup", ("warmup", "no warmup")),
               "residual": ("residuals", "compare_residual", ("residual", "no residual"))}


def arms(kind: str) -> tuple[str, ...]:
    """A comparison's arms as its run's result names them, in order."""
    return tuple(ARM_LABELS[kind]) if kind in TRAIN_KINDS else COMPARISONS[kind][2]


def arm_shown(kind: str, label: str) -> str:
    """An arm as the active language says it."""
    return arm_label(label) if kind in TRAIN_KINDS else label_text(label)


def _exercise(exercise_id: str) -> dict[str, Any] | None:
    return exercise_question(exercise_id)


def _experiment(kind: str) -> dict[str, Any] | None:
    """A comparison's question: its arms, then "no reliable difference" (the answer when the seeds support no arm)."""
    if kind not in PREDICTIONS:
        return None
    options = [arm_shown(kind, label) for label in arms(kind)]
    return {"prompt": str(PREDICTIONS[kind]), "options": [*options, _("no reliable difference")]}


def _fitted(found: dict[str, Any] | None, options: list[str], experiment: str | None) -> dict[str, Any] | None:
    """A comparison asked before it offered "no reliable difference" has its arms only: the words of those."""
    if found is not None and experiment and len(options) == len(found["options"]) - 1:
        return {**found, "options": found["options"][:-1]}
    return found


def asked_words(*, exercise: str | None = None, experiment: str | None = None) -> dict[str, Any] | None:
    """What a question is stored with: the prompt and the options in the keys' language (None: no such one)."""
    with translation.override(KEYS_LANGUAGE):
        found = _exercise(exercise) if exercise else _experiment(experiment) if experiment else None
    return found


def _in_language(exercise: str | None, experiment: str | None, language: str) -> dict[str, Any] | None:
    with translation.override(language):
        return _exercise(exercise) if exercise else _experiment(experiment) if experiment else None


def _stored_in(options: list[str], exercise: str | None, experiment: str | None) -> dict[str, Any] | None:
    """The words as the question was stored (English keys; a question asked before keys were English: its console's
    language), found by comparing its options with each language's."""
    for code, _name in settings.LANGUAGES:
        found = _fitted(_in_language(exercise, experiment, code), options, experiment)
        if found is not None and found["options"] == options:
            return found
    return None


_kept: OrderedDict[tuple[Any, ...], dict[str, Any] | None] = OrderedDict()


def words(*, exercise: str | None, experiment: str | None, options: list[str], language: str) -> dict[str, Any] | None:
    """A lesson question's words for a reader: `prompt`, `labels` (each stored option -> its words) and, for an
    exercise, `explanation` and `right` (the stored option that is right); None for a question without lesson words
    (the instructor's own, the model's steps) or options that are not the lesson's."""
    if not exercise and not experiment:
        return None
    key = (exercise, experiment, tuple(options), language)
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]
    stored = _stored_in(options, exercise, experiment)
    shown = _fitted(_in_language(exercise, experiment, language), options, experiment)
    found = None
    if stored is not None and shown is not None:
        found = {"prompt": shown["prompt"], "labels": dict(zip(options, shown["options"], strict=True))}
        if exercise:
            found["explanation"] = shown["explanation"]
            found["right"] = options[stored["options"].index(stored["right"])]
    _kept[key] = found
    while len(_kept) > 512:
        _kept.popitem(last=False)
    return found


def question_for(frame: dict[str, Any], language: str) -> dict[str, Any]:
    """A `question` frame (room.public_question) as a reader in `language` sees it."""
    experiment = (frame.get("experiment") or {}).get("kind")
    found = words(exercise=frame.get("exercise"), experiment=experiment, options=frame.get("options") or [],
                  language=language)
    if found is None:
        return frame
    return {**frame, "prompt": found["prompt"], "labels": found["labels"]}


def reveal_for(frame: dict[str, Any], language: str) -> dict[str, Any]:
    """A `reveal` frame as a reader in `language` sees it: the options' words, an exercise's explanation, a sweep's
    verdict said in a sentence (`experiment.sentence`: "Pre-LN lowest in 15 of 16 seeds: mean 0.80 ± 0.03 ...")."""
    lesson = frame.get("lesson") or {}
    found = words(exercise=lesson.get("exercise"), experiment=lesson.get("experiment"),
                  options=lesson.get("options") or [], language=language)
    if found is None:
        return frame
    shown = {**frame, "labels": found["labels"]}
    if "explanation" in found:
        shown["explanation"] = found["explanation"]
    experiment = frame.get("experiment") or {}
    if experiment.get("verdict") or experiment.get("machine"):
        with translation.override(language):
            shown["experiment"] = {**experiment,
                                   **({"sentence": _sentence(experiment)} if experiment.get("verdict") else {}),
                                   **({"machine": machine_words(experiment["machine"])} if experiment.get("machine") else {})}
    return shown


def _sentence(experiment: dict[str, Any]) -> str:
    """A sweep's verdict in the active language; with the seeds students added, said to count them."""
    said = verdict_sentence(experiment["verdict"])
    added = experiment.get("added") or 0
    if not added:
        return said
    return ngettext("With %(n)d seed the class added (%(seeds)d in all): %(verdict)s",
                    "With the %(n)d seeds the class added (%(seeds)d in all): %(verdict)s", added) % {
        "n": added, "seeds": experiment["verdict"]["seeds"], "verdict": said}
