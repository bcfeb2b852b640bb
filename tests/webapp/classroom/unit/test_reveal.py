"""The model's own answer to each kind of question, read off hand-made step frames as the worker sends them: what the
reveal shows every screen, and the options (the top-k) a next-token question offers students. Nothing runs but
webapp/classroom/reveal.py: no database, Redis, worker or web server."""
from __future__ import annotations

import base64

from modelcore.tokenization import EOS, EOS_ID
from webapp.classroom.models import Question
from webapp.classroom.reveal import model_answer, next_token_options, source_options

SOURCE = ["我", "看见", "猫"]
# cross-attention of a 2-layer, 2-head model at one step: [layer][head][source position]
CROSS = [[[0.7, 0.2, 0.1], [0.7, 0.2, 0.1]],
         [[0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]]


def token_frame(token: str, token_id: int = 7, **extra) -> dict:
    return {"type": "token", "seq": 3, "id": token_id, "token": token, **extra}


def question(kind: str, layer: int | None = None, head: str = "mean") -> Question:
    return Question(kind=kind, layer=layer, head=head)


def test_the_next_token_answer_is_the_token_the_model_chose_and_its_stop_reads_as_eos():
    assert model_answer(question(Question.NEXT_TOKEN), token_frame("cat"), []) == "cat"
    assert model_answer(question(Question.NEXT_TOKEN), token_frame("", token_id=EOS_ID), []) == EOS


def test_with_beam_search_the_next_token_and_stop_answers_are_the_best_beams():
    ends = {"type": "beams", "seq": 4, "beams": [{"parent": 0, "id": EOS_ID, "token": ""},
                                                  {"parent": 1, "id": 21, "token": "saw"}]}
    goes_on = {**ends, "beams": list(reversed(ends["beams"]))}
    assert model_answer(question(Question.NEXT_TOKEN), goes_on, SOURCE) == "saw"
    assert model_answer(question(Question.NEXT_TOKEN), ends, SOURCE) == EOS
    assert model_answer(question(Question.STOP), ends, SOURCE) == "yes"
    assert model_answer(question(Question.STOP), goes_on, SOURCE) == "no"


def test_will_it_stop_is_yes_only_when_the_model_chose_the_end_token():
    assert model_answer(question(Question.STOP), token_frame("", token_id=EOS_ID), []) == "yes"
    assert model_answer(question(Question.STOP), token_frame("cat"), []) == "no"


def test_the_attention_answer_is_the_source_position_attended_most_labelled_as_students_click_it():
    source = ["the", "cat", "the", "mat"]
    heads = [[0.1, 0.2, 0.6, 0.1], [0.1, 0.2, 0.3, 0.4]]  # head 0 and head 1 of the last layer
    frame = token_frame("x", attention={"cross": [[[1, 0, 0, 0], [1, 0, 0, 0]], heads]})
    # the second "the" (index 2), not the first: the same token twice is told apart by its index
    assert model_answer(question(Question.ATTENTION), frame, source) == "2: the"
    assert model_answer(question(Question.ATTENTION, layer=0), frame, source) == "0: the"
    assert model_answer(question(Question.ATTENTION, head="1"), frame, source) == "3: mat"  # one head, not the mean
    assert source_options(source) == ["0: the", "1: cat", "2: the", "3: mat"]
    for layer in (0, 1):  # whichever layer and head, the answer is one of the options students clicked
        for head in ("mean", "0", "1"):
            assert model_answer(question(Question.ATTENTION, layer=layer, head=head), frame, source) in \
                source_options(source)


def test_an_attention_question_about_a_layer_or_head_past_the_models_reads_its_last():
    frame = token_frame("cat", attention={"cross": CROSS})
    assert model_answer(question(Question.ATTENTION, layer=1, head="1"), frame, SOURCE) == "2: 猫"
    assert model_answer(question(Question.ATTENTION, layer=9, head="9"), frame, SOURCE) == "2: 猫"  # the same row
    assert model_answer(question(Question.ATTENTION, layer=0, head="9"), frame, SOURCE) == "0: 我"
    assert model_answer(question(Question.ATTENTION, layer=9), frame, SOURCE) == "1: 看见"  # the last layer's mean


def test_the_attention_answer_reads_compact_frames_a_byte_per_weight():
    row = base64.b64encode(bytes([10, 200, 30])).decode()
    frame = token_frame("x", attention={"cross": row, "scale": 255})
    assert model_answer(question(Question.ATTENTION), frame, ["a", "b", "c"]) == "1: b"


def test_without_attention_in_the_frame_there_is_no_attention_answer():
    assert model_answer(question(Question.ATTENTION), token_frame("x"), ["a"]) is None


def test_a_multiple_choice_question_has_no_answer_from_the_model():
    """The instructor gives that answer: the model's frame cannot say which option is right."""
    assert model_answer(question(Question.CHOICE), token_frame("cat", attention={"cross": CROSS}), SOURCE) is None


def test_next_token_options_are_the_top_k_alphabetically_with_the_models_choice_once_and_no_blank_token():
    """No probabilities; the end token by its name; a frame without its top-k still offers the right answer."""
    frame = token_frame("the", alternatives=[{"id": 7, "token": "the", "prob": 0.8}, {"id": EOS_ID, "token": "",
                                             "prob": 0.1}, {"id": 9, "token": "a", "prob": 0.05},
                                             {"id": 11, "token": "", "prob": 0.01}])
    assert next_token_options(frame) == sorted(["the", EOS, "a"])
    listed = token_frame("cat", alternatives=[{"id": 9, "token": "dog", "prob": 0.6},
                                              {"id": 7, "token": "cat", "prob": 0.3},
                                              {"id": 12, "token": "", "prob": 0.1}])
    assert next_token_options(listed) == ["cat", "dog"]
    assert next_token_options(token_frame("cat")) == ["cat"]
    assert next_token_options(token_frame("", token_id=EOS_ID)) == [EOS]
