"""The web page, in headless Chromium driven by Playwright, against ``memledger serve``'s
app under a real uvicorn server over a real SQLite store seeded with seed 000's story.

The browser's clock is fixed at the server's (:data:`web_helpers.NOW`, October 28), so
"now" means the same instant on both sides. Screenshots go to ``artifacts/web/``.
Also here: ``GET /v1/subjects``, the route the page lists subjects with.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import web_site
from memledger.testing.scenarios import (
    FAMILY,
    SUBJECT,
    TENANT,
    day,
    event,
    planner_private_friday,
)
from memledger.web import STATIC
from web_helpers import INJECTED, INJECTED_SUBJECT, NOW, REVIEW_SUBJECT, TRACE_REQUEST
from web_site import (
    NOW_Z,
    Browser,
    Page,
    Site,
    daily_id,
    expect,
    family,
    open_subject,
    opened,
    records,
    shot,
    sign_in,
)

HISTORY = f"/v1/subjects/{SUBJECT}/families/{FAMILY}/history"


browser = web_site.browser  # the shared fixtures, by their names here
site = web_site.site


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    with opened(browser, site, width=1280, height=900) as shown:
        yield shown


# -- signing in ------------------------------------------------------------------------


def test_sign_in_shows_who_and_sign_out_forgets_the_key(page: Page, site: Site) -> None:
    page.goto("/ui/")
    expect(page.locator("#key")).to_have_attribute("type", "password")
    page.fill("#key", "mlk_000000000000.not-a-secret")
    page.press("#key", "Enter")
    expect(page.locator("#signin-error")).to_be_visible()
    expect(page.locator("#signin-error")).not_to_be_empty()
    assert page.evaluate("sessionStorage.length") == 0
    shot(page, "00-sign-in-error")

    sign_in(page, site.admin)
    expect(page.locator("#who-text")).to_have_text("acme · admin-1 · admin key")
    assert page.evaluate("sessionStorage.getItem('memledger.key')") == site.admin
    assert page.evaluate("localStorage.length") == 0
    page.reload()  # the key lasts as long as the tab
    expect(page.locator("#who-text")).to_have_text("acme · admin-1 · admin key")

    page.click("#sign-out")
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()
    assert page.evaluate("sessionStorage.length") == 0
    expect(page.locator("#key")).to_be_focused()


# -- a subject, its timeline and its history ---------------------------------------------


def test_open_subject_shows_current_memory_with_provenance_and_timeline(
    page: Page, site: Site
) -> None:
    sign_in(page, site.admin)
    subjects = page.locator("#subject-list a[data-subject]")
    expect(subjects).to_have_count(3)
    expect(subjects.first).to_contain_text("user-42")
    open_subject(page, SUBJECT)

    # the current value, and the window the same event opened from November 1
    cards = family(page).locator(".kind[data-kind='preference'] .card")
    expect(cards).to_have_count(2)
    card = cards.nth(0)
    expect(card).to_have_attribute("data-memory-id", daily_id(site))
    expect(cards.nth(1).locator(".claim")).to_have_text("Delivery: friday")
    expect(cards.nth(1).locator(".badges")).to_contain_text("upcoming")
    expect(card.locator(".badges")).not_to_contain_text("upcoming")
    expect(card.locator(".claim")).to_have_text("Delivery: daily")
    expect(card.locator(".valid")).to_have_text("valid 2026-10-19 09:00 → 2026-11-01")
    provenance = card.locator("dl.prov")
    for label, value in (
        ("said by", "user-42"),
        ("authenticated", "yes"),
        ("authorized", "yes"),
        ("channel", "chat"),
        ("source event", "evt-oct19"),
    ):
        expect(provenance.locator("div", has=page.locator("dt", has_text=label))).to_contain_text(
            value
        )
    expect(card.locator(".badges")).to_contain_text("not a business setting")
    # the source event, on demand
    card.get_by_role("button", name="evt-oct19").click()
    expect(card.locator(".event blockquote")).to_have_text(
        "Daily for the rest of October please, then Friday again from November 1."
    )

    # the timeline: two record-time revisions; now three windows, before it one
    svg = family(page).locator("svg.timeline")
    expect(svg).to_have_count(1)
    rows = svg.locator("g.row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator(".win")).to_have_count(3)
    expect(rows.nth(0).locator(".win[data-status='active']")).to_have_count(3)
    expect(rows.nth(1).locator(".win")).to_have_count(1)
    expect(rows.nth(1).locator(".win[data-status='superseded']")).to_have_count(1)
    expect(rows.nth(1)).to_have_attribute("data-revision", "1")
    # a text alternative says the same
    family(page).locator(".timeline-table summary").click()
    expect(family(page).locator(".timeline-table tbody tr")).to_have_count(4)

    shot(page, "01-subject")

    # focus shows a window's details; Enter opens its history
    daily = rows.nth(0).locator(f".win[data-memory-id='{daily_id(site)}']")
    page.mouse.move(0, 0)  # no bar under the pointer: the tooltip is the focused one's
    daily.focus()
    expect(page.locator("#tooltip")).to_be_visible()
    expect(page.locator("#tooltip")).to_contain_text("daily · valid 2026-10-19 09:00 → 2026-11-01")
    shot(page, "01b-timeline-focus", full_page=False)
    page.keyboard.press("Enter")
    expect(page.locator("#view h1")).to_have_text(f"History of {FAMILY}")
    selected = page.locator("table.records tr.selected")
    expect(selected).to_have_attribute("data-memory-id", daily_id(site))
    expect(selected).to_be_focused()
    expect(page.locator("table.records tbody tr")).to_have_count(4)
    expect(page.locator("table.changes tbody tr")).to_have_count(5)
    shot(page, "02-history")


def test_valid_at_shows_what_was_true_then(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    page.goto(f"/ui/#/s/{SUBJECT}?valid_at=2026-11-05T00:00")
    card = family(page).locator(".card")
    expect(card).to_have_count(1)
    expect(card.locator(".claim")).to_have_text("Delivery: friday")
    expect(page.locator(".summary")).to_contain_text("valid at 2026-11-05 UTC")


# -- revoking --------------------------------------------------------------------------


def test_revoke_asks_first_then_removes_from_current_and_keeps_history(
    page: Page, site: Site
) -> None:
    daily = daily_id(site)
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    card = page.locator(f".card[data-memory-id='{daily}']")
    dialog = page.locator("#revoke-dialog")

    # cancel: nothing changes
    card.get_by_role("button", name="Revoke…").click()
    expect(dialog).to_be_visible()
    expect(dialog.locator("#revoke-what")).to_contain_text("Delivery: daily")
    expect(dialog.locator("#revoke-what")).to_contain_text(daily)
    expect(dialog).to_contain_text("stops its use at once")
    expect(dialog).to_contain_text("history keeps that it existed")
    # the same event's other claim in the family goes with it, and the dialog says so
    expect(dialog.locator("#revoke-also")).to_contain_text("Delivery: friday")
    expect(page.locator("#revoke-reason")).to_be_focused()
    shot(page, "03-revoke-dialog")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert [r["memory_id"] for r in records(site)] == [daily]
    expect(card).to_be_visible()

    # no reason: refused on the page, nothing sent
    card.get_by_role("button", name="Revoke…").click()
    dialog.get_by_role("button", name="Revoke memory").click()
    expect(page.locator("#revoke-error")).to_contain_text("reason is required")
    expect(dialog).to_be_visible()
    assert [r["memory_id"] for r in records(site)] == [daily]

    # confirmed with a reason
    page.fill("#revoke-reason", "The customer never asked for daily deliveries")
    dialog.get_by_role("button", name="Revoke memory").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#toast")).to_contain_text("Revoked 2 memories")
    expect(page.locator(f".card[data-memory-id='{daily}']")).to_have_count(0)
    expect(family(page).locator(".nothing")).to_contain_text("Nothing current in")
    rows = family(page).locator("svg.timeline g.row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0).locator(".win")).to_have_count(1)
    expect(rows.nth(1).locator(".win.win-revoked[data-status='revoked']")).to_have_count(2)
    expect(rows.nth(1).locator(f".win[data-memory-id='{daily}']")).to_have_count(1)
    shot(page, "04-after-revoke")

    family(page).get_by_role("link", name="History", exact=True).click()
    row = page.locator(f"table.records tr[data-memory-id='{daily}']")
    expect(row).to_contain_text("revoked")
    expect(row.get_by_role("button", name="Revoke…")).to_have_count(0)
    expect(page.locator("table.changes tr[data-action='revoked']")).to_have_count(2)
    expect(page.locator("table.changes")).to_contain_text(
        "The customer never asked for daily deliveries"
    )
    shot(page, "05-history-after-revoke")

    # the API agrees: gone from current, in the history (an audit), not recalled
    assert records(site) == []
    with site.client() as api:
        audit = api.get(HISTORY, params={"include_revoked": "true"}).json()
        assert {r["memory_id"]: r["status"] for r in audit}[daily] == "revoked"
        assert daily not in [r["memory_id"] for r in api.get(HISTORY).json()]
        recalled = api.post("/v1/recall", json={"query": "daily delivery", "subject": SUBJECT})
        assert daily not in [i["memory_id"] for i in recalled.json()["items"]]


def test_read_only_key_sees_no_revoke_or_correct(page: Page, site: Site) -> None:
    sign_in(page, site.reader)
    expect(page.locator("#who-text")).to_contain_text("read-only key")
    open_subject(page, SUBJECT)
    expect(family(page).locator(".card")).to_have_count(2)
    expect(page.get_by_role("button", name="Revoke…")).to_have_count(0)
    expect(page.get_by_role("button", name="Correct…")).to_have_count(0)
    expect(page.get_by_role("button", name="Add a memory…")).to_have_count(0)


# -- correcting ------------------------------------------------------------------------


def test_correct_posts_a_new_event_and_closes_the_old_window(page: Page, site: Site) -> None:
    daily = daily_id(site)
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    page.locator(f".card[data-memory-id='{daily}']").get_by_role("button", name="Correct…").click()
    dialog = page.locator("#correct-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("not an edit")
    expect(dialog).to_contain_text("never overwritten")
    expect(page.locator("#correct-grant")).to_be_hidden()  # the admin key holds every grant
    expect(page.locator("#correct-statement")).to_have_value("Delivery: daily")
    page.fill("#correct-statement", "Delivery: weekly")
    page.fill("#correct-value", "weekly")
    dialog.get_by_role("button", name="Record correction").click()
    expect(page.locator("#correct-error")).to_contain_text("reason is required")
    reason = "Customer phoned: weekly deliveries from now on"
    page.fill("#correct-reason", reason)
    shot(page, "06-correct-dialog")
    dialog.get_by_role("button", name="Record correction").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#toast")).to_contain_text("Recorded as the current value")
    card = family(page).locator(".card")
    expect(card).to_have_count(1)
    expect(card.locator(".claim")).to_have_text("Delivery: weekly")
    expect(card.locator("dl.prov")).to_contain_text("admin-1")

    # the API: one new event, with the reason as its text; the old window closed, kept
    (current,) = records(site)
    assert (current["value"], current["source_actor_id"]) == ("weekly", "admin-1")
    with site.client() as api:
        found = api.get(f"/v1/events/{current['source_event_id']}").json()["event"]
        assert found["text"] == reason
        assert found["metadata"]["corrects"] == daily
        history = {r["memory_id"]: r for r in api.get(HISTORY).json()}
    assert history[daily]["status"] == "superseded"
    assert history[daily]["superseded_at"] == NOW_Z
    remnant = [r for r in history.values() if r["supersedes"] == daily]
    assert [(r["value"], r["valid_until"]) for r in remnant] == [("daily", NOW_Z)]


# -- search, empty states, the review queue, traces ---------------------------------------


def test_search_box_uses_recall(page: Page, site: Site) -> None:
    daily = daily_id(site)
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    expect(page.locator("#search-scope")).to_have_value("subject")
    page.fill("#search", "daily delivery")
    page.press("#search", "Enter")
    expect(page.locator("#view h1")).to_have_text("Search “daily delivery” in user-42")
    result = page.locator(f".result[data-memory-id='{daily}']")
    expect(result).to_have_count(1)
    expect(result.locator(".claim")).to_have_text("Delivery: daily")
    shot(page, "07-search")

    # scoped to the subject: nothing of another subject; tenant-wide: theirs too
    page.fill("#search", "delivery")
    page.press("#search", "Enter")
    expect(page.locator("#view h1")).to_have_text("Search “delivery” in user-42")
    expect(page.locator(".result").first).to_be_visible()
    expect(page.locator(".result", has_text=INJECTED)).to_have_count(0)
    page.select_option("#search-scope", "tenant")
    page.press("#search", "Enter")
    expect(page.locator("#view h1")).to_have_text("Search “delivery” in all subjects")
    expect(page.locator(".result", has_text=INJECTED)).to_have_count(1)

    page.fill("#search", "zebra quantum harmonica")
    page.press("#search", "Enter")
    expect(page.locator("#view h1")).to_contain_text("in all subjects")
    expect(page.locator("#view .empty")).to_contain_text("No relevant memory")


def expect_scope(page: Page, heading: str, chosen: str) -> None:
    """The view's heading, and the choice the search scope selector shows."""
    expect(page.locator("#view h1")).to_have_text(heading)
    expect(page.locator("#search-scope option:checked")).to_have_text(chosen)


def test_search_scope_and_heading_agree_through_navigation_and_reload(
    page: Page, site: Site
) -> None:
    sign_in(page, site.admin)
    expect_scope(page, "Memories", "all subjects")
    open_subject(page, SUBJECT)
    expect_scope(page, SUBJECT, f"in {SUBJECT}")
    page.fill("#search", "delivery")
    page.press("#search", "Enter")
    in_subject = f"Search “delivery” in {SUBJECT}"
    everywhere = "Search “delivery” in all subjects"
    expect_scope(page, in_subject, f"in {SUBJECT}")

    # switching the scope on a search searches again there: the heading follows
    page.select_option("#search-scope", "tenant")
    expect_scope(page, everywhere, "all subjects")
    assert "subject=" not in page.url
    expect(page.locator(".result", has_text=INJECTED)).to_have_count(1)
    page.go_back()
    expect_scope(page, in_subject, f"in {SUBJECT}")
    expect(page.locator(".result", has_text=INJECTED)).to_have_count(0)
    page.go_forward()
    expect_scope(page, everywhere, "all subjects")

    # the address holds the scope: a reload, or a link opened afresh, shows the same
    page.reload()
    expect_scope(page, everywhere, "all subjects")
    page.goto(f"/ui/#/search?q=delivery&subject={INJECTED_SUBJECT}")
    page.reload()
    expect_scope(page, f"Search “delivery” in {INJECTED_SUBJECT}", f"in {INJECTED_SUBJECT}")

    # a choice not yet searched is forgotten when the page moves elsewhere and back
    open_subject(page, REVIEW_SUBJECT)
    expect_scope(page, REVIEW_SUBJECT, f"in {REVIEW_SUBJECT}")
    page.select_option("#search-scope", "tenant")
    expect(page.locator("#view h1")).to_have_text(REVIEW_SUBJECT)  # no search yet
    page.go_back()
    expect_scope(page, f"Search “delivery” in {INJECTED_SUBJECT}", f"in {INJECTED_SUBJECT}")
    page.go_forward()
    expect_scope(page, REVIEW_SUBJECT, f"in {REVIEW_SUBJECT}")
    page.click("#tab-reviews")  # a tenant-wide view searches the tenant
    expect_scope(page, "Review queue", "all subjects")
    page.fill("#search", "delivery")
    page.press("#search", "Enter")
    expect_scope(page, everywhere, "all subjects")


def test_empty_states(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    page.fill("#subject-prefix", "nobody")
    expect(page.locator("#subject-list .empty")).to_contain_text("No subjects start with “nobody”")
    page.goto("/ui/#/s/user-9")
    expect(page.locator("#view h1")).to_have_text("user-9")
    expect(page.locator("#view .empty")).to_contain_text("No memories for user-9 yet.")
    expect(page.locator("#view .whose")).to_have_text("Whose: shared")
    shot(page, "08-empty-subject")
    page.goto("/ui/#/s/agent:planner/user-9")  # an agent's private namespace (item 6)
    expect(page.locator("#view .whose")).to_have_text("Whose: private to agent:planner")
    page.goto("/ui/#/traces?subject=user-9")
    expect(page.locator("#view .empty")).to_contain_text("No context traces for user-9 yet.")


def test_memory_text_is_shown_as_text_never_as_markup(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    open_subject(page, INJECTED_SUBJECT)
    card = family(page).locator(".card")
    expect(card.locator(".claim")).to_have_text(f"Delivery: {INJECTED}")
    expect(card.locator(".value code")).to_have_text(INJECTED)
    card.get_by_role("button", name="evt-markup").click()
    expect(card.locator(".event blockquote")).to_have_text(f"Call me {INJECTED} please")
    page.mouse.move(0, 0)
    family(page).locator(".win").first.focus()
    expect(page.locator("#tooltip")).to_contain_text(INJECTED)
    page.get_by_role("link", name="History", exact=True).first.click()
    expect(page.locator("table.records")).to_contain_text(INJECTED)
    page.fill("#search", "img onerror")
    page.press("#search", "Enter")
    expect(page.locator("#view h1")).to_contain_text("img onerror")
    page.wait_for_load_state("networkidle")
    assert page.locator("img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_observation_is_shown_apart_as_not_authorised(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    open_subject(page, INJECTED_SUBJECT)
    city = family(page, "home_city")
    group = city.locator(".kind[data-kind='observation']")
    expect(group.locator("h3")).to_have_text("observation — retained, not authorised")
    card = group.locator(".card")
    expect(card.locator(".claim")).to_have_text("Lives in Lyon")
    expect(card.locator(".badges")).to_contain_text("not authorised: no_grant")
    provenance = card.locator("dl.prov")
    expect(
        provenance.locator("div", has=page.locator("dt", has_text="authorized"))
    ).to_contain_text("no")
    expect(
        provenance.locator("div", has=page.locator("dt", has_text="authenticated"))
    ).to_contain_text("yes")
    # an observation is no window: nothing to draw, and the page says why
    expect(city.locator("svg.timeline")).to_have_count(0)
    expect(city).to_contain_text("No authorised windows to draw")


def test_keyboard_slash_focuses_search_and_escape_closes_dialogs(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    page.keyboard.press("/")
    expect(page.locator("#search")).to_be_focused()
    expect(page.locator("#search")).to_have_value("")  # the slash was not typed
    page.keyboard.press("Escape")

    revoke = family(page).get_by_role("button", name="Revoke…").first
    revoke.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#revoke-dialog")).to_be_visible()
    page.keyboard.press("/")  # typing in the dialog stays in the dialog
    expect(page.locator("#revoke-reason")).to_have_value("/")
    page.keyboard.press("Escape")
    expect(page.locator("#revoke-dialog")).to_be_hidden()
    assert len(records(site)) == 1

    page.locator("#view h1").focus()
    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help-dialog")).to_be_hidden()

    # the subject list is reachable with Tab, and Enter on a subject opens it
    page.locator("#subject-prefix").focus()
    page.keyboard.press("Tab")
    expect(page.locator("#subject-list a").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#view h1")).to_have_text("user-42")


def test_review_queue_accept_with_reason(page: Page, site: Site) -> None:
    sign_in(page, site.admin)
    expect(page.locator("#review-count")).to_have_text("1")
    page.click("#tab-reviews")
    item = page.locator(".review")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("evt-hold-b")
    expect(item).to_contain_text(REVIEW_SUBJECT)
    expect(item.locator("table")).to_contain_text("Delivery: monday")
    shot(page, "09-reviews")
    item.get_by_role("button", name="Accept…").click()
    dialog = page.locator("#review-dialog")
    expect(dialog).to_contain_text("Accept the batch of event evt-hold-b?")
    page.fill("#review-reason", "Monday is the newer wish")
    dialog.get_by_role("button", name="Accept").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#view .empty")).to_contain_text("The review queue is empty.")
    expect(page.locator("#review-count")).to_be_hidden()
    with site.client() as api:
        (done,) = api.get("/v1/reviews", params={"all": "true"}).json()
    assert (done["resolution"], done["resolved_by"]) == ("accepted", "admin-1")
    assert done["resolution_reason"] == "Monday is the newer wish"


def test_review_queue_explains_itself_to_other_keys(page: Page, site: Site) -> None:
    sign_in(page, site.reader)
    page.click("#tab-reviews")
    expect(page.locator(".review")).to_have_count(1)
    expect(page.locator("#view .intro")).to_contain_text("Only admin keys can accept or reject")
    expect(page.get_by_role("button", name="Accept…")).to_have_count(0)


def test_traces_show_included_and_excluded_items(page: Page, site: Site) -> None:
    daily = daily_id(site)
    sign_in(page, site.admin)
    page.click("#tab-traces")
    trace = page.locator("details.trace")
    expect(trace).to_have_count(1)
    expect(trace.locator("summary")).to_contain_text(TRACE_REQUEST)
    trace.locator("summary").click()
    expect(trace.locator("table.included")).to_contain_text(daily)
    # each memory with what it said: the statement the model was given, and its kind
    held = trace.locator(f"table.included tr[data-key='{daily}']")
    expect(held.locator(".said")).to_have_text("Delivery: daily")
    expect(held.locator(".hint")).to_contain_text(f"preference · {FAMILY} · {daily}")
    left_out = trace.locator("table.excluded tbody tr")
    expect(left_out).to_have_count(2)
    expect(left_out.filter(has_text="expired")).to_contain_text("its valid window had ended")
    expect(left_out.filter(has_text="not_yet_valid")).to_have_count(1)
    with site.client() as api:
        history = api.get(HISTORY, params={"include_revoked": "true"}).json()
    claims = {r["memory_id"]: r["claim"] for r in history}
    for key in left_out.evaluate_all("(rows) => rows.map((row) => row.dataset.key)"):
        expect(left_out.locator(f"xpath=self::*[@data-key='{key}']").locator(".said")).to_have_text(
            claims[key]
        )
    shot(page, "10-traces")
    trace.locator(f"table.included a:has-text('{daily}')").click()
    expect(page.locator("#view h1")).to_have_text(f"History of {FAMILY}")
    expect(page.locator("table.records tr.selected")).to_have_attribute("data-memory-id", daily)


def test_a_trace_naming_a_private_memory_is_no_trace_for_a_key_that_may_not_read_it(
    page: Page, site: Site
) -> None:
    """A tenant-wide packet left out an agent's private memory (its window had ended): an
    admin key sees the trace with that memory's words; a read key of the tenant, which
    reads only shared memory, is not shown the trace at all (it would name the memory)."""
    site.memory.clock.set(day(10, 5))  # type: ignore[attr-defined]
    hidden = planner_private_friday(site.memory)
    site.memory.clock.set(NOW)  # type: ignore[attr-defined]
    request = "Which deliveries are planned?"
    packet = site.memory.context(request, tenant=TENANT, valid_at=NOW)
    assert hidden in [left.key for left in packet.excluded]

    sign_in(page, site.admin)  # an admin key reads every namespace
    page.click("#tab-traces")
    trace = page.locator("details.trace", has_text=request)
    trace.locator("summary").click()
    row = trace.locator(f"table.excluded tr[data-key='{hidden}']")
    expect(row.locator(".said")).to_have_text("Planner: friday deliveries")
    page.click("#sign-out")

    sign_in(page, site.reader)  # a read key of the tenant reads only shared memory
    page.click("#tab-traces")
    expect(page.locator("details.trace").first).to_be_visible()  # other traces are listed
    expect(page.locator("details.trace", has_text=request)).to_have_count(0)
    expect(page.locator(f"[data-key='{hidden}']")).to_have_count(0)
    expect(page.locator("#view .error")).to_have_count(0)
    shot(page, "10b-trace-not-listed")


def test_narrow_window_stays_usable(page: Page, site: Site) -> None:
    page.set_viewport_size({"width": 800, "height": 900})
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    expect(family(page).locator("svg.timeline")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 800, width  # nothing but the timeline's own box scrolls sideways
    shot(page, "11-narrow")


# -- the page's files and the subjects route ---------------------------------------------


def test_page_is_served_with_a_strict_content_security_policy(site: Site) -> None:
    with httpx.Client(base_url=site.url, trust_env=False) as plain:
        page = plain.get("/ui/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        script = plain.get("/ui/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert plain.get("/ui/nothing-here.js").status_code == 404
    scripts = sorted(STATIC.glob("*.js"))
    assert len(scripts) >= 7
    for script in scripts:  # the page never parses data as HTML
        text = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, (script.name, sink)


def test_subjects_route_lists_pages_and_filters(site: Site) -> None:
    for n in range(12):
        hello = event(f"evt-page-{n}", "Hello there", occurred_at=NOW, subject=f"page-{n:02d}")
        site.memory.ingest(hello, [])
    with site.client(site.reader) as api:
        first = api.get("/v1/subjects", params={"prefix": "page-", "limit": 5}).json()
        assert [s["subject"] for s in first["subjects"]] == [f"page-{n:02d}" for n in range(5)]
        assert first["next"] == "page-04"
        assert first["subjects"][0] == {
            "subject": "page-00",
            "families": 0,
            "events": 1,
            "last_at": NOW_Z,
        }
        seen = [s["subject"] for s in first["subjects"]]
        after = first["next"]
        while after is not None:
            page = api.get(
                "/v1/subjects", params={"prefix": "page-", "limit": 5, "after": after}
            ).json()
            seen.extend(s["subject"] for s in page["subjects"])
            after = page["next"]
        assert seen == [f"page-{n:02d}" for n in range(12)]
        everyone = api.get("/v1/subjects").json()
        assert [s["subject"] for s in everyone["subjects"][:3]] == [
            "page-00",
            "page-01",
            "page-02",
        ]
        assert {SUBJECT, INJECTED_SUBJECT, REVIEW_SUBJECT} <= {
            s["subject"] for s in everyone["subjects"]
        }
        assert everyone["next"] is None
        bad = api.get("/v1/subjects", params={"prefix": "no spaces"})
        assert bad.status_code == 422 and bad.json()["code"]
        assert api.get("/v1/subjects", params={"limit": 0}).status_code == 422
        assert api.get("/v1/subjects", params={"tenant": "globex"}).status_code == 403
    with httpx.Client(base_url=site.url, trust_env=False) as anonymous:
        assert anonymous.get("/v1/subjects").status_code == 401
    # another tenant's key sees none of acme's subjects
    _, other = site.memory.create_key("globex", "admin-g", role="admin")
    with site.client(other) as api:
        assert api.get("/v1/subjects").json() == {"subjects": [], "next": None}


def test_search_marks_a_memory_a_later_turn_seems_to_change(page: Page, site: Site) -> None:
    from dataclasses import replace

    said = [
        ("budget-jan", "I'm getting close to my $600 annual budget for sneakers.", day(1, 10)),
        ("budget-apr", "Buying sneakers with my increased budget of $650 now.", day(4, 2)),
    ]
    for event_id, text, at in said:
        site.memory.ingest(replace(event(event_id, text, occurred_at=at), role="user"))
    site.memory.process()
    found = site.memory.recall("annual budget for sneakers", tenant=TENANT, subject=SUBJECT)
    newer = next(i for i in found.items if i.record.source_event_id == "budget-apr")
    older = next(i for i in found.items if i.record.source_event_id == "budget-jan")
    assert older.possibly_outdated_by == newer.record.memory_id
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    page.fill("#search", "annual budget for sneakers")
    page.press("#search", "Enter")
    marked = page.locator(f".result[data-memory-id='{older.record.memory_id}']")
    expect(marked.locator(".badge", has_text="possibly outdated by")).to_have_text(
        f"possibly outdated by {newer.record.memory_id}"
    )
    unmarked = page.locator(f".result[data-memory-id='{newer.record.memory_id}']")
    expect(unmarked.locator(".badge", has_text="outdated")).to_have_count(0)


def test_a_turn_is_shown_as_who_said_what_not_as_json(page: Page, site: Site) -> None:
    from dataclasses import replace

    said = "My neighbour's cat visited again this morning."
    site.memory.ingest(replace(event("turn-cat", said, occurred_at=day(10, 22)), role="user"))
    site.memory.process()
    sign_in(page, site.admin)
    open_subject(page, SUBJECT)
    turn = family(page, "conversation").locator(".card", has_text="neighbour's cat")
    expect(turn).to_have_count(1)
    line = turn.locator(".value.episode")
    expect(line.locator(".said")).to_have_text(said)
    expect(line.locator(".said-by")).to_contain_text("user-42 (user)")
    expect(line).not_to_contain_text('"text"')
    bar = family(page, "conversation").locator("svg.timeline .bar-text").first
    expect(bar).to_contain_text("user-42: My neighbour")  # the timeline says it in words
    shot(page, "13-episode")


def test_open_attributes_are_grouped_by_attribute(page: Page, site: Site) -> None:
    from datetime import timedelta

    from memledger import Actor, SourceEvent

    said = site.memory.clock.now() - timedelta(days=2)
    for n, text in enumerate(
        ["I'm vegetarian.", "I'm allergic to peanuts and shellfish.", "My sister is vegan."]
    ):
        site.memory.ingest(
            SourceEvent(
                tenant=TENANT,
                event_id=f"attr-{n}",
                subject="user-5",
                actor=Actor(id="user-5", authenticated=True),
                channel="chat",
                occurred_at=said + timedelta(minutes=n),
                text=text,
                role="user",
            )
        )
    site.memory.process(tenant=TENANT)
    sign_in(page, site.admin)
    open_subject(page, "user-5")
    section = family(page, "attribute")
    groups = section.locator(".kind.attribute")
    expect(groups.locator("h3")).to_have_text(["allergy", "diet", "sister · diet"])
    allergy = section.locator(".kind[data-attribute='allergy'] .card .claim")
    expect(allergy).to_have_count(2)
    expect(section.locator(".kind[data-attribute='sister · diet'] .claim")).to_contain_text("vegan")
    expect(section.locator(".kind[data-kind]")).to_have_count(0)  # not grouped by kind
