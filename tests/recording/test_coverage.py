"""Coverage: one tally shape for a stub's report, the plugin's summary and xdist workers; one percentage."""

from __future__ import annotations

from plantstub.contract.load import load_spec
from plantstub.recording.coverage import Coverage, figures, merge, response_key, tally_of


def test_calls_count_towards_the_declared_response_they_got():
    spec = load_spec()
    [op] = [o for o in spec.operations if o.label == "POST /plants"]
    coverage = Coverage(spec)
    coverage.count(op, 200)
    coverage.count(op, 200)
    coverage.count(op, 502)  # undeclared
    coverage.count(op, None)  # a fault sent no status
    coverage.count(None, 404)  # no operation: not counted anywhere
    tally = coverage.tally()
    assert tally == {"POST /plants": {"declared": {"200": 2, "400": 0}, "undeclared": {"502": 1, "fault": 1}}}
    report = coverage.report()
    assert (report["covered"], report["total"], report["percent"]) == (1, 2, 50.0)
    assert tally_of(report) == tally  # what the plugin reads back from Stub.coverage()


def test_the_status_key_prefers_the_exact_code_then_the_range_then_default():
    spec = load_spec()
    [op] = spec.operations
    assert response_key(op, 200) == "200"
    assert response_key(op, 418) == "418"  # declared neither as 418, 4XX nor default
    assert response_key(op, None) == "fault"


def test_merging_adds_counts_and_keeps_operations_from_both_sides():
    into = {"POST /plants": {"declared": {"200": 1, "400": 0}, "undeclared": {}}}
    merge(into, {"POST /plants": {"declared": {"200": 2, "400": 1}, "undeclared": {"500": 1}},
                 "GET /plants": {"declared": {"200": 0}, "undeclared": {}}})
    assert into == {
        "POST /plants": {"declared": {"200": 3, "400": 1}, "undeclared": {"500": 1}},
        "GET /plants": {"declared": {"200": 0}, "undeclared": {}},
    }
    total = figures(into)
    assert (total.covered, total.total) == (2, 3)
    assert round(total.percent, 1) == 66.7


def test_nothing_declared_counts_as_fully_covered():
    assert figures({}).percent == 100.0
