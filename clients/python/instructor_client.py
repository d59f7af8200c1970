"""instructor: ``instructor.from_openai(OpenAI(...), mode=Mode.TOOLS)`` and
``create_partial(response_model=..., stream=True)`` (instructor's streaming docs), the
response model built from the scenario's first tool (its name, description and
properties). instructor asks for that one tool and returns one object, without a call id:
its row judges the first call's name and arguments, never an id (and a parameter that came
as null reads as absent: the partial model cannot tell them apart)."""

from typing import Any

import instructor
from _driver import options, serve
from openai import OpenAI
from pydantic import ConfigDict, create_model


def _model(tool):
    fn = tool["function"]
    props = (fn.get("parameters") or {}).get("properties") or {}
    model = create_model(fn["name"], __config__=ConfigDict(extra="allow"),
                         **{p: (Any, None) for p in props})
    model.__doc__ = fn.get("description") or fn["name"]
    return model


def run(job):
    req = job["request"]
    client = instructor.from_openai(OpenAI(base_url=job["base_url"], api_key="unused",
                                           max_retries=0), mode=instructor.Mode.TOOLS)
    final = None
    for partial in client.chat.completions.create_partial(
            model=job["model"], messages=req["messages"], response_model=_model(req["tools"][0]),
            max_retries=0, **options(req, "max_tokens")):
        final = partial
    if final is None:
        return []
    # One object of the response model: no call name or id to report (the judge checks none).
    return [{"arguments": final.model_dump(exclude_none=True)}]


if __name__ == "__main__":
    serve("instructor", run)
