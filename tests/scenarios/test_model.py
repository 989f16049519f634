"""The scenario model's one list of faults: the Fault enum, the scenario JSON Schema and the docs agree."""

from __future__ import annotations

from pathlib import Path

from plantstub.scenarios.load import scenario_schema
from plantstub.scenarios.model import Fault

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def test_the_scenario_schema_lists_exactly_the_faults_of_the_enum():
    fault = scenario_schema()["$defs"]["reply"]["properties"]["fault"]
    assert sorted(fault["enum"]) == sorted(f.value for f in Fault)


def test_the_docs_name_every_fault():
    text = DOCS.read_text(encoding="utf-8")
    missing = [f.value for f in Fault if f"`{f.value}`" not in text]
    assert not missing, f"docs/scenarios.md does not describe: {missing}"


def test_only_malformed_body_sends_a_status():
    assert [f for f in Fault if f.sends_status] == [Fault.MALFORMED_BODY]
    assert Fault("empty_reply") is Fault.EMPTY_REPLY  # scenario files name faults by value
