"""The web page's layout at a laptop's window (1280x800) and a phone's (390x844), in
headless Chromium over the seeded store: every main view (sign in, the subject list, a
subject's memories, search, the correct dialog, an expanded trace, a family's history,
the review queue) measured with
``getBoundingClientRect``: the page never scrolls sideways, an instant never breaks
across lines, a dialog's buttons stay inside the window. Each view's screenshot goes to
``artifacts/web/<view>-<width>x<height>.png``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import web_site
from memledger.testing.scenarios import FAMILY, SUBJECT
from web_helpers import TRACE_REQUEST
from web_site import Browser, Page, Site, daily_id, expect, open_subject, opened, shot, sign_in

SIZES = [(1280, 800), (390, 844)]


browser = web_site.browser  # the shared fixtures, by their names here
site = web_site.site


@pytest.fixture(params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def page(request: pytest.FixtureRequest, browser: Browser, site: Site) -> Iterator[Page]:
    width, height = request.param
    with opened(browser, site, width=width, height=height) as shown:
        yield shown


def size(page: Page) -> str:
    box = page.viewport_size
    assert box is not None
    return f"{box['width']}x{box['height']}"


def no_sideways_scroll(page: Page) -> None:
    """Nothing but a box's own scroller (a timeline, a wide table) is wider than the
    window: the page itself does not scroll sideways."""
    wide = page.evaluate(
        "() => ({window: window.innerWidth,"
        " page: document.documentElement.scrollWidth, body: document.body.scrollWidth})"
    )
    assert wide["page"] <= wide["window"] and wide["body"] <= wide["window"], wide


def dates_on_one_line(page: Page, where: str, *, at_least: int) -> None:
    """Every instant shown under ``where`` is one line: one box whose height is its line
    height, with the full instant in its title."""
    found = page.evaluate(
        """(where) => [...document.querySelectorAll(`${where} time.date`)]
            .filter((el) => el.getClientRects().length > 0)
            .map((el) => ({
              text: el.textContent,
              title: el.title,
              datetime: el.getAttribute("datetime"),
              boxes: el.getClientRects().length,
              height: el.getBoundingClientRect().height,
              line: parseFloat(getComputedStyle(el).lineHeight),
            }))""",
        where,
    )
    assert len(found) >= at_least, found
    for shown in found:
        assert shown["boxes"] == 1, shown
        assert abs(shown["height"] - shown["line"]) < 1, shown
        assert shown["title"] == shown["datetime"] and shown["title"].startswith("2026-"), shown


def fits(page: Page, view: str, dates: dict[str, int]) -> None:
    """The page does not scroll sideways, and each instant under each selector of
    ``dates`` (at least so many there) is on one line; then the whole page's screenshot
    goes to ``<view>-<size>.png``."""
    for where, at_least in dates.items():
        dates_on_one_line(page, where, at_least=at_least)
    no_sideways_scroll(page)
    shot(page, f"{view}-{size(page)}")


def sign_in_admin(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    expect(page.locator("#subject-list time.date")).to_have_count(3)


def test_sign_in_and_the_subject_list(page: Page, site: Site) -> None:
    page.goto("/ui/")
    expect(page.locator("#key")).to_be_visible()
    no_sideways_scroll(page)
    shot(page, f"sign-in-{size(page)}")
    sign_in_admin(page, site)
    names = page.locator("#subject-list .subject-name")
    assert names.evaluate_all("(els) => els.every((el) => el.scrollWidth <= el.clientWidth)")
    fits(page, "subjects", {"#subject-list": 3})


def test_a_subjects_memories(page: Page, site: Site) -> None:
    sign_in_admin(page, site)
    open_subject(page, SUBJECT)
    expect(page.locator(f".card[data-memory-id='{daily_id(site)}']")).to_be_visible()
    fits(page, "subject", {"#view .card": 5, "#view .summary": 1})


def test_search(page: Page, site: Site) -> None:
    sign_in_admin(page, site)
    open_subject(page, SUBJECT)
    page.fill("#search", "delivery")
    page.press("#search", "Enter")
    expect(page.locator("#view h1")).to_have_text(f"Search “delivery” in {SUBJECT}")
    expect(page.locator(".result").first).to_be_visible()
    fits(page, "search", {"#view .result": 2})


def test_the_correct_dialog_keeps_its_buttons_in_the_window(page: Page, site: Site) -> None:
    sign_in_admin(page, site)
    open_subject(page, SUBJECT)
    card = page.locator(f".card[data-memory-id='{daily_id(site)}']")
    card.get_by_role("button", name="Correct…").click()
    dialog = page.locator("#correct-dialog")
    expect(dialog).to_be_visible()
    buttons_in_the_window(page, "#correct-dialog")
    # the body scrolls to its last field; the buttons stay where they were
    page.locator("#correct-reason").evaluate("(el) => el.scrollIntoView({block: 'nearest'})")
    page.fill("#correct-reason", "Customer phoned")
    buttons_in_the_window(page, "#correct-dialog")
    reason = page.evaluate(
        """() => {
          const body = document.querySelector("#correct-dialog .dialog-body");
          const box = body.getBoundingClientRect();
          const field = document.querySelector("#correct-reason");
          const r = field.getBoundingClientRect();
          return {top: r.top - box.top, bottom: box.bottom - r.bottom, height: r.height,
                  line: parseFloat(getComputedStyle(field).lineHeight)};
        }"""
    )  # the whole field shows, three lines high, not squeezed to fit the window
    assert reason["top"] >= -1 and reason["bottom"] >= -1, reason  # scrolled to a whole pixel
    assert reason["height"] >= 3 * reason["line"], reason
    shot(page, f"correct-{size(page)}", full_page=False)
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()


def buttons_in_the_window(page: Page, dialog: str) -> None:
    """The dialog lies inside the window, and so does each of its buttons, shown (the
    point at its centre is the button, not something over it or a clipped scroller)."""
    found = page.evaluate(
        """(dialog) => {
          const box = document.querySelector(dialog).getBoundingClientRect();
          const buttons = [...document.querySelectorAll(`${dialog} .dialog-actions button`)];
          return {
            width: window.innerWidth, height: window.innerHeight,
            dialog: {top: box.top, bottom: box.bottom, left: box.left, right: box.right},
            buttons: buttons.map((b) => {
              const r = b.getBoundingClientRect();
              const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
              return {text: b.textContent, top: r.top, bottom: r.bottom, left: r.left,
                      right: r.right, hit: hit !== null && b.contains(hit)};
            }),
          };
        }""",
        dialog,
    )
    inside = found["dialog"]
    assert inside["top"] >= 0 and inside["bottom"] <= found["height"], found
    assert inside["left"] >= 0 and inside["right"] <= found["width"], found
    assert len(found["buttons"]) == 2, found
    for button in found["buttons"]:
        assert button["top"] >= 0 and button["bottom"] <= found["height"], button
        assert button["left"] >= 0 and button["right"] <= found["width"], button
        assert button["hit"], button


def test_an_expanded_trace(page: Page, site: Site) -> None:
    sign_in_admin(page, site)
    page.click("#tab-traces")
    trace = page.locator("details.trace", has_text=TRACE_REQUEST)
    trace.locator("summary").click()
    expect(trace.locator("table.included .said").first).to_have_text("Delivery: daily")
    expect(trace.locator("table.excluded .said")).to_have_count(2)
    fits(page, "trace", {"#view .trace": 1})


def test_a_familys_history_and_the_review_queue(page: Page, site: Site) -> None:
    sign_in_admin(page, site)
    page.goto(f"/ui/#/s/{SUBJECT}/h/{FAMILY}")
    expect(page.locator("table.records tbody tr")).to_have_count(4)
    fits(page, "history", {"#view table.records": 11, "#view table.changes": 5})
    page.click("#tab-reviews")
    expect(page.locator(".review")).to_have_count(1)
    fits(page, "reviews", {"#view .review": 1})
