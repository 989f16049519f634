"""One `plantstub verify` run: load the spec and the scenarios, turn each rule into a request, send the ones that may
be sent to --against one after the other, judge each answer, then print (or write) what was found and, with
--record, the answers as a fresh recording. Exit status 1 when a rule differs, the service broke the contract, a
scenario file did not load, or there was nothing to verify."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plantstub._budget import Budget
from plantstub._json import JSON, NO_BODY, json_bytes
from plantstub._words import plural
from plantstub.config import shown_url
from plantstub.contract.load import load_spec
from plantstub.contract.operations import serve
from plantstub.contract.router import Router
from plantstub.incoming import IncomingRequest
from plantstub.proxy.record import Recorder
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.load import (
    ScenarioLoadError,
    load_builtin_scenarios,
    load_scenario_file,
    load_scenarios,
    scenario_files,
)
from plantstub.scenarios.model import Scenario
from plantstub.verify.build import plan
from plantstub.verify.client import Answer, NoAnswer, Sender
from plantstub.verify.judge import Verdict, verdict
from plantstub.verify.options import VerifySettings
from plantstub.verify.report import FAILING, Outcome, counted, json_report, junit, lines, outcome_of, summary
from plantstub.verify.request import Request, Unsent
from plantstub.verify.secrets import Secrets


@dataclass
class Loaded:
    """The scenarios to verify, in the order given, and the problems of what did not load."""

    scenarios: list[Scenario] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def load_paths(paths: tuple[Path, ...], contract: ScenarioContract, only: str | None, named: bool = True) -> Loaded:
    """The scenarios of the files and folders given (a folder's files sorted); with `only`, that one scenario, from
    them or else among the built-in ones. `named`: the paths were given (not the default folder, which a run
    naming a built-in scenario may lack)."""
    loaded = Loaded()
    for given in paths:
        if not named and only is not None and not given.exists():
            continue
        if given.is_dir():
            if not scenario_files(given):
                loaded.errors.append(f"{given}: no scenario files here (*.yaml, *.yml)")
                continue
            found, errors = load_scenarios(given, contract.spec, contract)
            loaded.scenarios.extend(found.values())
            loaded.errors.extend(map(str, errors))
        elif given.exists():
            try:
                loaded.scenarios.append(load_scenario_file(given, contract.spec, contract))
            except ScenarioLoadError as exc:
                loaded.errors.extend(map(str, exc.errors))
        else:
            loaded.errors.append(f"{given}: no such file or folder")
    if only is not None:
        chosen = [s for s in loaded.scenarios if s.name == only]
        if not chosen:
            builtins, _ = load_builtin_scenarios(contract.spec, contract)
            chosen = [builtins[only]] if only in builtins else []
        if not chosen:
            names = ", ".join(s.name for s in loaded.scenarios) or "none"
            loaded.errors.append(f"--scenario {only!r}: no such scenario (loaded: {names})")
        loaded.scenarios = chosen
    return loaded


RECORDING_BYTES = 256 * 2**20  # what --record may hold of the service's answers before it writes them


def _recorded(recorder: Recorder, request: Request, answer: Answer | NoAnswer, judged: Verdict,
              secrets: Secrets) -> None:
    """The exchange of one rule, for --record (the recorder redacts by the one rule; --header values, which a service
    may echo anywhere, are hidden here before anything is kept)."""
    headers = list(request.headers)
    raw = b""
    if request.body is not NO_BODY:
        raw = json_bytes(secrets.value(request.body))
        headers.append(("Content-Type", JSON))
    incoming = IncomingRequest(request.method, request.path, {k: [v] for k, v in request.query}, dict(headers), raw,
                               request.raw_path, request.raw_query, "https",
                               tuple((k.encode(), v.encode()) for k, v in headers))
    if isinstance(answer, NoAnswer):
        recorder.failed(incoming, secrets.text(answer.reason))
        return
    payload = answer.payload
    if secrets.values:
        payload = secrets.text(payload.decode("utf-8", "replace")).encode()
    recorder.add(incoming, answer.status, answer.content_type, payload, secrets.value(judged.service_body),
                 [secrets.text(p) for p in judged.broke])


async def _send_all(settings: VerifySettings, contract: ScenarioContract, scenarios: list[Scenario],
                    secrets: Secrets, recorder: Recorder | None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    cache: dict[int, Any] = {}
    async with Sender(settings.against, settings.headers, settings.request_timeout, settings.ca) as sender:
        for scenario in scenarios:
            for rule in scenario.rules:
                where = (scenario.name, scenario.file, rule.line, rule.label)
                planned = plan(rule, scenario, contract, settings.headers, settings.allow_writes)
                if isinstance(planned, Unsent):
                    outcomes.append(Outcome(*where, planned.label, planned.outcome, planned.reason, planned.request))
                    continue
                answer = await sender.send(planned)
                judged = verdict(rule, planned, answer, contract.served[planned.op], settings.compare,
                                 settings.headers, cache)
                outcomes.append(Outcome(*where, planned.shown, outcome_of(judged), "", planned, judged))
                if recorder is not None:
                    _recorded(recorder, planned, answer, judged, secrets)
    return outcomes


def _write(path: Path, data: bytes) -> str | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        return f"plantstub: {path}: cannot write ({exc.strerror or exc})"
    return None


def verify(settings: VerifySettings) -> int:
    """Run `plantstub verify`; the exit status."""
    started = time.perf_counter()
    spec = load_spec(settings.spec, root=settings.spec_root, cache=settings.spec_cache)
    served = serve(spec)
    contract = ScenarioContract(spec, served, Router(spec))
    loaded = load_paths(settings.paths, contract, settings.scenario, settings.named)
    for error in loaded.errors:
        print(error, file=sys.stderr)
    secrets = Secrets(settings.headers)
    against = shown_url(settings.against)
    recorder = (Recorder(settings.record, against, Budget(RECORDING_BYTES)) if settings.record is not None
                else None)
    outcomes = asyncio.run(_send_all(settings, contract, loaded.scenarios, secrets, recorder))
    seconds = time.perf_counter() - started
    status = 1 if loaded.errors or any(counted(outcomes)[o] for o in FAILING) else 0
    if settings.json:
        head = {"against": against, "spec": str(settings.spec or "the bundled Plant Store"), "compare": settings.compare,
                "seconds": round(seconds, 3)}
        print(json_report(outcomes, secrets, settings.headers, head, loaded.errors))
    else:
        for line in lines(outcomes, secrets):
            print(line)
        said = summary(outcomes, len(loaded.scenarios), against, seconds)
        errors = len(loaded.errors)
        print(said + (f"; {plural(errors, 'load error')} (on stderr)" if errors else ""))
    if not outcomes and not loaded.errors:
        print(f"plantstub: no scenario rules to verify in {', '.join(map(str, settings.paths))}", file=sys.stderr)
        status = 1
    if settings.junit is not None:
        problem = _write(settings.junit, junit(outcomes, secrets, f"plantstub verify against {against}", seconds))
        if problem is not None:
            print(problem, file=sys.stderr)
            status = 1
    if recorder is not None:
        status = max(status, _save(recorder, contract, settings))
    return status


def _save(recorder: Recorder, contract: ScenarioContract, settings: VerifySettings) -> int:
    try:
        saved = recorder.save_now(contract)
    except OSError as exc:
        print(f"plantstub: --record: cannot write to {settings.record}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if saved.file is None:
        print("plantstub: --record: no request was sent; nothing recorded", file=sys.stderr)
        return 0
    print(saved.said(), file=sys.stderr)
    return 0

