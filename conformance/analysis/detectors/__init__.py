"""The quirk detectors, one module per catalogue group; the analyzer's registries run them.

framing (A), envelope (A/B, the choice's shape), tool_deltas (C-F), finish (G, length,
usage), content (H/I, reasoning and calls as text), roundtrip (K), request (tool_choice,
parallel_tool_calls, declared tools).
"""
