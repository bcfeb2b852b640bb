"""The model's own answer to each kind of question, read off hand-made step frames as the worker sends them
(webapp/classroom/reveal.py; nothing else runs): what the reveal shows every screen, and the top-k a next-token
question offers students."""
from __future__ import annotations

from modelcore.tokenization import EOS, EOS_ID
from webapp.classroom.models import Question
from webapp.classroom.reveal import model_answer, next_token_options, source_options

SOURCE = ["我", "看见", "猫"]
# cross-attention of a 2-layer, 2-head model at one step: [layer][head][source position]
CROSS = [[[0.7, 0.2, 0.1], [0.7, 0.2, 0.1]],
         [[0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]]


def asked(kind: str, layer: int | None = None, head: str = "mean") -> Question:
    return Question(kind=kind, layer=layer, head=head)


def step(token: str = "cat", token_id: int = 7, **extra) -> dict:
    return {"type": "token", "seq": 2, "id": token_id, "token": token, **extra}


def test_an_attention_question_about_a_layer_or_head_past_the_models_reads_its_last():
    frame = step(attention={"cross": CROSS})
    assert model_answer(asked(Question.ATTENTION, layer=1, head="1"), frame, SOURCE) == "2: 猫"
    assert model_answer(asked(Question.ATTENTION, layer=9, head="9"), frame, SOURCE) == "2: 猫"  # the same row
    assert model_answer(asked(Question.ATTENTION, layer=0, head="9"), frame, SOURCE) == "0: 我"
    assert model_answer(asked(Question.ATTENTION, layer=9), frame, SOURCE) == "1: 看见"  # the last layer's mean


def test_the_attention_answer_is_one_of_the_source_options_students_clicked():
    frame = step(attention={"cross": CROSS})
    for layer in (0, 1):
        for head in ("mean", "0", "1"):
            assert model_answer(asked(Question.ATTENTION, layer=layer, head=head), frame, SOURCE) in source_options(SOURCE)
    assert source_options(SOURCE) == ["0: 我", "1: 看见", "2: 猫"]


def test_with_beam_search_the_stop_answer_is_the_best_beams():
    ends = {"type": "beams", "seq": 4, "beams": [{"parent": 0, "id": EOS_ID, "token": ""},
                                                  {"parent": 1, "id": 21, "token": "saw"}]}
    goes_on = {**ends, "beams": list(reversed(ends["beams"]))}
    assert model_answer(asked(Question.STOP), ends, SOURCE) == "yes"
    assert model_answer(asked(Question.STOP), goes_on, SOURCE) == "no"
    assert model_answer(asked(Question.NEXT_TOKEN), ends, SOURCE) == EOS


def test_a_multiple_choice_question_has_no_answer_from_the_model():
    """The instructor gives that answer: the model's frame cannot say which option is right."""
    assert model_answer(asked(Question.CHOICE), step(attention={"cross": CROSS}), SOURCE) is None


def test_next_token_options_always_hold_the_models_choice_once_and_no_blank_token():
    listed = step("cat", alternatives=[{"id": 9, "token": "dog", "prob": 0.6}, {"id": 7, "token": "cat", "prob": 0.3},
                                       {"id": 12, "token": "", "prob": 0.1}])
    assert next_token_options(listed) == ["cat", "dog"]
    assert next_token_options(step("cat")) == ["cat"]  # a frame without its top-k still offers the right answer
    assert next_token_options(step("", token_id=EOS_ID)) == [EOS]
