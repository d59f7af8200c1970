"""Lanes: real inference servers (llama.cpp, vLLM) that the suite builds, starts and stops.

:mod:`conformance.lanes.common` holds the process and HTTP helpers they share.
"""
