"""Conformance suite for OpenAI-compatible Chat Completions streaming tool calls."""

__version__ = "0.1.0"
