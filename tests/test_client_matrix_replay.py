"""The replay endpoint and the recording harness: recorded bytes served back exactly."""

from __future__ import annotations

import httpx

from conformance.client_matrix.harness import running_harness
from conformance.server.replay import Recorded

SSE = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    b'"type":"function","function":{"name":"ping","arguments":"{}"}}]},'
    b'"finish_reason":null}]}\n\ndata: [DONE]\n\n'
) * 40  # longer than one write block
ERROR = b'{"error": {"message": "Cannot use tools with stream", "code": 500}}'


def test_replayed_bytes_status_and_type_are_the_recorded_ones_and_are_kept_per_job():
    replays = {"sse": Recorded(SSE), "err": Recorded(ERROR, 500, "application/json")}
    with running_harness(replays) as (root, recorder), httpx.Client(timeout=10) as http:
        ok = http.post(f"{root}/j/a.1/r/sse/v1/chat/completions", json={"stream": True})
        assert (ok.status_code, ok.content) == (200, SSE)
        assert ok.headers["content-type"].startswith("text/event-stream")
        bad = http.post(f"{root}/j/a.2/r/err/v1/chat/completions", json={"any": "body"})
        assert (bad.status_code, bad.content) == (500, ERROR)
        missing = http.post(f"{root}/j/a.3/r/nope/v1/chat/completions", json={})
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "model_not_found"
        # The profile server under the same prefix answers live.
        live = http.post(
            f"{root}/j/a.4/p/reference/v1/chat/completions",
            json={"model": "x", "stream": True, "messages": [{"role": "user", "content": "Hi"}]},
        )
        assert live.status_code == 200 and live.content.endswith(b"data: [DONE]\n\n")
    assert bytes(recorder.exchanges["a.1"][0].body) == SSE
    assert recorder.exchanges["a.2"][0].status == 500
    assert bytes(recorder.exchanges["a.2"][0].request) == b'{"any":"body"}'
    assert bytes(recorder.exchanges["a.4"][0].body) == live.content
    assert "a.5" not in recorder.exchanges
