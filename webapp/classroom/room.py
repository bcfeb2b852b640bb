"""The room as a screen sees it (each called in a thread): the `session` frame a screen gets when it joins, reloads or
reconnects (`snapshot`, the one source of it), the question as every screen sees it, a reveal's frame and its kept
answers, the scores."""
from __future__ import annotations

from typing import Any

from webapp.accounts.roles import user_now
from webapp.classroom import questions, services, wording
from webapp.classroom.errors import ClassroomError
from webapp.classroom.models import LiveSession, Question
from webapp.classroom.relay import SessionRelay
from webapp.classroom.reveal import next_token_options
from webapp.classroom.steps import comparisons, demos, exercises, parts, screens, seeds


def drives_now(user_id: int, session: LiveSession) -> bool:
    user = user_now(user_id)
    return user is not None and services.can_drive(user, session)


def open_public(session: LiveSession) -> dict[str, Any] | None:
    question = questions.open_question(session)
    return public_question(question) if question is not None else None


def reveal_store(question: Question, answer: str, options: list[str]) -> dict[int, tuple[bool, int]]:
    if options != question.options:
        question.options = options
        question.save(update_fields=["options"])
    return questions.question_reveal(question=question, answer=answer)


def scores_of_class(code: str) -> list[dict[str, Any]]:
    session = services.session_by_code(code)
    return questions.class_scores(session) if session is not None else []


def score_of_user(code: str, user_id: int) -> int:
    session = services.session_by_code(code)
    return questions.scores_by_user(session).get(user_id, 0) if session is not None else 0


def public_question(question: Question) -> dict[str, Any]:
    """A question as every screen sees it (never the answer before the reveal), its words as stored: each screen
    gets them in its language (wording.question_for). An experiment question carries how far its run has come."""
    experiment = comparisons.experiment_public(question)
    if experiment is not None and question.status == Question.OPEN:
        experiment = {**experiment, "progress": comparisons.experiment_progress(question)}
    return {"type": "question", "id": question.pk, "kind": question.kind, "prompt": question.prompt,
            "options": question.options, "seq": question.seq, "layer": question.layer, "head": question.head,
            "exercise": question.exercise or None, "experiment": experiment}


def reveals(question: Question) -> str:
    """Whose answer a question's reveal gives: the lesson's, the training's, the instructor's or the model's."""
    if question.exercise:
        return "exercise"
    if question.training_run_id is not None or question.experiment_run_id is not None:
        return "experiment"
    return "instructor" if question.kind == Question.CHOICE else "model"


def reveal_public(question: Question, known: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """The `reveal` frame of a revealed question, as every screen gets it before its own part (event_frame, or the
    `session` frame of a screen that joins after it): the answer, whose it is, the counts, the lesson's words' keys,
    an exercise's explanation, a comparison's run, each arm's last loss and a sweep's verdict."""
    counts = questions.answer_counts(question)
    reveal = {"type": "reveal", "question": question.pk, "kind": question.kind, "answer": question.answer,
              "reveals": reveals(question), "counts": counts, "total": sum(counts.values())}
    if known is not None:  # (exercise_answer, experiment_answer) as the reveal just read them
        explained, measured = known
    else:
        explained = exercises.exercise_answer(question)
        try:
            measured = comparisons.experiment_answer(question)
        except ClassroomError:  # its run is no longer a finished one (queued again): the answer without its figures
            measured = None
    if explained is not None or measured is not None:
        experiment = comparisons.experiment_public(question)
        reveal["lesson"] = {"exercise": question.exercise or None, "options": question.options,
                            "experiment": experiment["kind"] if experiment else None}
    if explained is not None:
        reveal["explanation"] = explained[1]
    if measured is not None:  # kept: measured before the question (the screens say so), not for it
        reveal["experiment"] = {**comparisons.experiment_revealed(question), "kept": measured["kept"],
                                "finals": measured["finals"],
                                **{k: measured[k] for k in ("verdict", "machine", "added") if measured.get(k)}}
    return reveal


def reveal_shown(session: LiveSession, question: Question) -> None:
    """The revealed question stays on every screen (and an experiment's result in the lesson's panel) until the next
    question, part or demonstration: a screen that joins meanwhile is shown it too."""
    experiment = question.training_run_id is not None or question.experiment_run_id is not None
    services.session_state_update(session=session, revealed=question.pk,
                                  **({"demo": None, "experiment_shown": question.pk} if experiment else {}))


def my_reveal(reveal: dict[str, Any], question: Question, user: Any, scores: list[dict[str, Any]] | None,
              score: int | None) -> dict[str, Any]:
    """A revealed question's frame for one screen: the class's `scores` on the console's, the student's own result
    and `score` on theirs."""
    if scores is not None:
        return {**reveal, "scores": scores}
    mine = question.answers.filter(participant__user=user).first()
    return {**reveal, "you": {"answered": mine is not None, "correct": bool(mine and mine.correct), "score": score}}


def snapshot(session: LiveSession, user: Any, drives: bool, relay: SessionRelay, language: str = "en") -> dict[str, Any]:
    """The first frame, the room as it is now (the one source for a screen that joins, reloads or reconnects): the
    session, its views, the lesson part, the demonstration or revealed experiment in the lesson's panel, the question
    on screen (open, or revealed until the next one) with this user's answer, result and score; its words in the
    screen's language."""
    scores = questions.class_scores(session) if drives else None  # the console's table, read once
    score = None if drives else questions.score_of(session, user)
    state = session.run_state
    question = questions.open_question(session)
    revealed = None
    if question is None and state.revealed:  # on the screens until the next question opens
        latest = session.questions.order_by("-created_at", "-pk").first()
        revealed = latest if latest is not None and latest.pk == state.revealed else None
    snapshot: dict[str, Any] = {
        "type": "session", "code": session.code, "title": session.title, "model": session.model_name,
        "role": "console" if drives else "student", "source": state.source, "params": state.params,
        "views": state.views, "layer": state.layer, "head": state.head, "request_id": state.request_id,
        "running": bool(state.running), "question": None, "presence": 0,
        "lesson": screens.with_html(session, parts.lesson_frame(state.lesson), user, language),
        "demo": screens.with_html(session, demos.demo_frame(session, state.demo), user, language),
    }
    if question is not None:
        public = public_question(question)
        if question.kind == Question.NEXT_TOKEN and not public["options"] and relay.held_seq is not None:
            held = relay.frame(question.request_id, question.seq)
            public["options"] = next_token_options(held) if held is not None else []
        snapshot["question"] = wording.question_for(public, language)
        snapshot["my_answer"] = questions.my_answer(question, user)
        if drives:
            counts = questions.live_counts(question.pk)
            snapshot["counts"] = {"question": question.pk, "counts": counts, "total": sum(counts.values())}
    elif revealed is not None:
        snapshot["question"] = wording.question_for(public_question(revealed), language)
        snapshot["my_answer"] = questions.my_answer(revealed, user)
        reveal = wording.reveal_for(my_reveal(reveal_public(revealed), revealed, user, scores, score), language)
        if reveal.get("experiment") and state.experiment_shown == revealed.pk:
            reveal = screens.with_html(session, reveal, user, language)  # its result, in the lesson's panel
        elif reveal.get("experiment"):
            reveal = {**reveal, "experiment": {**reveal["experiment"], "off_panel": True}}  # a part or demo since
        snapshot["reveal"] = reveal
    snapshot["seeds"] = seeds.seeds_counts(session)  # adding seeds to the comparison revealed on screen
    if drives:
        snapshot["scores"] = scores
    else:
        snapshot["score"] = score
    return snapshot
