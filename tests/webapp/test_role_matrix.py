"""Role × URL → what each kind of visitor gets. Every page of the app joins this table."""
from __future__ import annotations

import pytest

LOGIN = "login"  # anonymous visitors are sent to the login page

# path: expected outcome for (anonymous, student, instructor, admin)
MATRIX: dict[str, tuple[object, int, int, int]] = {
    "/": (LOGIN, 200, 200, 200),
    "/admin/": (LOGIN, 403, 403, 200),
    "/admin/auth/user/": (LOGIN, 403, 403, 200),
    "/models/": (LOGIN, 200, 200, 200),
    "/models/no-such-model/knows/?source=x": (LOGIN, 404, 404, 404),  # a real model's: tests/webapp/registry
    "/playground/": (LOGIN, 200, 200, 200),
    "/playground/model/?model=no-such-model": (LOGIN, 404, 404, 404),
    "/training/": (LOGIN, 403, 403, 200),
    "/training/new/": (LOGIN, 403, 403, 200),
    "/training/rows/": (LOGIN, 403, 403, 200),
    "/training/datasets/": (LOGIN, 403, 403, 200),
    "/training/jobs/999999/": (LOGIN, 403, 403, 404),  # job pages with a real job: tests/webapp/training
    "/classroom/": (LOGIN, 200, 200, 200),
    "/classroom/join/": (LOGIN, 200, 200, 200),
    "/classroom/new/": (LOGIN, 403, 200, 200),  # GET shows the list's form; sessions' own pages: tests/webapp/classroom
    "/classroom/ZZZZZZ9/": (LOGIN, 404, 404, 404),
    "/classroom/ZZZZZZ9/console/": (LOGIN, 404, 404, 404),
    "/classroom/ZZZZZZ9/history/": (LOGIN, 404, 404, 404),
    "/classroom/ZZZZZZ9/end/": (LOGIN, 404, 404, 404),
    "/lesson/": (LOGIN, 200, 200, 200),
    "/lesson/encoder/": (LOGIN, 200, 200, 200),
    "/lesson/decoder/": (LOGIN, 200, 200, 200),
    "/lesson/residual-norm/": (LOGIN, 200, 200, 200),
    "/lesson/questions/": (LOGIN, 200, 200, 200),
    "/lesson/glossary/": (LOGIN, 200, 200, 200),
    "/lesson/progress/": (LOGIN, 403, 200, 200),  # students' progress: their instructors (and admins)
    "/lesson/demo/encoder/": (LOGIN, 405, 405, 405),  # POST only: tests/webapp/lesson
    "/lesson/train/mask/": (LOGIN, 405, 405, 405),
    "/lesson/runs/999999/": (LOGIN, 404, 404, 404),
    "/lesson/exercises/no-such-exercise/reveal/": (LOGIN, 405, 405, 405),
    "/experiments/": (LOGIN, 200, 200, 200),
    "/experiments/norm-position/": (LOGIN, 200, 200, 200),
    "/experiments/residuals/": (LOGIN, 200, 200, 200),
    "/experiments/layernorm/": (LOGIN, 200, 200, 200),
    "/experiments/launch/": (LOGIN, 405, 405, 405),  # POST only: tests/webapp/experiments
    "/experiments/runs/999999/": (LOGIN, 404, 404, 404),
    "/experiments/runs/999999/result/": (LOGIN, 404, 404, 404),
    "/accounts/login/": (200, 302, 302, 302),  # signed-in users are sent home
    "/accounts/register/": (200, 302, 302, 302),
}


@pytest.mark.parametrize("path", sorted(MATRIX))
def test_each_role_gets_what_the_matrix_says(path, client_as, student, instructor, admin):
    for user, expected in zip((None, student, instructor, admin), MATRIX[path], strict=True):
        response = client_as(user).get(path)
        who = user.username if user else "anonymous"
        if expected == LOGIN:
            assert response.status_code == 302, f"{who} on {path}"
            assert response["Location"].startswith("/accounts/login/"), f"{who} on {path}: {response['Location']}"
            assert "next=" in response["Location"]
        else:
            assert response.status_code == expected, f"{who} on {path}"


def test_a_403_page_explains_itself(client_as, student):
    response = client_as(student).get("/admin/")
    assert response.status_code == 403
    assert b"doesn&#x27;t have the role" in response.content or b"doesn't have the role" in response.content
