"""The analysis: ``analyze`` and its doors, the Analyzer, and what they return.

``model`` holds the results, ``analyzer`` the one pass and the detector registries,
``detectors/`` the detectors by catalogue group.
"""

from conformance.analysis.analyzer import (
    Analyzer,
    analyze,
    analyze_bytes,
    analyze_chunks,
    analyze_events,
)
from conformance.analysis.model import CaptureResult, Finding, Impact
from conformance.transcript import InputError

__all__ = [
    "Analyzer",
    "CaptureResult",
    "Finding",
    "Impact",
    "InputError",
    "analyze",
    "analyze_bytes",
    "analyze_chunks",
    "analyze_events",
]
