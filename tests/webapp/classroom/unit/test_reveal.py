"""The model's own answer to a question, read from the step frame the question is about (no services)."""
from __future__ import annotations

import base64

from modelcore.tokenization import EOS, EOS_ID
from webapp.classroom.models import Question
from webapp.classroom.reveal import model_answer, next_token_options, source_options


def token_frame(token: str, token_id: int = 7, **extra) -> dict:
    return {"type": "token", "seq": 3, "id": token_id, "token": token, **extra}


def question(kind: str, layer: int | None = None, head: str = "mean") -> Question:
    return Question(kind=kind, layer=layer, head=head)


def test_the_next_token_answer_is_the_token_the_model_chose_and_its_stop_reads_as_eos():
    assert model_answer(question(Question.NEXT_TOKEN), token_frame("cat"), []) == "cat"
    assert model_answer(question(Question.NEXT_TOKEN), token_frame("", token_id=EOS_ID), []) == EOS


def test_with_beam_search_the_answer_is_the_best_beams_choice():
    frame = {"type": "beams", "seq": 1, "beams": [{"id": 17, "token": "see"}, {"id": 21, "token": "saw"}]}
    assert model_answer(question(Question.NEXT_TOKEN), frame, []) == "see"


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
    assert model_answer(question(Question.ATTENTION), frame, source) in source_options(source)


def test_the_attention_answer_reads_compact_frames_a_byte_per_weight():
    row = base64.b64encode(bytes([10, 200, 30])).decode()
    frame = token_frame("x", attention={"cross": row, "scale": 255})
    assert model_answer(question(Question.ATTENTION), frame, ["a", "b", "c"]) == "1: b"


def test_without_attention_in_the_frame_there_is_no_attention_answer():
    assert model_answer(question(Question.ATTENTION), token_frame("x"), ["a"]) is None


def test_next_token_options_are_the_top_k_alphabetically_without_probabilities():
    frame = token_frame("the", alternatives=[{"id": 7, "token": "the", "prob": 0.8}, {"id": EOS_ID, "token": "",
                                             "prob": 0.1}, {"id": 9, "token": "a", "prob": 0.05},
                                             {"id": 11, "token": "", "prob": 0.01}])
    assert next_token_options(frame) == sorted(["the", EOS, "a"])
