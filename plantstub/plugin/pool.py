"""The running stubs of a pytest session (of an xdist worker): in process, one per distinct settings; on a sidecar,
one connection per URL and admin token. Each is made on first use; a failure fails only the tests that ask for it."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from plantstub._gc import collector_paused
from plantstub.config import Settings, build_settings, keyword_name

if TYPE_CHECKING:
    from plantstub.client.remote import RemoteStub
    from plantstub.stub import Stub


class StubPool:
    """The stubs started (`get`) and the sidecars connected (`sidecar`), by what made them.

    Settings that cannot start a stub (a missing folder, a broken scenario), or a sidecar that cannot be used with
    a token, fail each test that asks for them with the same one-line reason, without trying again; other settings
    and tokens are not touched by it.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed  # of dynamic answers, for settings from code that give none (the run's, in the header)
        self.stubs: dict[Settings, Stub] = {}
        self.failures: dict[Settings, str] = {}
        self.sidecars: dict[tuple[str, str | None], RemoteStub] = {}
        self.sidecar_failures: dict[tuple[str, str | None], str] = {}
        self._stateful: dict[str, bool] = {}

    def get(self, settings: Settings | dict[str, object]) -> Stub:
        # The first call imports the server and starts it: every object that builds lives on, so a collection
        # meanwhile would only walk them (about a sixth of a worker's first use).
        with collector_paused():
            return self._get(settings)

    def _get(self, settings: Settings | dict[str, object]) -> Stub:
        from plantstub.errors import PlantstubError
        from plantstub.stub import Stub

        stub: Stub | None = None
        problem = None
        try:
            if isinstance(settings, dict):
                settings = build_settings({"port": 0, **settings}, fallback={"seed": self.seed}, explicit_name=keyword_name)
            elif settings.seed is None and self.seed is not None:  # Settings from code: the run's seed, as a dict's
                settings = dataclasses.replace(settings, seed=self.seed)
            stub = self.stubs.get(settings)
            if stub is None:
                problem = self.failures.get(settings)
                if problem is None:
                    stub = self.stubs[settings] = Stub(settings=settings).start()
        except PlantstubError as exc:
            problem = f"plantstub: the stub cannot start: {exc}"
            if isinstance(settings, Settings):
                self.failures[settings] = problem
        if problem is not None:  # outside the except block: one line, no chained traceback
            pytest.fail(problem, pytrace=False)
        assert stub is not None  # started, or found running
        return stub

    def sidecar(self, url: str, token: str | None) -> RemoteStub:
        """The stub running at `url` (--plantstub-url), connected with `token` (its admin token is checked)."""
        from plantstub.client.remote import RemoteStub  # not plantstub.stub: a sidecar's worker imports no aiohttp
        from plantstub.errors import PlantstubError

        key = (url, token)
        remote = self.sidecars.get(key)
        if remote is not None:
            return remote
        problem = self.sidecar_failures.get(key)
        if problem is None:
            try:
                remote = self.sidecars[key] = RemoteStub.connect(url, token)
            except PlantstubError as exc:
                problem = self.sidecar_failures[key] = f"plantstub: --plantstub-url: {exc}"
        if problem is not None:  # outside the except block: one line, no chained traceback
            pytest.fail(problem, pytrace=False)
        assert remote is not None
        return remote

    def is_stateful(self, remote: RemoteStub) -> bool:
        """Whether the sidecar runs with --stateful (its health shows a store), asked once."""
        if remote.url not in self._stateful:
            self._stateful[remote.url] = "store" in remote.admin.expect("GET", "health", ok=(200, 503))
        return self._stateful[remote.url]

    def stop(self) -> None:
        for stub in self.stubs.values():
            stub.stop()
        self.stubs.clear()
