"""CallChecks: the assertion methods every stub has, in process or over the admin API, built on `calls`."""

from __future__ import annotations

from collections.abc import Mapping

from plantstub._json import NO_BODY
from plantstub.recording.assertions import assert_all_valid, assert_called, checked
from plantstub.recording.call import Call


class CallChecks:
    """Assertions over `self.calls`: one code path, so in-process and remote stubs fail with the same text."""

    @property
    def calls(self) -> list[Call]:
        raise NotImplementedError

    def assert_called(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        body: object = NO_BODY,
        headers: Mapping[str, object] | None = None,
        query: Mapping[str, object] | None = None,
        status: int | None = None,
        times: int | None = None,
    ) -> list[Call]:
        """Assert calls like this were received: `times` exactly, or at least one when None.

        :param body: partial JSON: each key given must equal the request's (matchers included).
        :param headers: names in any case; values compared as text (`True` is "true", `2` is "2"), or matchers.
        :param query: as `headers`, against each name's first value (a list: every value, in order).
        :returns: the matching calls.
        :raises CallAssertionError: with expected, received and the closest calls, field by field.
        :raises ValueError: a criterion that cannot be one (an unknown matcher, a `$regex` that does not compile).
        """
        __tracebackhide__ = True
        expectation = checked("assert_called(): ", method=method, path=path, headers=headers, query=query, body=body,
                              status=status)
        return assert_called(self.calls, expectation, times)

    def assert_not_called(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        body: object = NO_BODY,
        headers: Mapping[str, object] | None = None,
        query: Mapping[str, object] | None = None,
        status: int | None = None,
    ) -> None:
        """Assert no call like this was received; the filters are assert_called()'s.

        :raises CallAssertionError: naming the calls that match.
        """
        __tracebackhide__ = True
        expectation = checked("assert_not_called(): ", method=method, path=path, headers=headers, query=query,
                              body=body, status=status)
        assert_called(self.calls, expectation, 0)

    def assert_all_valid(self) -> None:
        """Assert every recorded request kept the contract; the failure lists each one that did not."""
        __tracebackhide__ = True
        assert_all_valid(self.calls)
