"""Call filters of `GET /__plantstub/calls`, read from a query and applied to recorded calls."""

from __future__ import annotations

import pytest

from plantstub.recording.call import Call
from plantstub.recording.filters import CALL_FILTERS, CallFilter, FilterError


def call(seq: int, method: str = "POST", path: str = "/plants", status: int = 200, valid: bool = True) -> Call:
    return Call(seq=seq, started=0.0, method=method, path=path, query={}, headers={}, body=None, valid=valid,
                errors=(), scenario=None, rule=None, response={"status": status, "headers": {}, "body": None})


CALLS = [call(1), call(2, "GET", "/plants/7", 404, False), call(3, path="/plants/8"), call(4, status=400, valid=False)]


@pytest.mark.parametrize(("query", "seqs"), [
    ({}, [1, 2, 3, 4]),
    ({"method": "get"}, [2]),
    ({"path": "/plants/{id}"}, [2, 3]),
    ({"path": "/plants"}, [1, 4]),
    ({"status": "400"}, [4]),
    ({"valid": "false"}, [2, 4]),
    ({"since": "2"}, [3, 4]),
    ({"limit": "2"}, [3, 4]),
    ({"limit": "0"}, []),
    ({"method": "POST", "valid": "true", "limit": "1"}, [3]),
])
def test_filters_keep_the_calls_that_match_all_given(query, seqs):
    assert [c.seq for c in CallFilter.from_query(query).apply(CALLS)] == seqs


@pytest.mark.parametrize(("query", "message"), [
    ({"methd": "GET"}, f"query.methd: unknown filter (known: {', '.join(CALL_FILTERS)})"),
    ({"status": "ok"}, "query.status: 'ok' is not an integer"),
    ({"limit": "9" * 19}, f"query.limit: {'9' * 19!r} is not an integer"),
    ({"valid": "yes"}, "query.valid: 'yes' is not true or false"),
])
def test_bad_filters_are_named(query, message):
    with pytest.raises(FilterError) as raised:
        CallFilter.from_query(query)
    assert str(raised.value) == message
