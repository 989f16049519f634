"""The request pipeline of one session, the same under every transport: an IncomingRequest -> decide() -> a Decision,
waited on when its answer must wait (a delay, the real service), webhooks sent, recorded once. The transport writes
the answer the Decision holds."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any, NamedTuple, Protocol

from plantstub._json import NO_BODY, is_json
from plantstub.contract.outgoing import Outgoing, unanswered
from plantstub.incoming import IncomingRequest
from plantstub.recording.answered import CHECK, CLIENT_LEFT, Answerer
from plantstub.recording.call import Record
from plantstub.recording.requestlog import RequestLogger
from plantstub.server.decide import UNANSWERED, Decision, decide, send_webhooks
from plantstub.server.response import internal_error, sent_headers
from plantstub.server.session import Session

log = logging.getLogger("plantstub")
_NO_HEADERS: dict[str, str] = {}  # a pending call's reply headers: none yet (never changed: Record.view copies)


class Client(Protocol):
    """What the pipeline asks of the connection a request came on, while its answer waits."""

    def lost(self) -> asyncio.Future[None] | None:
        """A future done once the client has left (None: the transport tells only when asked, `left()`)."""

    def left(self) -> bool:
        """Whether the client has left."""

    @property
    def stopping(self) -> bool:
        """Whether the stub is stopping (it closes the connection, not the client)."""


class Arrival(NamedTuple):
    """A request as it arrived, before its body: its number, the journal's epoch, the time, the active scenario."""

    seq: int
    epoch: int
    started: float
    active: str | None


Served = Decision | Coroutine[Any, Any, Decision | None]  # decided now, or once its wait is over (None: unsent)
_new = tuple.__new__  # a NamedTuple made from a tuple: no frame of its __new__, on every request


class Pipeline:
    """One session's pipeline: decide, wait out a delay or the real service, send webhooks, record."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.runtime = session.runtime
        self.journal = session.journal
        self.tally = session.tally
        self.logger = RequestLogger(self.runtime.settings.log_format)

    def arrive(self) -> Arrival:
        """Number a request on arrival (a late answer still belongs to this epoch) and attribute it to the scenario
        active then, before its body is read."""
        seq, epoch = self.journal.arrive()
        return _new(Arrival, (seq, epoch, time.time(), self.session.active))

    def serve(self, incoming: IncomingRequest, arrival: Arrival, client: Client) -> Served:
        """The Decision for `incoming`, recorded; a coroutine when its answer must wait."""
        try:
            decision = decide(self.runtime, self.session, incoming, arrival.active)
        except Exception as exc:  # a plantstub bug: answered in the Error shape, the stub keeps serving
            log.exception("plantstub: internal error on %s %s", incoming.method, incoming.path)
            decision = UNANSWERED.crashed(internal_error(exc))
        if decision.delay_ms or decision.forward:
            return self._later(incoming, arrival, decision, client)
        return self._done(incoming, arrival, decision)

    def refuse(self, incoming: IncomingRequest, arrival: Arrival, out: Outgoing, by: Answerer = CHECK) -> Decision:
        """Record a request refused before it was decided (its body too big, late, broken, or never sent whole: then
        `by` is CLIENT_LEFT)."""
        decision = UNANSWERED.refused(out, by)
        self.record(incoming, arrival, decision)
        return decision

    def _done(self, incoming: IncomingRequest, arrival: Arrival, decision: Decision) -> Decision:
        if decision.sends:
            try:
                send_webhooks(self.session, incoming, decision)
            except Exception as exc:  # a plantstub bug: answered as one, the stub keeps serving
                log.exception("plantstub: internal error on %s %s", incoming.method, incoming.path)
                decision = decision.crashed(internal_error(exc))
        self.record(incoming, arrival, decision)  # before the answer goes: a client that has it finds its call
        return decision

    async def _later(self, incoming: IncomingRequest, arrival: Arrival, decision: Decision,
                     client: Client) -> Decision | None:
        """The rest of a decision whose answer waits; None when no answer is to go out (the call says why)."""
        try:
            if decision.forward:  # --proxy: the real service answers (plantstub/proxy/forward.py)
                assert self.runtime.forwarder is not None and decision.op is not None  # decide() forwards only then
                from plantstub.proxy.forward import ClientLeft  # imported by load() with --proxy: a dict lookup

                try:
                    out, upstream = await self.runtime.forwarder.forward(incoming, self.runtime.served[decision.op],
                                                                         client.lost(), self.session.recorder)
                except ClientLeft as left:
                    self.record(incoming, arrival, decision.forwarded(left.out, left.upstream, left=True))
                    return None
                decision = decision.forwarded(out, upstream)
            else:  # listed at once, answered once the delay is over
                self._pend(incoming, arrival, decision)
                if not await _waited(client, decision.delay_ms):
                    self.record(incoming, arrival, decision.unsent(_unsent(client, decision.delay_ms)))
                    return None
        except asyncio.CancelledError:  # the stub stopping, or aiohttp's own server cancelling for a client that left
            self.record(incoming, arrival, decision.unsent(_unsent(client, decision.delay_ms)))
            raise
        except Exception as exc:  # a plantstub bug: answered as one, the stub keeps serving
            log.exception("plantstub: internal error on %s %s", incoming.method, incoming.path)
            decision = decision.crashed(internal_error(exc))
        return self._done(incoming, arrival, decision)

    def _pend(self, incoming: IncomingRequest, arrival: Arrival, decision: Decision) -> None:
        """List a call whose reply is delayed: the request and its verdict now, with no response (`pending`)."""
        record = self._record_of(incoming, arrival, decision, None, _NO_HEADERS, b"", False, None)
        self.journal.pend(record, arrival.epoch, NO_BODY if decision.body is None else decision.body)

    def record(self, incoming: IncomingRequest, arrival: Arrival, decision: Decision) -> None:
        """The one place a call is kept: the journal (and its file), coverage, the request log."""
        out = decision.out or _GONE
        fault = decision.fault
        status = out.status if fault is None or fault.sends_status else None
        # a copy of the payload: orjson's bytes keep their whole 4 KiB buffer, 100x what a small answer needs
        record = self._record_of(incoming, arrival, decision, status, sent_headers(out),
                                 memoryview(out.payload).tobytes(), is_json(out.content_type),
                                 None if fault is None else fault.value)
        response_body = None if out.body is NO_BODY else out.body
        if self.journal.append(record, arrival.epoch, NO_BODY if decision.body is None else decision.body,
                               response_body):
            self.tally.count(decision.op, record.status)
        if self.logger.enabled:
            self.logger.log(record)

    @staticmethod
    def _record_of(incoming: IncomingRequest, arrival: Arrival, decision: Decision, status: int | None,
                   headers: dict[str, str], payload: bytes, payload_json: bool, fault: str | None) -> Record:
        """The call as the journal keeps it: the request as sent, its verdict, and what was answered (if yet)."""
        # Kept as bytes; a body read from anything but JSON text (a form) is kept as read too.
        parsed = (decision.body if decision.body is not None and not is_json(incoming.headers.get("Content-Type"))
                  else NO_BODY)
        return Record.of(
            arrival.seq, arrival.started, incoming.method, incoming.path, incoming.raw_query,
            incoming.raw_headers, incoming.raw, parsed, not decision.errors, decision.errors, decision.scenario,
            decision.rule, status, headers, payload, payload_json, fault, decision.stub_errors, decision.upstream,
            decision.answerer if decision.out is not None else CLIENT_LEFT,  # no answer: the client left (_GONE)
        )


_GONE = unanswered("the answer was sent")


async def _waited(client: Client, delay_ms: int) -> bool:
    """Wait out a reply's delay; False as soon as the client closes the connection (then nobody is waiting)."""
    lost = client.lost()
    if lost is None:  # aiohttp's own server: a client that left is seen once the delay is over
        await asyncio.sleep(delay_ms / 1000)
        return not client.left()
    if not lost.done():
        await asyncio.wait((lost,), timeout=delay_ms / 1000)
    return not lost.done()


def _unsent(client: Client, delay_ms: int) -> Outgoing:
    """The 499 of a reply that never went out: the stub stopping (closing its connections), or the client leaving."""
    stopped = not (client.left() and not client.stopping)
    return unanswered(f"the reply delayed {delay_ms} ms (delay_ms) was sent" if delay_ms else "the answer was sent",
                      stopped)
