"""Lesson plans: the shipped plan covers the lesson, every step is checked as its console frame is, and an instructor
keeps, changes, duplicates, exports, imports and deletes their own plans; a session taught with one shows on its page."""
from __future__ import annotations

import json
import re

import pytest

from tests.fixtures.classroom import answer_as, ask_choice
from webapp.classroom.plans import PlanError, plan_from_json, plan_steps, plan_to_json, shipped_plan

pytestmark = pytest.mark.django_db

GOOD = [{"do": "lesson", "page": "encoder", "part": "attention"},
        {"do": "demo", "kind": "encoder", "sentence": "我的猫追了一只老鼠。", "layer": 1},
        {"do": "exercise", "exercise": "encoder-1", "note": "let them argue first"},
        {"do": "decode", "source": "我们看见我的猫。", "step_mode": True},
        {"do": "question", "kind": "next_token"},
        {"do": "experiment", "kind": "mask"}]


def test_the_shipped_plan_walks_every_part_exercise_and_steady_experiment_of_the_lesson():
    from webapp.lesson.content import EXERCISES, PREDICTIONS
    from webapp.lesson.parts import lesson_parts

    title, steps = shipped_plan()
    shown = {(s["page"], s["part"]) for s in steps if s["do"] == "lesson"}
    assert shown == {(page, part.id) for page, parts in lesson_parts().items() for part in parts}
    assert {s["exercise"] for s in steps if s["do"] == "exercise"} == {e["id"] for items in EXERCISES.values()
                                                                         for e in items}
    # Every experiment, the FFN widths too: their one seed's lowest arm moves with the seed and the machine's
    # arithmetic, but a class predicts a sweep of seeds and its verdict (no reliable difference, over 16 shipped).
    assert {s["kind"] for s in steps if s["do"] == "experiment"} == set(PREDICTIONS)
    demos = {s["kind"] for s in steps if s["do"] == "demo"}
    assert demos == {p.demo for parts in lesson_parts().values() for p in parts if p.demo}


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_console_gives_the_shipped_plans_title_and_notes_in_its_language(client_as, instructor, session, language):
    title, steps = shipped_plan()
    page = client_as(instructor).get(f"/classroom/{session.code}/console/", HTTP_ACCEPT_LANGUAGE=language)
    plans = json.loads(page.content.decode().split('id="cr-plans"')[1].split(">", 1)[1].split("</script>")[0])
    shipped = next(plan for plan in plans if plan["id"] == "shipped")
    notes = [step["note"] for step in shipped["steps"] if step.get("note")]
    assert notes and len(shipped["steps"]) == len(steps)
    if language == "en":
        assert shipped["title"] == title and notes == [step["note"] for step in steps if step.get("note")]
    else:
        assert shipped["title"] == "完整的一课"
        assert all(not re.search(r"[A-Za-z]{3}", note) for note in notes), notes  # no English sentence left


def test_every_step_is_checked_and_each_problem_names_its_step():
    assert plan_steps(GOOD)[2] == GOOD[2]
    bad = [GOOD[0], {"do": "lesson", "page": "encoder", "part": "nowhere"}, {"do": "demo", "kind": "encoder", "x": 1},
           {"do": "exercise", "exercise": "encoder-99"}, {"do": "experiment", "kind": "gradflow"},
           {"do": "question", "kind": "choice", "prompt": "?", "options": ["only one"]},
           {"do": "decode", "source": "猫", "temperature": 10 ** 400}, {"do": "dance"}, "lesson",
           {"do": "lesson", "page": "encoder", "part": "ffn", "note": "n" * 301}]
    with pytest.raises(PlanError) as refused:
        plan_steps(bad)
    numbers = [problem.split(":")[0] for problem in refused.value.problems]
    assert numbers == [f"step {n}" for n in range(2, 11)], refused.value.problems
    # Each problem names the value that is wrong, not only the rule.
    assert "'nowhere'" in refused.value.problems[0] and "'encoder-99'" in refused.value.problems[2]
    assert "'gradflow'" in refused.value.problems[3]
    for empty in ([], None, [GOOD[0]] * 101):
        with pytest.raises(PlanError):
            plan_steps(empty)


def test_a_step_is_checked_by_the_function_that_checks_its_console_frame_and_may_not_name_another_type():
    refused = [{"do": "lesson", "page": "encoder", "part": "", "type": "end"},  # hidden: would end the class
               {"do": "question", "kind": "choice", "prompt": "?", "options": ["a", "b"], "type": "reveal"},
               {"do": "demo", "kind": "encoder", "sentence": "猫" * 61},  # the console's demo refuses it too
               {"do": "demo", "kind": "encoder", "layer": "x"},
               {"do": "exercise", "exercise": "encoder-1", "colour": "red"},
               {"do": "experiment", "kind": "mask", "seeds": 5},
               {"do": "lesson", "page": "encoder", "part": "", "extra": 1}]
    with pytest.raises(PlanError) as why:
        plan_steps(refused)
    problems = why.value.problems
    assert len(problems) == len(refused), problems
    assert "'type'" in problems[0] and "'type'" in problems[1] and "60" in problems[2]
    assert "layer must be a whole number" in problems[3]
    assert "'colour'" in problems[4] and "seeds is one of 4, 8, 16" in problems[5] and "'extra'" in problems[6]


def test_a_question_about_the_models_next_step_needs_a_step_by_step_decode_before_it():
    decode, stepping = {"do": "decode", "source": "猫"}, {"do": "decode", "source": "猫", "step_mode": True}
    for kind in ("next_token", "attention", "stop"):
        question = {"do": "question", "kind": kind}
        for refused in ([question], [decode, question], [stepping, decode, question]):
            with pytest.raises(PlanError) as why:
                plan_steps(refused)
            assert why.value.problems == [f"step {len(refused)}: a {kind} question is about a step-by-step decode's "
                                          'next step: put a decode with "step_mode": true before it']
        assert plan_steps([stepping, GOOD[0], question])[2] == question  # a part between them changes nothing
    assert plan_steps([{"do": "question", "kind": "choice", "prompt": "?", "options": ["a", "b"]}])


def test_an_exported_plan_imports_back_and_anything_else_is_refused():
    assert plan_from_json(plan_to_json("Monday", GOOD)) == ("Monday", GOOD)
    for text in ("{not json", json.dumps({"title": "x", "steps": GOOD}),
                 json.dumps({"format": "encdec-lesson-plan", "version": 1, "title": "", "steps": GOOD}),
                 json.dumps({"format": "encdec-lesson-plan", "version": 2, "title": "x", "steps": GOOD})):
        with pytest.raises(PlanError):
            plan_from_json(text)


def test_an_instructor_writes_changes_duplicates_exports_imports_and_deletes_their_plans(
        client_as, instructor, student, django_user_model):
    from django.contrib.auth.models import Group

    from webapp.classroom.models import LessonPlan

    assert client_as(student).get("/classroom/plans/").status_code == 403
    teacher = client_as(instructor)
    assert teacher.get("/classroom/plans/").status_code == 200
    refused = teacher.post("/classroom/plans/", {"title": "Week 1", "steps": json.dumps([GOOD[0], {"do": "dance"}])})
    assert refused.status_code == 400 and "step 2:" in refused.content.decode() and LessonPlan.objects.count() == 0
    for text, why in (("[" * 100_000, "nested too deep"), ('[{"do": "demo", "kind": "encoder", "layer": ' + "9" * 5000 + "}]",
                                                             "not JSON")):
        bad_json = teacher.post("/classroom/plans/", {"title": "Deep", "steps": text})  # a 400 naming it, not a 500
        assert bad_json.status_code == 400 and why in bad_json.content.decode() and LessonPlan.objects.count() == 0
    made = teacher.post("/classroom/plans/", {"title": "Week 1", "steps": json.dumps(GOOD)})
    plan = LessonPlan.objects.get()
    assert made["Location"] == f"/classroom/plans/{plan.pk}/" and plan.steps == GOOD and plan.owner == instructor
    changed = teacher.post(f"/classroom/plans/{plan.pk}/", {"title": "Week 1b", "steps": json.dumps(GOOD[:2])})
    plan.refresh_from_db()
    assert changed.status_code == 302 and (plan.title, plan.steps) == ("Week 1b", GOOD[:2])

    other = django_user_model.objects.create_user(username="other-teacher", password="pw-for-tests-only")
    other.groups.add(Group.objects.get_or_create(name="instructors")[0])
    for path in (f"/classroom/plans/{plan.pk}/", f"/classroom/plans/{plan.pk}/export/"):
        assert client_as(other).get(path).status_code == 404  # another's plan is not there for them
    assert client_as(other).post(f"/classroom/plans/{plan.pk}/delete/").status_code == 404

    exported = teacher.get(f"/classroom/plans/{plan.pk}/export/")
    assert "attachment" in exported["Content-Disposition"]
    assert plan_from_json(exported.content.decode()) == ("Week 1b", GOOD[:2])
    from django.core.files.uploadedfile import SimpleUploadedFile

    shipped = teacher.get("/classroom/plans/shipped/export/").content
    imported = teacher.post("/classroom/plans/import/", {"file": SimpleUploadedFile("whole.json", shipped)})
    copy = LessonPlan.objects.exclude(pk=plan.pk).get()
    assert imported["Location"] == f"/classroom/plans/{copy.pk}/" and copy.steps == list(shipped_plan()[1])
    bad = teacher.post("/classroom/plans/import/", {"file": SimpleUploadedFile("x.json", b'{"steps": []}')})
    assert bad.status_code == 400 and "not a lesson plan" in bad.content.decode()
    duplicated = teacher.post("/classroom/plans/shipped/duplicate/")
    assert duplicated.status_code == 302 and LessonPlan.objects.filter(title="The whole lesson (copy)").count() == 1
    asked = teacher.get(f"/classroom/plans/{plan.pk}/delete/")  # Delete asks first, and deletes nothing yet
    assert asked.status_code == 200 and 'data-testid="delete-confirm"' in asked.content.decode()
    assert "Week 1b" in asked.content.decode() and LessonPlan.objects.filter(pk=plan.pk).exists()
    assert teacher.post(f"/classroom/plans/{plan.pk}/delete/").status_code == 302
    assert not LessonPlan.objects.filter(pk=plan.pk).exists()
    # An import's problems: one a line, each naming the bad value.
    steps = [{"do": "exercise", "exercise": "encoder-99"}, {"do": "experiment", "kind": "gradflow"}]
    two = teacher.post("/classroom/plans/import/", {"file": SimpleUploadedFile("x.json", plan_to_json("x", steps).encode())})
    page = two.content.decode()
    assert two.status_code == 400 and page.count("<li>step ") == 2 and "encoder-99" in page and "gradflow" in page


def test_a_plans_page_gathers_the_sessions_taught_with_it(client_as, instructor, session, seated):
    from webapp.classroom.models import LessonPlan
    from webapp.classroom.plans import plan_choose
    from webapp.classroom.questions import question_reveal

    plan = LessonPlan.objects.create(owner=instructor, title="Week 1", steps=GOOD)
    plan_choose(session=session, user=instructor, frame={"plan": str(plan.pk)})
    ann, bob = seated("ann"), seated("bob")
    question = ask_choice(session, "a", "b")
    answer_as(session, ann, question, "a")
    answer_as(session, bob, question, "b")
    question_reveal(question=question, answer="a")
    page = client_as(instructor).get(f"/classroom/plans/{plan.pk}/").content.decode()
    row = page[page.index('data-testid="plan-results"'):].split("</tr>")[1]
    assert session.title in row and "<td>2</td><td>1</td><td>2</td><td>1 (50 %)</td>" in row
    from webapp.classroom.errors import ClassroomError

    with pytest.raises(ClassroomError):  # a plan that is not the instructor's
        plan_choose(session=session, user=instructor, frame={"plan": str(plan.pk + 1000)})
    for bad in ("²", "1.5", "9" * 5000, [plan.pk], True):  # a digit to str.isdigit but not to int, and the rest
        with pytest.raises(ClassroomError) as why:
            plan_choose(session=session, user=instructor, frame={"plan": bad})
        assert why.value.code == "bad_params"
    plan_choose(session=session, user=instructor, frame={"plan": plan.pk})  # a number as a number
    plan_choose(session=session, user=instructor, frame={"plan": "shipped"})
    session.refresh_from_db()
    assert session.plan is None
