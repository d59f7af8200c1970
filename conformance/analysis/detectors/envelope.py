"""Groups A/B, the chunk envelope and the choice's shape.

Q-SSE-ERROR-ENVELOPE, Q-SSE-ERROR-IN-CHUNK, Q-USAGE-EMPTY-CHOICES, Q-AZURE-PROMPT-FILTER-CHUNK,
Q-EMPTY-DELTA-CHUNKS, Q-ENVELOPE-FIELDS-MISSING, Q-CHUNK-ID-UNSTABLE, Q-USAGE-PLACEMENT,
Q-EXTRA-FIELDS, Q-AZURE-CHOICE-WITHOUT-DELTA, Q-TOOLCALLS-EMPTY-ARRAY, Q-TOOLCALLS-NOT-ARRAY.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.analysis.common import REASONING_FIELDS, _error_text
from conformance.registry import detector

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

CHUNK_KEYS = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "system_fingerprint",
        "choices",
        "usage",
        "service_tier",
        "obfuscation",
    }
)


CHOICE_KEYS = frozenset({"index", "delta", "logprobs", "finish_reason"})


DELTA_KEYS = frozenset({"role", "content", "tool_calls", "refusal", "function_call"})


TOOL_CALL_KEYS = frozenset({"index", "id", "type", "function"})
AZURE_FILTER_KEYS = frozenset({"prompt_filter_results", "prompt_annotations"})  # their own quirk
_KNOWN_CHUNK_KEYS = CHUNK_KEYS | AZURE_FILTER_KEYS
_KNOWN_CHOICE_KEYS = CHOICE_KEYS | {"finishReason"}
_KNOWN_DELTA_KEYS = DELTA_KEYS | frozenset(REASONING_FIELDS)
# Q-EXTRA-FIELDS names the first names in sorted order: only those are kept (a stream with a
# new name on every event would otherwise keep them all), so the message is the same.
EXTRA_NAMES_SHOWN = 12


def detect_error_in_stream(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """Q-SSE-ERROR-ENVELOPE (bare {"error":…}), Q-SSE-ERROR-IN-CHUNK (chunk-shaped error)."""
    if chunk.get("error") is None:
        return
    a.error_seen = True
    quirk = "Q-SSE-ERROR-ENVELOPE" if "choices" not in chunk else "Q-SSE-ERROR-IN-CHUNK"
    a.find(
        "R-NO-ERROR",
        "error inside the stream: " + _error_text(chunk["error"]),
        quirk=quirk,
        event=n,
        pointer="/error",
        excerpt=chunk,
    )


detector(
    detect_error_in_stream,
    "chunk",
    reports=(
        "Q-SSE-ERROR-ENVELOPE",
        "Q-SSE-ERROR-IN-CHUNK",
    ),
)


def detect_empty_choices(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """Q-USAGE-EMPTY-CHOICES (reference), Q-AZURE-PROMPT-FILTER-CHUNK, Q-EMPTY-DELTA-CHUNKS."""
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices:
        return
    if chunk.get("error") is not None:
        return
    if isinstance(chunk.get("usage"), dict):
        a.find(
            "Q-USAGE-EMPTY-CHOICES",
            "usage chunk without choices (documented reference "
            "behaviour; `choices[0]` crashes naive clients)",
            event=n,
            pointer="/choices",
            excerpt=chunk,
        )
    elif AZURE_FILTER_KEYS & chunk.keys():
        a.find(
            "Q-AZURE-PROMPT-FILTER-CHUNK",
            "chunk with empty choices carrying prompt filter results",
            event=n,
            pointer="/choices",
            excerpt=chunk,
        )
    else:
        _empty_delta(a, n)


detector(
    detect_empty_choices,
    "chunk",
    reports=(
        "Q-USAGE-EMPTY-CHOICES",
        "Q-AZURE-PROMPT-FILTER-CHUNK",
    ),
)


def detect_envelope(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """Q-ENVELOPE-FIELDS-MISSING, Q-CHUNK-ID-UNSTABLE, Q-USAGE-PLACEMENT, Q-EXTRA-FIELDS."""
    choices = chunk.get("choices")
    if isinstance(chunk.get("usage"), dict):
        a.usage_chunks += 1
        if isinstance(choices, list) and choices:
            a.find(
                "Q-USAGE-PLACEMENT",
                "usage on a chunk that also carries choices",
                event=n,
                pointer="/usage",
                excerpt=chunk.get("usage"),
            )
        elif a.usage_chunks > 1:
            a.find(
                "Q-USAGE-PLACEMENT", "usage sent in more than one chunk", event=n, pointer="/usage"
            )
    if isinstance(chunk.get("model"), str) and chunk["model"] and a.model is None:
        a.model = chunk["model"]
    fp = chunk.get("system_fingerprint")
    if isinstance(fp, str) and fp and len(a.fingerprints) < 8:
        a.fingerprints.add(fp)
    if chunk.get("error") is not None:
        return  # judged by detect_error_in_stream
    if not _KNOWN_CHUNK_KEYS.issuperset(chunk):  # one C call for the usual chunk
        for k in chunk:
            if k not in CHUNK_KEYS and k not in AZURE_FILTER_KEYS:
                _extra(a, f"{k}", n)  # e.g. Azure latency_checkpoint, llama.cpp timings
    if not (isinstance(choices, list) and choices):
        return  # metadata chunks (usage, Azure filter) are judged by their own detectors
    get = chunk.get
    if (  # the usual chunk has all four: no list built for it
        get("id") in (None, "")
        or get("object") in (None, "")
        or get("created") in (None, "")
        or get("model") in (None, "")
    ):
        missing = [k for k in ("id", "object", "created", "model") if get(k) in (None, "")]
        a.find(
            "Q-ENVELOPE-FIELDS-MISSING",
            "chunk without " + ", ".join(missing),
            event=n,
            pointer="/" + missing[0],
        )
    cid = chunk.get("id")
    if isinstance(cid, str) and cid:
        if a.chunk_id is None:
            a.chunk_id = cid
        elif cid != a.chunk_id:
            a.find(
                "Q-CHUNK-ID-UNSTABLE",
                f"chunk id changed from {a.chunk_id!r} to {cid!r}",
                event=n,
                pointer="/id",
            )


detector(
    detect_envelope,
    "chunk",
    reports=(
        "Q-ENVELOPE-FIELDS-MISSING",
        "Q-CHUNK-ID-UNSTABLE",
        "Q-USAGE-PLACEMENT",
    ),
)


def detect_choice_shape(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-AZURE-CHOICE-WITHOUT-DELTA, Q-ENVELOPE-FIELDS-MISSING (choice index, finish key,
    role null or ""), Q-CHUNK-ID-UNSTABLE (a choice index outside the request's n), Q-EXTRA-FIELDS,
    Q-TOOLCALLS-EMPTY-ARRAY, Q-EMPTY-DELTA-CHUNKS."""
    delta = choice.get("delta")
    if "delta" not in choice or not isinstance(delta, dict):
        a.find(
            "Q-AZURE-CHOICE-WITHOUT-DELTA",
            "choice without a delta object",
            event=n,
            pointer=ptr,
            excerpt=choice,
        )
        delta = {}
    missing = (
        [k for k in ("index", "finish_reason") if k not in choice]
        if "index" not in choice or "finish_reason" not in choice
        else []
    )
    if "role" in delta:
        role = delta["role"]
        if role is None:
            missing.append("delta.role (null)")
        elif role == "":  # the schema's enum refuses it as it refuses null
            missing.append('delta.role ("")')
    if missing:
        a.find(
            "Q-ENVELOPE-FIELDS-MISSING",
            "choice without " + ", ".join(missing),
            event=n,
            pointer=ptr,
        )
    ci = choice.get("index")
    if isinstance(ci, int) and not 0 <= ci < max(a.n, 1):
        a.find(
            "Q-CHUNK-ID-UNSTABLE",  # an index that names none of the request's n choices
            f"choice index {ci} in a single-choice stream"
            if a.n <= 1
            else f"choice index {ci} in a stream of n={a.n} choices",
            event=n,
            pointer=ptr + "/index",
        )
    # The usual choice, delta and tool call have no other keys: one C call each, and the
    # loops that name the extra fields run only when there are some.
    if not _KNOWN_CHOICE_KEYS.issuperset(choice):
        for k in choice:
            if k not in CHOICE_KEYS and k != "finishReason":
                _extra(a, f"choice.{k}", n)
    if not _KNOWN_DELTA_KEYS.issuperset(delta):
        for k in delta:
            if k not in DELTA_KEYS and k not in REASONING_FIELDS:
                _extra(a, f"delta.{k}", n)
    tcs = delta.get("tool_calls")
    if type(tcs) is list or isinstance(tcs, list):
        for tc in tcs:
            if isinstance(tc, dict) and not TOOL_CALL_KEYS.issuperset(tc):
                for k in tc:
                    if k not in TOOL_CALL_KEYS:
                        _extra(a, f"tool_call.{k}", n)
    if tcs == []:
        a.find(
            "Q-TOOLCALLS-EMPTY-ARRAY",
            "`tool_calls: []` on a delta",
            event=n,
            pointer=ptr + "/delta/tool_calls",
        )
    carries = False  # a key besides role whose value is not empty
    for k, v in delta.items():
        if k != "role" and v not in (None, "", [], {}):
            carries = True
            break
    if not carries and choice.get("finish_reason") in (None, "") and "finishReason" not in choice:
        if not (delta.get("role") and a.chunk_ordinal == 0):
            _empty_delta(a, n)


detector(
    detect_choice_shape,
    "choice",
    reports=(
        "Q-AZURE-CHOICE-WITHOUT-DELTA",
        "Q-ENVELOPE-FIELDS-MISSING",
        "Q-CHUNK-ID-UNSTABLE",
        "Q-TOOLCALLS-EMPTY-ARRAY",
    ),
)


def detect_tool_calls_object(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-TOOLCALLS-NOT-ARRAY: `delta.tool_calls` is one object, not an array (the analyzer
    and the robust client read it as the one call it carries)."""
    delta = choice.get("delta")
    if isinstance(delta, dict) and isinstance(delta.get("tool_calls"), dict):
        a.find(
            "Q-TOOLCALLS-NOT-ARRAY",
            "`tool_calls` is an object, not an array",
            event=n,
            pointer=ptr + "/delta/tool_calls",
            excerpt=delta["tool_calls"],
        )


detector(detect_tool_calls_object, "choice", reports=("Q-TOOLCALLS-NOT-ARRAY",))


def _extra(a: Analyzer, name: str, n: int) -> None:
    """A non-standard field's name (text, also for a key that is none in a chunk built in
    Python): kept while it is among the EXTRA_NAMES_SHOWN first in sorted order (a later,
    smaller name takes the largest one's place)."""
    kept = a.extra_fields
    if name in kept:
        return
    if a.extra_first is None:
        a.extra_first = n
    if len(kept) >= EXTRA_NAMES_SHOWN:
        top = max(kept)
        if name > top:
            return
        kept.discard(top)
    kept.add(name)


def _empty_delta(a: Analyzer, n: int) -> None:
    a.empty_deltas += 1
    if a.first_empty_delta is None:
        a.first_empty_delta = n


def detect_collected(a: Analyzer) -> None:
    """Q-EXTRA-FIELDS, Q-EMPTY-DELTA-CHUNKS. (OpenAI's own `obfuscation` is a CHUNK_KEY:
    reference behaviour, never an extra field.)"""
    if a.extra_fields:
        a.find(
            "Q-EXTRA-FIELDS",
            "non-standard fields: " + ", ".join(sorted(a.extra_fields)),
            event=a.extra_first,
        )  # INFO: the catalogue's level of Q-EXTRA-FIELDS
    if a.empty_deltas >= 2:
        a.find(
            "Q-EMPTY-DELTA-CHUNKS",
            f"{a.empty_deltas} chunks carry nothing",
            event=a.first_empty_delta,
        )


detector(
    detect_collected,
    "end",
    reports=(
        "Q-EXTRA-FIELDS",
        "Q-EMPTY-DELTA-CHUNKS",
    ),
)
