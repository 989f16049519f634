"""Strict mode: what fails a test whose calls, or whose webhook receivers' answers, broke the contract."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from plantstub._words import plural

if TYPE_CHECKING:
    from plantstub.client.remote import RemoteStub
    from plantstub.recording.call import Call
    from plantstub.stub import Stub
    from plantstub.webhooks.deliveries import Delivery


def _listed(calls: list[Call], reasons: Callable[[Call], Iterable[str]]) -> str:
    return "; ".join(f"#{c.seq} {c.method} {c.path} -> {c.outcome}: {'; '.join(reasons(c))}" for c in calls)


def _service(call: Call) -> str:
    """The real service a proxied call went to: its URL without the call's path."""
    url = str(call.upstream["url"]) if call.upstream else ""
    return url[: len(url) - len(call.path)] if url.endswith(call.path) else url


def strict_failures(name: str, calls: list[Call], deliveries: Sequence[Delivery] = ()) -> list[str]:
    """Strict mode's complaints about one test: the consumer's broken requests, the stub's own faults, then the
    real service's answers (--proxy) that broke it, then the consumer's webhook receivers that answered a status the
    webhook does not declare. Who broke the contract on a call is the call's verdict (`Call.problems`), as the live
    page and the report show it."""
    found = []
    judged = [(c, c.problems) for c in calls]
    bad = [c for c, problems in judged if "invalid" in problems]
    if bad:
        n = len(bad)
        found.append(
            f"plantstub: {name} sent {plural(n, 'request')} that break{'s' if n == 1 else ''} the "
            f"contract: {_listed(bad, lambda c: c.errors)}. If that was the point of the test, mark it "
            "@pytest.mark.plantstub(strict=False)."
        )
    faulty = [c for c, problems in judged if "stub" in problems]
    if faulty:
        n = len(faulty)
        found.append(
            f"plantstub: the stub, not {name}, broke the contract on {plural(n, 'call')}: "
            f"{_listed(faulty, lambda c: c.stub_errors)}. A scenario rule named here must be fixed (or say "
            "`off_contract: true`); an internal error is a plantstub bug."
        )
    broken = [c for c, problems in judged if "upstream" in problems]
    if broken:
        n = len(broken)
        services = ", ".join(dict.fromkeys(_service(c) for c in broken))
        found.append(
            f"plantstub: in {name}, the real service ({services}) broke the contract on "
            f"{plural(n, 'proxied call')}: {_listed(broken, lambda c: c.problems['upstream'])}. The service, "
            "not the test, answered so; fix it or its spec, or mark the test @pytest.mark.plantstub(strict=False) "
            "if that was the point."
        )
    refused = [d for d in deliveries if d.status is not None and not d.valid]
    if refused:
        n = len(refused)
        listed = "; ".join(f"#{d.seq} {d.name} -> {d.url}: {d.error}" for d in refused)
        found.append(
            f"plantstub: in {name}, the consumer's webhook receiver broke the contract on {n} "
            f"deliver{'ies' if n > 1 else 'y'}: {listed}. Make the receiver answer a declared status, or mark the "
            "test @pytest.mark.plantstub(strict=False) if that was the point."
        )
    return found


def settled_deliveries(stub: Stub | RemoteStub, timeout: float = 5.0) -> list[Delivery]:
    """The test's deliveries once those still being sent are done (at most `timeout` seconds).

    On a sidecar both are read over the admin API (the session's health, then GET deliveries), so a sidecar's
    receivers are checked as an in-process stub's are.
    """
    from plantstub.client.remote import RemoteStub

    pause = 0.05 if isinstance(stub, RemoteStub) else 0.01  # on a sidecar each look is an admin call
    deadline = time.monotonic() + timeout
    while stub.pending_deliveries() and time.monotonic() < deadline:
        time.sleep(pause)
    return stub.deliveries
