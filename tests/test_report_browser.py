"""The HTML report in a real browser (Debian's chromium driven by Playwright), from file://.

Skips with a visible reason when /usr/bin/chromium is absent, unless
CONFORMANCE_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.report import render_html

CHROMIUM = Path(os.environ.get("CONFORMANCE_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("CONFORMANCE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CONFORMANCE_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page_for(browser: Any, tmp_path: Path) -> Iterator[Any]:
    """Open a matrix doc's HTML from file://; collects console errors and network requests."""
    pages: list[Any] = []

    def open_doc(doc: dict[str, Any], name: str = "report.html") -> Any:
        path = tmp_path / name
        path.write_text(render_html(doc), encoding="utf-8")
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.errors, page.requests, page.failed = [], [], []
        page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.on("request", lambda r: page.requests.append(r.url))
        page.on("requestfailed", lambda r: page.failed.append(r.url))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        pages.append(page)
        return page

    yield open_doc
    for p in pages:
        p.close()


def _visible_cells(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "table[data-section='providers'] td.c",
        "tds => tds.filter(td => td.offsetParent !== null && !td.classList.contains('nomatch'))"
        ".map(td => td.dataset.column + '/' + td.dataset.row + '=' + td.dataset.verdict)",
    )


def test_report_in_a_real_browser(page_for: Any) -> None:
    from test_report import demo_doc

    page = page_for(demo_doc())
    assert page.title() == "Streaming tool-call conformance"
    all_cells = _visible_cells(page)
    assert len(all_cells) == 12 and "dashscope/single=quirk" in all_cells

    page.select_option("[data-testid=filter-verdict]", "quirk")
    quirky = _visible_cells(page)
    assert quirky and len(quirky) < len(all_cells)
    assert all(c.endswith("=quirk") for c in quirky)
    assert page.locator("th[data-column='openai']").is_hidden()  # no quirk there
    page.select_option("[data-testid=filter-verdict]", "")
    page.select_option("[data-testid=filter-provider]", "llamacpp")
    assert {c.split("/")[0] for c in _visible_cells(page)} == {"llamacpp"}
    page.select_option("[data-testid=filter-provider]", "")
    page.select_option("[data-testid=filter-quirk]", "Q-INDEX-ALL-ZERO")
    assert _visible_cells(page) == ["dashscope/parallel=quirk"]
    page.select_option("[data-testid=filter-scenario]", "single")
    assert _visible_cells(page) == []
    page.click("[data-testid=filter-reset]")
    page.wait_for_function("document.querySelectorAll('td.c.nomatch').length === 0")
    assert len(_visible_cells(page)) == len(all_cells)

    evidence = page.locator("#evidence")
    assert evidence.is_hidden()
    page.click("td.c[data-column='dashscope'][data-row='single'] button")
    assert evidence.is_visible()
    text = evidence.inner_text()
    assert "/choices/0/delta/tool_calls/0/id" in text
    assert "R-CONT-ID-ABSENT" in text and "Continuation deltas carry no id" in text
    hot = evidence.locator("ol.wire li.hl[data-n='1']")
    assert hot.is_visible() and '"id":""' in hot.inner_text()
    assert hot.locator("code.data").inner_text().startswith('{"id":"chatcmpl-1","object"')
    assert 'tool_calls/0/id = ""' in hot.inner_text().replace("\n", " ")
    assert evidence.locator("tr[data-strategy='naive'] td.bad").is_visible()
    assert "call_abc123XYZ789" in evidence.locator("table.calls").first.inner_text()
    link = evidence.locator("ul.quirks a").first
    assert link.get_attribute("href") == "#quirk-Q-EMPTY-STRING-OVERWRITE"
    assert "#cell=dashscope/single" in page.url

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)

    page.keyboard.press("Escape")
    assert evidence.is_hidden()
    assert page.errors == []
    assert page.failed == []
    assert all(u.startswith(("file://", "data:")) for u in page.requests), page.requests


def test_deep_link_opens_the_cell(page_for: Any) -> None:
    from test_report import demo_doc

    page = page_for(demo_doc())
    page.goto(page.url + "#cell=llamacpp/truncated")
    page.reload()
    evidence = page.locator("#evidence")
    assert evidence.is_visible()
    assert "upstream overloaded" in evidence.inner_text()
    assert page.errors == []


def test_inconclusive_cell_reads_apart_from_conforming_ones(page_for: Any) -> None:
    from test_inconclusive import NOT_ELICITED, inconclusive_doc

    page = page_for(inconclusive_doc(), "inconclusive.html")
    cell = page.locator("td.c[data-column='openai'][data-row='parallel']")
    assert cell.inner_text() == "?"
    colour = "getComputedStyle(el).backgroundColor"
    green = page.locator("td.c[data-column='openai'][data-row='single']").evaluate(
        f"el => {colour}"
    )
    assert cell.evaluate(f"el => {colour}") not in (green, "rgba(0, 0, 0, 0)")
    tally = page.locator("tbody.tally td[data-column='openai'] .sw").all_inner_texts()
    assert tally == ["✓\u202f2", "?\u202f1"]

    page.select_option("[data-testid=filter-verdict]", "inconclusive")
    assert _visible_cells(page) == ["openai/parallel=inconclusive"]
    page.select_option("[data-testid=filter-verdict]", "conforms")
    assert "openai/parallel=inconclusive" not in _visible_cells(page)
    page.select_option("[data-testid=filter-verdict]", "deviating")
    assert "openai/parallel=inconclusive" not in _visible_cells(page)
    page.click("[data-testid=filter-reset]")

    cell.locator("button").click()
    evidence = page.locator("#evidence")
    assert evidence.locator("h2 .sw").inner_text() == "?"
    assert evidence.locator("p.meta").inner_text().startswith("inconclusive · column")
    assert evidence.locator("p.reason").inner_text() == NOT_ELICITED


def test_field_evidence_mark_in_a_real_browser(page_for: Any) -> None:
    """Public recordings show with their own mark beside the cells, never as a verdict:
    the not-recorded column keeps its ∅ cells; the mark links to the sources."""
    from test_field import doc_with_field

    page = page_for(doc_with_field())
    mark = page.locator("table[data-section='providers'] td.fe.hit[data-column='mistral']")
    assert mark.is_visible() and mark.inner_text().strip() == "◇ ~1"
    assert "not recorded by this suite" in mark.get_attribute("title")
    header = page.locator("tbody.field th")
    assert "seen in public recordings, not recorded by this suite" in header.inner_text()
    assert {c for c in _visible_cells(page) if c.startswith("mistral/")} == {
        "mistral/single=not recorded",
        "mistral/parallel=not recorded",
        "mistral/truncated=not recorded",
    }
    # its own look: not a verdict's colour
    colours = page.eval_on_selector_all(
        "td.fe.hit, td.c[data-verdict='quirk']",
        "els => els.map(e => getComputedStyle(e).backgroundImage + getComputedStyle(e).backgroundColor)",
    )
    assert len(set(colours)) > 1
    mark.locator("a").click()
    section = page.locator("#public-recordings")
    assert section.is_visible()
    row = section.locator("tr#field-mistral")
    assert "Q-EMPTY-STRING-OVERWRITE" in row.inner_text()
    assert row.locator("a[href='https://example.org/m']").count() == 1
    acme = section.locator("tr[data-route='acme']")
    assert "Acme Cloud" in acme.inner_text() and "◇ ✓1" in acme.inner_text()
    # the filter by provider hides the other columns' marks with their cells
    page.select_option("[data-testid=filter-provider]", "dashscope")
    assert mark.is_hidden()
    assert page.errors == []


def test_quirk_titles_are_whole_and_the_table_uses_the_width(page_for: Any) -> None:
    from test_report import demo_doc

    page = page_for(demo_doc())
    th = page.locator("tbody.quirk-rows tr[data-quirk='Q-EMPTY-STRING-OVERWRITE'] th")
    shown = th.evaluate("e => [e.scrollWidth <= e.clientWidth + 1, e.innerText]")
    assert shown[0], "the quirk title overflows its cell"
    assert "continuation deltas" in shown[1]
    widths = page.evaluate(
        "[document.querySelector('.grid-wrap').getBoundingClientRect().width,"
        " document.querySelector('main').clientWidth]"
    )
    assert widths[0] >= widths[1] - 48 - 2  # main's padding aside, the full width
    assert page.errors == []
