"""Text from the wire or from a file, made safe to print and to write.

Anything an endpoint or a capture sends (an error message, a tool name, an id, a model
name) may hold control characters: ESC starts terminal sequences that retitle a window,
clear the screen or, with OSC 52, write the clipboard; a lone surrogate (``"\\ud800"`` is
valid JSON) cannot be encoded as UTF-8 at all. Both are shown as ``\\uXXXX`` escapes,
which read the same to a person, are valid escapes in JSON and JavaScript strings (the
JSON and HTML reports keep their meaning), and can never act on a terminal.

- ``terminal(text)``: one line for a terminal; every control character (C0, DEL, C1,
  line breaks included), lone surrogates and bidirectional overrides escaped.
- ``terminal_lines(text)``: the same, keeping the text's own line ends (``\\n``).
- ``for_file(text)``: for a report or a results file: lone surrogates, DEL and C1
  controls, and C0 controls other than tab and line ends, escaped.
- ``install_log_escaping()``: every log record's message escaped as ``terminal_lines``.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any, TextIO

# C0 and C1 controls, DEL, lone surrogates, line and paragraph separators, and the bidi
# embeddings, overrides and isolates (text that reorders what a reader sees).
_TERMINAL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_FILE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def terminal(text: Any) -> str:
    """``text`` (any value: ``str()`` of it) as one line that is safe on a terminal."""
    s = text if isinstance(text, str) else str(text)
    return _TERMINAL.sub(_escape, s) if _TERMINAL.search(s) else s


def terminal_lines(text: Any) -> str:
    """``terminal`` for a text of several lines: its ``\\n`` are kept, nothing else."""
    s = text if isinstance(text, str) else str(text)
    return "\n".join(terminal(line) for line in s.split("\n"))


def for_file(text: str) -> str:
    """A text to write to a file (JSON, Markdown, HTML, XML): encodable as UTF-8 and
    inert when ``cat`` prints it. In JSON these characters only occur inside strings,
    where ``\\uXXXX`` is the same character, so a JSON text stays the same document."""
    return _FILE.sub(_escape, text) if _FILE.search(text) else text


def echo(line: Any = "", file: TextIO | None = None) -> None:
    """``print`` of one or more lines from the wire or a file, escaped for a terminal."""
    print(terminal_lines(line), file=file if file is not None else sys.stdout)


_installed = False


def install_log_escaping() -> None:
    """Every log record made from now on (httpx logs the server's reason phrase, vcrpy
    the request) has its message escaped like ``terminal_lines``, whatever handler
    prints it (pytest's live and captured logs included). Once per process."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging to report
            return record
        safe = terminal_lines(message)
        if safe != message:
            record.msg, record.args = safe, None
        return record

    logging.setLogRecordFactory(factory)


__all__ = ["echo", "for_file", "install_log_escaping", "terminal", "terminal_lines"]
