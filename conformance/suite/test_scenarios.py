"""One test per scenario, parametrized over the configured providers:
``test_<scenario>[<provider>]``. The body is the same for all: run the cell through the
one pipeline and judge it (see conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.scenarios import SCENARIOS, Scenario


def _cell_test(scenario: Scenario) -> Any:
    @pytest.mark.vcr
    @pytest.mark.conformance_scenario(scenario.id)
    def test(conformance_provider: Any, conformance_cell: Any) -> None:
        conformance_cell(conformance_provider, scenario)

    test.__name__ = test.__qualname__ = scenario.test_name
    test.__doc__ = f"{scenario.title}: {scenario.description}"
    return test


for _s in SCENARIOS.values():
    globals()[_s.test_name] = _cell_test(_s)
