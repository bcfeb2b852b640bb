"""Chromium: every page fits a 360 px phone, the playground works from the keyboard and says what it did."""
from __future__ import annotations

import pytest

from tests.fixtures.browser import settled
from tests.fixtures.demo import LESSON_PAGES, STATUS, class_run, playground_ready, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TOKENS = "document.querySelectorAll('[data-testid=output-tokens] .pg-tok').length"
SIDEWAYS = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
# The outermost elements that reach past the screen's right edge, to name in a failure.
OVERFLOWING = """[...document.body.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > innerWidth + 1
    && !(e.parentElement && e.parentElement.getBoundingClientRect().right > innerWidth + 1))
    .slice(0, 4).map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}#${e.id}`)"""


@pytest.fixture
def pages(pages_to_walk: list[str]) -> list[str]:
    """The pages the Chinese walk opens (Django's own admin aside), and the question before cancelling a job."""
    job = next(path for path in pages_to_walk if path.startswith("/training/jobs/"))
    return [path for path in pages_to_walk if path != "/admin/"] + [job + "cancel/"]


def too_wide(page, what: str) -> list[str]:
    """`what` and the elements reaching past the screen's edge, if the page scrolls sideways."""
    settled(page)  # charts draw after load
    sideways = page.evaluate(SIDEWAYS)
    return [f"{what}: {sideways} px too wide: {page.evaluate(OVERFLOWING)}"] if sideways > 0 else []


def test_every_page_fits_a_360_px_phone_and_run_brings_the_output_into_view(
    asgi_server, pages, class_pages, live_class, page_factory, shared_worker
):
    shared_worker("interactive,demonstrations")

    def phone(who: str | None = None):
        screen = page_factory("en-US")
        screen.set_viewport_size({"width": 360, "height": 740})
        if who:
            sign_in(screen, asgi_server, who)
        return screen

    page = phone()
    wide = []
    for path in ("/accounts/login/", "/accounts/register/"):
        page.goto(asgi_server + path)
        wide += too_wide(page, path)
    sign_in(page, asgi_server, "admin")
    demos = dict(LESSON_PAGES)
    for path in pages:
        page.goto(asgi_server + path)
        if demos.get(path):  # the lesson's demonstration, drawn: its tables and charts fit too
            page.get_by_test_id(f"demo-run-{demos[path]}").click()
            page.wait_for_selector(f"[data-testid=demo-result-{demos[path]}] .js-plotly-plot", timeout=60_000)
        wide += too_wide(page, path)
    screens = {}
    for who, path in class_pages:
        screens[who] = screens.get(who) or phone(who)
        screens[who].goto(asgi_server + path)
        wide += too_wide(screens[who], f"{path} ({who})")
    # The live session while the instructor runs the model with every view shown, on both phones.
    console, follow = screens["instructor"], screens["student"]
    console.goto(f"{asgi_server}/classroom/{live_class.code}/console/")
    follow.goto(f"{asgi_server}/classroom/{live_class.code}/")
    class_run(console, follow)
    wide += too_wide(console, "the console after a run") + too_wide(follow, "the student's screen after a run")
    assert not wide, "\n".join(wide)

    page.goto(asgi_server + "/playground/")
    page.wait_for_function(f"{STATUS}.startsWith('Ready')")
    header = page.evaluate("document.querySelector('header.topbar').getBoundingClientRect().height")
    assert header <= 740 / 5, f"the header takes {header:.0f} of 740 px"
    page.get_by_test_id("pace").select_option("250")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{TOKENS} >= 2", timeout=60_000)
    page.wait_for_function("(() => { const r = document.querySelector('[data-testid=output]').getBoundingClientRect(); "
                           "return r.top >= 0 && r.bottom <= innerHeight; })()", timeout=5_000)  # the smooth scroll ended
    box = page.evaluate("(() => { const r = document.querySelector('[data-testid=output]').getBoundingClientRect(); "
                        "return {top: r.top, bottom: r.bottom, height: innerHeight}; })()")
    assert 0 <= box["top"] and box["bottom"] <= box["height"], f"the output is out of view: {box}"
    assert page.evaluate(SIDEWAYS) <= 0, "the playground while decoding"


def _contrast(page, selector: str) -> float:
    """WCAG contrast of an element's text against the page's background."""
    return page.evaluate("""(selector) => {
        const rgb = (text) => text.match(/[\\d.]+/g).slice(0, 3).map(Number);
        const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
            .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
        const fg = lum(rgb(getComputedStyle(document.querySelector(selector)).color));
        const bg = lum(rgb(getComputedStyle(document.body).backgroundColor));
        return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    }""", selector)


def test_from_the_keyboard_alone_a_student_reaches_the_source_and_enter_runs(
    asgi_server, demo, zh_en, page_factory, shared_worker
):
    shared_worker("interactive")
    page = page_factory("en-US")
    playground_ready(page, asgi_server)
    assert "Enter runs" in page.get_by_test_id("source-hint").inner_text()  # the shortcut is shown
    assert _contrast(page, "main a") >= 4.5

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.testid") == "skip-link"
    page.keyboard.press("Enter")  # to the main content, past the header's links
    tabs = 0
    while page.evaluate("document.activeElement.dataset.testid") != "source":
        page.keyboard.press("Tab")
        tabs += 1
        assert tabs <= 10, "the source box is more than ten Tabs into the main content"
    page.keyboard.press("Control+A")
    page.keyboard.type("我的猫追了一只老鼠。")
    page.keyboard.press("Shift+Enter")  # a new line, and nothing runs
    page.wait_for_timeout(300)  # absence: no decode starts from Shift+Enter
    assert page.evaluate(TOKENS) == 0 and "\n" in page.get_by_test_id("source").input_value()
    page.keyboard.press("Backspace")
    page.keyboard.press("Enter")
    page.wait_for_function(f"{STATUS}.startsWith('Done')", timeout=60_000)
    assert page.evaluate(TOKENS) >= 3
    assert "\n" not in page.get_by_test_id("source").input_value()


def test_the_playground_says_what_it_did_with_the_input(asgi_server, demo, zh_en, page_factory, shared_worker):
    shared_worker("interactive")
    page = page_factory("en-US")
    playground_ready(page, asgi_server)
    facts = page.get_by_test_id("model-facts").inner_text()
    assert "exact_match" not in facts and "token_accuracy" not in facts and "exact match" in facts
    assert facts.lower().count("post-ln") == 1, facts

    limit = int(page.get_by_test_id("source").get_attribute("maxlength"))
    page.get_by_test_id("source").fill("")
    page.get_by_test_id("source").focus()
    page.evaluate("""() => { const data = new DataTransfer(); data.setData('text/plain', '猫'.repeat(500));
        document.querySelector('[data-testid=source]').dispatchEvent(new ClipboardEvent('paste', {clipboardData: data})); }""")
    note = page.get_by_test_id("source-note").inner_text()
    assert f"You pasted 500 characters; {limit} were kept" in note

    page.get_by_test_id("source").fill("   ")
    page.get_by_test_id("run").click()
    page.wait_for_function(f"{STATUS}.startsWith('Could not decode')")
    status = page.get_by_test_id("status")
    assert "empty_source" not in status.inner_text()  # a sentence for the student
    assert status.get_attribute("data-code") == "empty_source"  # the code for developers
