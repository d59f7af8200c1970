"""The `inconclusive` verdict: a cell that did not show what its scenario tests is never
`conforms`; a deviation the wire did show keeps its verdict (docs/matrix-format.md).

Each cell runs through the real runner (request, transport, analyzer, expectations) with an
httpx mock transport that answers one hand-written OpenAI-shaped stream.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from test_report import CONFORMING, cell_from_chunks, demo_doc

from conformance.providers import provider_from_entry
from conformance.report import (
    MatrixError,
    diff_matrices,
    render_html,
    render_markdown,
    validate_matrix,
)
from conformance.report.diff import format_text
from conformance.runner import CellRunner
from conformance.scenarios import SCENARIOS

ENVELOPE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return dict(ENVELOPE, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])


def opener(index: int, call_id: str, name: str) -> dict[str, Any]:
    return chunk(
        {
            "tool_calls": [
                {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ]
        }
    )


def args(index: int, text: str, **extra: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": index, **extra, "function": {"arguments": text}}]})


ROLE = chunk({"role": "assistant", "content": None})
END_CALLS = chunk({}, "tool_calls")
WEATHER = [opener(0, "call_w1", "get_weather"), args(0, '{"city": "Paris"}')]
TIME = [opener(1, "call_t1", "get_time"), args(1, '{"timezone": "Asia/Tokyo"}')]
ONE_CALL = [ROLE, *WEATHER, END_CALLS]
TWO_CALLS = [ROLE, *WEATHER, *TIME, END_CALLS]
PROSE = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "I cannot check the weather."}),
    chunk({}, "stop"),
]
# One call whose continuation carries `"id": ""` (Q-EMPTY-STRING-OVERWRITE, seed 000 §5).
ONE_CALL_EMPTY_ID = [
    ROLE,
    opener(0, "call_w1", "get_weather"),
    args(0, '{"city": "Paris"}', id=""),
    END_CALLS,
]
# One call, then a data payload that is not JSON (an uncatalogued MUST violation).
ONE_CALL_BROKEN = [ROLE, *WEATHER, "{oops", END_CALLS]


def sse(chunks: list[Any]) -> bytes:
    """Chunk objects as SSE events; a str goes out verbatim as the payload."""
    return (
        b"".join(
            b"data: " + (c if isinstance(c, str) else json.dumps(c)).encode() + b"\n\n"
            for c in chunks
        )
        + b"data: [DONE]\n\n"
    )


def run_cell(scenario: str, chunks: list[dict[str, Any]], **entry: Any) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=sse(chunks)
        )

    provider = provider_from_entry(
        "p", {"base_url": "http://127.0.0.1:9/v1", "model": "m", **entry}
    )
    runner = CellRunner(replay=True, client=httpx.Client(transport=httpx.MockTransport(answer)))
    try:
        return runner.run(provider, SCENARIOS[scenario])
    finally:
        runner.close()


def test_one_call_where_the_scenario_needs_two_is_inconclusive_not_conforms() -> None:
    cell = run_cell("parallel", ONE_CALL)
    assert cell.verdict == "inconclusive"
    assert cell.elicited is False
    assert cell.reason == (
        "not elicited: 1 tool call(s), the scenario needs 2 (model behaviour, not a wire fault)"
    )
    assert cell.to_json()["verdict"] == "inconclusive"


def test_two_calls_conform() -> None:  # the control: the same provider, the behaviour shown
    cell = run_cell("parallel", TWO_CALLS)
    assert (cell.verdict, cell.elicited, cell.reason) == ("conforms", True, None)


def test_prose_instead_of_a_call_is_inconclusive() -> None:
    cell = run_cell("single", PROSE)
    assert cell.verdict == "inconclusive"
    assert cell.reason.startswith("not elicited: 0 tool call(s), the scenario needs 1")


def test_another_tool_than_the_scenario_asks_for_is_inconclusive() -> None:
    cell = run_cell("no-arguments", ONE_CALL)  # the scenario asks for `ping`
    assert cell.verdict == "inconclusive"
    assert cell.reason == "not elicited: the model did not call ping"


def test_an_unexpected_quirk_beats_inconclusive() -> None:
    cell = run_cell("parallel", ONE_CALL_EMPTY_ID)
    assert cell.verdict == "quirk"
    assert cell.unexpected == ["Q-EMPTY-STRING-OVERWRITE"]
    assert cell.elicited is False and cell.reason.startswith("not elicited: 1 tool call(s)")


def test_an_expected_quirk_alone_does_not_make_the_cell_conclusive() -> None:
    cell = run_cell(
        "parallel",
        ONE_CALL_EMPTY_ID,
        expected_quirks={"Q-EMPTY-STRING-OVERWRITE": "DashScope (seed 000 §5)"},
    )
    assert cell.verdict == "inconclusive"
    assert "Q-EMPTY-STRING-OVERWRITE" in cell.quirks  # still shown on the cell
    assert cell.expected == ["Q-EMPTY-STRING-OVERWRITE"]


def test_fails_beats_inconclusive() -> None:
    cell = run_cell("parallel", ONE_CALL_BROKEN)
    assert cell.verdict == "fails"
    assert [f["rule"] for f in cell.uncatalogued_must] == ["R-SSE-DATA-JSON"]
    assert cell.elicited is False


def test_required_without_any_call_is_the_servers_fault_not_inconclusive() -> None:
    cell = run_cell("required", PROSE)  # prose instead of the required call
    assert (cell.verdict, cell.elicited) == ("quirk", True)
    assert cell.unexpected == ["Q-REQUIRED-NOT-ENFORCED"]
    empty = [chunk({"role": "assistant", "content": ""}), chunk({}, "stop")]
    cell = run_cell("required", empty)  # nothing at all
    # (this mock answers stream false with SSE too: no comparison, so no quirk id)
    assert (cell.verdict, cell.quirks) == ("fails", [])
    assert [f["rule"] for f in cell.uncatalogued_must] == ["R-TOOL-CHOICE"]


def test_required_by_elicitation_still_needs_the_scenarios_number_of_calls() -> None:
    # tool_choice "required" forces one call, not the two the scenario asks for.
    cell = run_cell("parallel", ONE_CALL, elicitation={"extra_body": {"tool_choice": "required"}})
    assert cell.verdict == "inconclusive"


def test_calls_inside_openais_wrapper_count_as_the_calls_they_carry() -> None:
    wrapped = json.dumps(
        {
            "tool_uses": [
                {"recipient_name": "functions.get_weather", "parameters": {"city": "Paris"}},
                {"recipient_name": "functions.get_time", "parameters": {"timezone": "Asia/Tokyo"}},
            ]
        }
    )
    stream = [ROLE, opener(0, "call_m1", "multi_tool_use.parallel"), args(0, wrapped), END_CALLS]
    cell = run_cell("parallel", stream)
    assert cell.verdict == "conforms" and cell.elicited is True
    assert "Q-OPENAI-MULTI-TOOL-USE-WRAPPER" in cell.quirks


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["inconclusive", "inconclusive"], "inconclusive"),
        (["inconclusive", "conforms"], "conforms"),
    ],
)
def test_repeated_trials_are_inconclusive_only_when_every_trial_was(
    verdicts: list[str], expected: str
) -> None:
    streams = iter([ONE_CALL if v == "inconclusive" else TWO_CALLS for v in verdicts])

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=sse(next(streams))
        )

    provider = provider_from_entry("p", {"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    runner = CellRunner(replay=True, client=httpx.Client(transport=httpx.MockTransport(answer)))
    cell = runner.run(provider, SCENARIOS["parallel"], repeat=len(verdicts))
    runner.close()
    assert cell.verdict == expected
    assert cell.trials["verdict_counts"] == {v: verdicts.count(v) for v in sorted(set(verdicts))}


# --------------------------------------------------------------------------- every view

NOT_ELICITED = (
    "not elicited: 1 tool call(s), the scenario needs 2 (model behaviour, not a wire fault)"
)


def inconclusive_doc() -> dict[str, Any]:
    """The report tests' demo matrix, with openai × parallel made of a one-call stream that
    the runner rated inconclusive (what it writes for such a cell)."""
    doc = demo_doc()
    cell = cell_from_chunks("openai", "parallel", CONFORMING)
    cell.update(verdict="inconclusive", reason=NOT_ELICITED, elicited=False)
    doc["cells"] = [
        cell if (c["column"], c["row"]) == ("openai", "parallel") else c for c in doc["cells"]
    ]
    return doc


def test_the_schema_knows_inconclusive_and_wants_its_reason() -> None:
    doc = inconclusive_doc()
    validate_matrix(doc)
    cell = next(c for c in doc["cells"] if c["verdict"] == "inconclusive")
    cell["reason"] = None
    with pytest.raises(MatrixError, match="reason"):
        validate_matrix(doc)
    cell.update(reason=NOT_ELICITED, elicited=True)  # inconclusive means not elicited
    with pytest.raises(MatrixError, match="elicited"):
        validate_matrix(doc)


def test_markdown_shows_the_symbol_counts_it_apart_and_explains_it() -> None:
    md = render_markdown(inconclusive_doc())
    row = next(line for line in md.splitlines() if line.startswith("| Parallel calls"))
    assert row.split(" | ")[1].startswith("?[^m")  # the openai column
    tally = next(line for line in md.splitlines() if line.startswith("| *verdicts* |"))
    assert tally.split(" | ")[1] == "✓ 2 · ? 1"  # openai: single, truncated; parallel apart
    note = next(line for line in md.splitlines() if "openai × parallel" in line)
    assert note.split(": ", 1)[1].startswith(
        "**? inconclusive** · openai × parallel · not "
        "elicited: 1 tool call(s), the scenario needs 2"
    )
    assert "? inconclusive (the model did not produce what the scenario tests" in md


def test_html_cell_tally_legend_and_filter() -> None:
    page = render_html(inconclusive_doc())
    assert (
        '<td class="c" data-verdict="inconclusive" data-column="openai" '
        'data-row="parallel"><button aria-label="inconclusive">?</button></td>'
    ) in page
    tally = page.split('<tbody class="tally">', 1)[1].split("</tbody>", 1)[0]
    openai = tally.split('data-column="openai">', 1)[1].split("</td>", 1)[0]
    assert 'data-verdict="conforms" title="2 conforms">✓&#8239;2' in openai
    assert 'data-verdict="inconclusive" title="1 inconclusive">?&#8239;1' in openai
    assert '<option value="inconclusive">? inconclusive</option>' in page
    assert 'class="sw v-inconclusive">?</span>inconclusive</span>' in page


def test_diff_reports_the_move_to_and_from_inconclusive_as_its_own_transition() -> None:
    old, new = demo_doc(), inconclusive_doc()
    d = next(x for x in diff_matrices(old, new) if (x.column, x.row) == ("openai", "parallel"))
    assert d.statuses == ["now inconclusive"] and not d.regressed
    back = next(x for x in diff_matrices(new, old) if (x.column, x.row) == ("openai", "parallel"))
    assert back.statuses == ["now conclusive"] and not back.regressed
    text = format_text(diff_matrices(old, new))
    assert "NOW INCONCLUSIVE         openai × parallel: ✓ conforms → ? inconclusive" in text
    assert text.rstrip().splitlines()[-1] == (
        "summary: 0 regressed, 0 fixed, 1 now inconclusive, 14 unchanged"
    )
