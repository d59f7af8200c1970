"""One cell: a scenario on a provider, through the same pipeline as `conformance analyze`.

request (scenario + provider elicitation) -> transport (live httpx, or vcrpy replay)
-> Transcript -> analyze -> scenario expectations -> (round trip) -> Cell.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from conformance import registry, secrets
from conformance.analysis import CaptureResult, analyze
from conformance.bounded import cap_strings
from conformance.client import RoundTripPolicy, TextCutError, tool_result_messages
from conformance.enums import Level, Verdict
from conformance.providers import Provider
from conformance.registry import detector
from conformance.rules import MUST, RULES, quirk_level
from conformance.scenarios import Scenario, build_request, tool_result_for
from conformance.transcript import Transcript
from conformance.transport import KEEPALIVE_QUIRK, Limits, RetryPolicy, exchange
from conformance.verdict import cell as verdict_of_cell
from conformance.verdict import inconclusive as inconclusive_verdict
from conformance.verdict import worst as worst_verdict


@dataclass
class Cell:
    provider: str
    scenario: str
    verdict: str
    reason: str | None = None
    quirks: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    missing_expected: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    impact: dict[str, Any] = field(default_factory=dict)
    tool_calls: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    elicited: bool | None = None
    cassette: str | None = None
    interaction: int | None = None
    trials: dict[str, Any] = field(default_factory=dict)
    retries: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items()}
        if d["reason"]:  # a cell's reason is one line, whatever a server put in its error
            d["reason"] = " ".join(str(d["reason"]).split())
        d["column"], d["row"] = d.pop("provider"), d.pop("scenario")
        d = cap_strings(d)  # every string bounded: names and ids as long as the body
        return json.loads(secrets.redact(json.dumps(d, ensure_ascii=False)))

    @property
    def uncatalogued_must(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["level"] == MUST and not f.get("quirk")]


def unsupported_cell(provider: Provider, scenario: Scenario) -> Cell | None:
    missing = [c for c in scenario.needs if not provider.supports(c)]
    if missing:
        return Cell(
            provider.name,
            scenario.id,
            "unsupported",
            reason=provider.unsupported_reason(missing[0]),
        )
    return None


def _evidence(t: Transcript, findings: list[dict[str, Any]], exchange_no: int) -> list[dict]:
    from conformance.report.evidence import evidence_events, evidence_from_events

    out = evidence_from_events(evidence_events(t), findings)
    for e in out:
        e["exchange"] = exchange_no
        e["data"] = secrets.redact(e["data"])
    return out


def _finding(
    rule: str,
    message: str,
    level: str | None = None,
    quirk: str | None = None,
    event: int | None = None,
) -> dict[str, Any]:
    lvl = level or (quirk_level(quirk) if quirk else RULES[rule].level)
    return {
        "rule": rule,
        "level": lvl,
        "quirk": quirk,
        "event": event,
        "pointer": None,
        "message": message,
    }


def check_expectations(
    scenario: Scenario, r: CaptureResult, request: dict[str, Any]
) -> tuple[list[dict[str, Any]], str | None]:
    """Scenario-level findings (protocol) and a not-elicited note (model behaviour)."""
    out: list[dict[str, Any]] = []
    e = scenario.expect
    turn = r.turn
    calls = turn.calls if turn else []
    names = [n for c in calls for n in _wrapped_names(c)]
    choice = request.get("tool_choice")
    named = isinstance(choice, dict)
    # With `required` or a named tool, a turn without any call is the server's fault (the
    # analyzer's R-TOOL-CHOICE); fewer calls than the scenario needs, or another declared
    # tool than it asks for, is still the model's choice.
    forced = choice == "required" or named
    not_elicited = None
    # R-USAGE and R-LENGTH-VISIBLE are judged by the analyzer; here only whether the
    # scenario's behaviour was elicited at all.
    if e.cut:
        if not calls:
            not_elicited = "not elicited: the model made no tool call to cut"
        elif (
            not any(c.repaired or not c.valid for c in calls)
            and "Q-ARGS-INVENTED-ON-TRUNCATION" not in r.quirks
        ):  # cut, then filled in
            not_elicited = "not elicited: the arguments were complete within max_tokens"
    if len(names) < e.min_calls and (calls or not forced):
        not_elicited = (
            f"not elicited: {len(names)} tool call(s), the scenario needs "
            f"{e.min_calls} (model behaviour, not a wire fault)"
        )
    missing = [n for n in e.names if n not in names]
    if calls and missing and not named and not_elicited is None:
        not_elicited = f"not elicited: the model did not call {', '.join(missing)}"
    if e.schema:
        out += _schema_findings(scenario, calls)
    if e.non_ascii and calls:
        if not any(_has_non_ascii(c.arguments) for c in calls if c.valid):
            if any("Z" in c.arguments and "rich" in c.arguments for c in calls):
                out.append(
                    _finding("R-ARGS-JSON", "non-ASCII text lost from the arguments", level=MUST)
                )
            elif not_elicited is None:
                not_elicited = "not elicited: no non-ASCII text in the arguments"
    return out, not_elicited


def _wrapped_names(call: Any) -> list[str]:
    """The tools a call invokes: OpenAI's own `multi_tool_use.parallel` wrapper (an INFO
    quirk) carries several calls in one, and they count as the calls they are."""
    if call.name != "multi_tool_use.parallel" or not call.valid:
        return [call.name]
    uses = (json.loads(call.arguments) or {}).get("tool_uses") if call.arguments else None
    if not isinstance(uses, list) or not uses:
        return [call.name]
    return [
        str(u.get("recipient_name", "")).removeprefix("functions.")
        for u in uses
        if isinstance(u, dict)
    ] or [call.name]


def _schema_findings(scenario: Scenario, calls: list[Any]) -> list[dict[str, Any]]:
    """Q-STRICT-IGNORED: with `strict: true`, arguments must validate against the schema."""
    import jsonschema

    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in scenario.tools}
    out = []
    for c in calls:
        if not c.valid or c.name not in schemas:
            continue
        err = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schemas[c.name]).iter_errors(json.loads(c.arguments))
        )
        if err is not None:
            out.append(
                _finding(
                    "R-ARGS-JSON",
                    f"strict schema not enforced: {err.message}",
                    quirk="Q-STRICT-IGNORED",
                )
            )
    return out


detector(_schema_findings, "cell", reports=("Q-STRICT-IGNORED",))


def _has_non_ascii(arguments: str) -> bool:
    try:
        value = json.loads(arguments)
    except ValueError:
        return False
    return any(ord(ch) > 127 for ch in json.dumps(value, ensure_ascii=False))


def _needs_stream_comparison(r: CaptureResult, body: dict[str, Any]) -> bool:
    """A forced tool_choice (required or named) that streamed no call, where the analyzer
    could not yet tell Q-TOOLCALLS-MISSING-IN-STREAM (its R-TOOL-CHOICE finding without a
    quirk) from a tool_choice the server ignores."""
    choice = body.get("tool_choice")
    if not (choice == "required" or isinstance(choice, dict)) or r.verdict == Verdict.ERROR:
        return False
    if r.turn is not None and r.turn.calls:  # a named choice answered with another tool:
        return False  # its R-TOOL-CHOICE is about that call, stream false tells no more
    return any(f.rule == "R-TOOL-CHOICE" and f.quirk is None for f in r.findings)


def _stream_comparison(send: Any, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict]]:
    """The same request with stream false: did its answer carry tool_calls (a non-empty
    `choices[].message.tool_calls` array in the raw JSON)? Returns the comparison the
    analyzer reads (transcript meta ``stream_comparison``) and the exchange's retries."""
    plain = {k: v for k, v in body.items() if k != "stream_options"}
    plain["stream"] = False
    t = send(plain, "#stream-false")
    retries = list(t.meta.get("retries", []))
    if t.transport_error or t.status != 200:
        why = t.transport_error or f"HTTP {t.status}"
        return {"made": False, "reason": "stream false: " + secrets.one_line(why, 120)}, retries
    try:
        doc = json.loads(t.raw or b"")
    except ValueError:
        return {"made": False, "reason": "stream false: the body is not JSON"}, retries
    choices = doc.get("choices") if isinstance(doc, dict) else None
    n = 0
    for ch in choices if isinstance(choices, list) else []:
        msg = ch.get("message") if isinstance(ch, dict) else None
        calls = msg.get("tool_calls") if isinstance(msg, dict) else None
        n += len(calls) if isinstance(calls, list) else 0
    return {"made": True, "tool_calls": n}, retries


# A provider whose endpoint refused the connection or sent no response head on this many
# cells in a row is down: its remaining cells end at once with the same reason instead
# of each waiting out connect_timeout or first_byte_timeout (live runs only).
FAIL_FAST_AFTER = 3


class CellRunner:
    """Runs cells with one httpx client; live or (under vcrpy) replayed."""

    def __init__(
        self, *, replay: bool, client: httpx.Client | None = None, limits: Limits | None = None
    ):
        self.replay = replay
        self.limits = limits
        self._client = client
        self._down: dict[str, tuple[int, str]] = {}  # provider -> (cells in a row, reason)
        self._down_lock = threading.Lock()

    def _failed_fast(self, provider: Provider, scenario: Scenario) -> Cell | None:
        with self._down_lock:
            n, reason = self._down.get(provider.name, (0, ""))
        if self.replay or n < FAIL_FAST_AFTER:
            return None
        return Cell(
            provider.name,
            scenario.id,
            "error",
            reason=f"{reason} (not sent: the endpoint failed the same way on {n} cells in a row)",
            meta={"failed_fast": True},
        )

    def _note_transport(self, provider: Provider, t: Transcript) -> None:
        with self._down_lock:
            if t.meta.get("transport_stage") in ("connect", "headers") and t.transport_error:
                n = self._down.get(provider.name, (0, ""))[0]
                self._down[provider.name] = (n + 1, t.transport_error)
            else:
                self._down.pop(provider.name, None)

    def _client_for(self, provider: Provider) -> tuple[httpx.Client, Limits]:
        from conformance.transport import make_client

        limits = self.limits or Limits.from_dict(provider.limits)
        if self._client is None:
            self._client = make_client(limits)
        return self._client, limits

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def run(
        self,
        provider: Provider,
        scenario: Scenario,
        *,
        repeat: int = 1,
        cassette: str | None = None,
    ) -> Cell:
        unsupported = unsupported_cell(provider, scenario)
        if unsupported is not None:
            return unsupported
        failed = self._failed_fast(provider, scenario)
        if failed is not None:
            return failed
        trials = [self._trial(provider, scenario, i) for i in range(repeat)]
        cell, exchanges = trials[0]
        cell.cassette = cassette
        cell.interaction = 0 if cassette else None
        if repeat > 1:
            qc: Counter[str] = Counter()
            vc: Counter[str] = Counter()
            for c, _ in trials:
                qc.update(set(c.quirks))
                vc[
                    c.verdict
                    + (
                        ""
                        if c.elicited is not False or c.verdict == "inconclusive"
                        else " (not elicited)"
                    )
                ] += 1
            cell.trials = {
                "n": repeat,
                "quirk_counts": dict(sorted(qc.items())),
                "verdict_counts": dict(sorted(vc.items())),
                "exchanges_per_trial": [n for _, n in trials],
            }
            # The cell reads as its worst trial; the counts tell wire quirks (every trial)
            # from behaviour that varies.
            # (An inconclusive trial ranks below every conclusive one, so a cell is
            # inconclusive only when no trial showed the scenario's behaviour.)
            bad = worst_verdict(c.verdict for c, _ in trials)
            worst = next(c for c, _ in trials if c.verdict == bad)
            if worst is not cell:
                worst.trials, worst.cassette, worst.interaction = cell.trials, cassette, 0
                cell = worst
            cell.quirks = sorted(qc)
        else:
            cell.trials = {
                "n": 1,
                "quirk_counts": {q: 1 for q in cell.quirks},
                "verdict_counts": {cell.verdict: 1},
            }
        return cell

    def _trial(self, provider: Provider, scenario: Scenario, trial: int) -> tuple[Cell, int]:
        client, limits = self._client_for(provider)
        retry = RetryPolicy.from_dict(provider.retries, sleep=not self.replay)
        url = provider.url("chat/completions")  # keeps a ?key=… query at the end
        body = build_request(scenario, provider)
        rng = random.Random(f"{provider.name}/{scenario.id}/{trial}")
        t1 = exchange(
            client,
            url,
            body,
            headers=provider.headers,
            auth_headers=provider.auth_headers(),
            limits=limits,
            retry=retry,
            source=f"{provider.name}/{scenario.id}",
            rng=rng,
        )
        self._note_transport(provider, t1)
        r1 = analyze(t1)
        exchanges = 1 + len(t1.meta.get("retries", []))
        retries = list(t1.meta.get("retries", []))
        if _needs_stream_comparison(r1, body):
            # Q-TOOLCALLS-MISSING-IN-STREAM is defined by the same request with stream
            # false: make it (recorded in the same cassette, so a replay makes it too).
            send = self._sender(provider, client, url, limits, retry, rng)
            t1.meta["stream_comparison"], cmp_retries = _stream_comparison(send, body)
            retries += cmp_retries
            exchanges += 1 + len(cmp_retries)
            r1 = analyze(t1)
        findings = [dict(f.to_json(), exchange=0) for f in r1.findings]
        evidence = _evidence(t1, findings, 0)
        verdict, reason = r1.verdict, r1.error
        extra, not_elicited = (
            ([], None) if verdict == "error" else check_expectations(scenario, r1, body)
        )
        findings += [dict(f, exchange=0) for f in extra]
        if scenario.roundtrip and verdict != "error" and r1.turn and r1.turn.calls:
            try:
                rt_findings, rt_error, rt_evidence, rt_retries = self._roundtrip(
                    provider, scenario, body, r1, client, url, limits, retry, rng
                )
            except TextCutError as e:  # the analysis kept only the first TEXT_KEPT characters
                verdict, reason = Verdict.ERROR, f"round trip: not sent: {e}"
            else:
                findings += rt_findings
                evidence += rt_evidence
                retries += rt_retries
                exchanges += 1 + len(rt_retries)
                if rt_error:
                    verdict, reason = Verdict.ERROR, "round trip: " + rt_error
        elif scenario.roundtrip and verdict != "error" and not_elicited is None:
            not_elicited = "not elicited: no tool call to send back"
        if verdict != "error":
            verdict = verdict_of_cell(r1.verdict, findings)
        quirks = sorted({f["quirk"] for f in findings if f.get("quirk")})
        judged = {
            f["quirk"]
            for f in findings
            if f.get("quirk") and Level(f["level"]).rank >= Level.SHOULD.rank
        }
        # A finer expected quirk also expects the coarser ids it implies (its registry entry).
        implied = {
            c for q in judged if provider.expects(q, scenario.id) for c in registry.implied(q)
        }
        expected = sorted(q for q in judged if provider.expects(q, scenario.id) or q in implied)
        unexpected = sorted(judged - set(expected))
        missing = sorted(
            q
            for q, e in provider.expected_quirks.items()
            if e.get("scenarios")
            and scenario.id in e["scenarios"]
            and q not in quirks
            and verdict != "error"
            and not_elicited is None
        )
        if reason is None and not_elicited:
            reason = not_elicited
        verdict = inconclusive_verdict(verdict, not_elicited, unexpected)
        meta = dict(r1.meta)
        if "stream_comparison" in t1.meta:
            meta["stream_comparison"] = t1.meta["stream_comparison"]
        cell = Cell(
            provider.name,
            scenario.id,
            verdict,
            reason,
            quirks,
            expected,
            unexpected,
            missing,
            findings,
            evidence,
            {k: v.to_json() for k, v in r1.impact.items()},
            {str(k): v for k, v in r1.tool_calls.items()},  # the JSON's keys: plain strings
            r1.finish_reason,
            None if verdict == "error" else not_elicited is None,
            retries=retries,
            meta=meta,
        )
        return cell, exchanges

    def _roundtrip(
        self,
        provider: Provider,
        scenario: Scenario,
        body: dict[str, Any],
        r1: CaptureResult,
        client: httpx.Client,
        url: str,
        limits: Limits,
        retry: RetryPolicy,
        rng: random.Random,
    ) -> tuple[list[dict[str, Any]], str | None, list[dict], list[dict]]:
        assert r1.turn is not None
        policy = provider.roundtrip
        if scenario.keep_ids:  # ids travel back byte for byte, "" included; the rest of
            policy = replace(policy, id_format=None)  # the policy still holds
        messages = [
            m
            for m in body["messages"]
            if not (
                m.get("role") == "assistant" and "tool_calls" not in m and m is body["messages"][-1]
            )
        ]
        assistant = r1.turn.message(policy)
        results = tool_result_messages(
            [(c, tool_result_for(c.name, c.arguments)) for c in r1.turn.calls], policy
        )
        rt_body = dict(body, messages=messages + [assistant] + results)
        rt_body.pop("tool_choice", None)
        rt_body.pop("stream_options", None)
        findings: list[dict[str, Any]] = []
        if scenario.keep_ids:
            sent = [tc["id"] for tc in assistant.get("tool_calls", [])]
            got = [c.id for c in r1.turn.calls]
            if sent != got or [m["tool_call_id"] for m in results] != got:
                findings.append(_finding("R-ROUNDTRIP-IDS", "ids changed on the way back"))
        send = self._sender(provider, client, url, limits, retry, rng)
        t2 = send(rt_body, "#roundtrip")
        r2 = analyze(t2)
        rt = [
            dict(f.to_json(), exchange=1)
            for f in r2.findings
            if f.rule.startswith("R-ROUNDTRIP")
            or f.rule in ("R-COMPLETE",)
            or (f.quirk or "").startswith("Q-RT-")
            or f.quirk == KEEPALIVE_QUIRK
        ]
        retries = list(t2.meta.get("retries", []))
        if t2.status in (400, 422) and not any(f.get("quirk") for f in rt):
            # A generic rejection: find the catalogued constraint (group J) by retrying with
            # each variant a provider may demand; the one accepted names the quirk.
            quirk, probes = self._probe_roundtrip(send, rt_body, messages, r1, policy)
            for f in rt:
                if f["rule"] == "R-ROUNDTRIP-ACCEPTED" and quirk:
                    f["quirk"], f["level"] = quirk, quirk_level(quirk)
                    f["message"] += f"; accepted when {probes}"
        findings += rt
        error = None
        if t2.transport_error or (t2.status is not None and t2.status >= 500):
            error = r2.error
        elif t2.status == 200 and r2.turn and r2.turn.error is not None:
            error = r2.error
        elif any(f["rule"] == "R-COMPLETE" for f in rt):  # an empty or cut 200 body
            error = r2.error
        return findings, error, _evidence(t2, rt, 1), retries

    def _sender(
        self,
        provider: Provider,
        client: httpx.Client,
        url: str,
        limits: Limits,
        retry: RetryPolicy,
        rng: random.Random,
    ) -> Any:
        def send(body: dict[str, Any], tag: str) -> Transcript:
            return exchange(
                client,
                url,
                body,
                headers=provider.headers,
                auth_headers=provider.auth_headers(),
                limits=limits,
                retry=retry,
                source=f"{provider.name}{tag}",
                rng=rng,
            )

        return send

    def _probe_roundtrip(
        self,
        send: Any,
        body: dict[str, Any],
        history: list[dict[str, Any]],
        r1: CaptureResult,
        policy: RoundTripPolicy,
    ) -> tuple[str | None, str]:
        assert r1.turn is not None
        turn = r1.turn
        variants: list[tuple[str, str, RoundTripPolicy]] = []
        if not turn.content:
            other = "empty" if policy.content != "empty" else "null"
            quirk = (
                "Q-RT-CONTENT-NULL-REJECTED"
                if policy.content == "null"
                else "Q-RT-CONTENT-EMPTY-REJECTED"
            )
            variants.append((quirk, f"content is {other}", replace(policy, content=other)))
        # Each variant is the provider's policy with one field changed (dataclasses.replace):
        # a field rebuilt by hand would be dropped, as echo_reasoning once was.
        variants.append(
            (
                "Q-RT-TOOL-MESSAGE-NAME",
                "tool messages " + ("omit" if policy.tool_message_name else "carry") + " `name`",
                replace(policy, tool_message_name=not policy.tool_message_name),
            )
        )
        if turn.reasoning and not policy.echo_reasoning and not turn.reasoning_dropped:
            # (reasoning cut by the analysis' bound is not what was received: not probed)
            variants.append(
                (
                    "Q-REASONING-MUST-BE-ECHOED",
                    "the turn's reasoning_content is sent back",
                    replace(policy, echo_reasoning=True),
                )
            )
        if policy.id_format != "mistral9":
            variants.append(
                (
                    "Q-RT-MISTRAL-TOOL-CALL-ID",
                    "ids are 9 alphanumerics",
                    replace(policy, id_format="mistral9"),
                )
            )
        for quirk, what, variant in variants:
            msgs = (
                history
                + [turn.message(variant)]
                + tool_result_messages(
                    [(c, tool_result_for(c.name, c.arguments)) for c in turn.calls], variant
                )
            )
            t = send(dict(body, messages=msgs), f"#probe:{quirk}")
            if t.status == 200 and not t.transport_error:
                return quirk, what
        return None, ""
