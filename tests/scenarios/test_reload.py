"""Reloading a scenarios folder (--watch): what a reload keeps (the active scenario while its file is
missing, counters of unchanged scenarios), how changes are seen (content, not stamps), rule indexing
that stays linear, and a reload that never holds the event loop."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from plantstub import create_app
from plantstub.config import build_settings
from plantstub.scenarios import watch as watching
from plantstub.scenarios.model import Criteria, Reply, Rule, Scenario
from plantstub.scenarios.select import RuleCounters, RuleIndex, select_rule
from plantstub.scenarios.watch import FolderSnapshot, off_loop
from plantstub.server.app import SESSIONS_KEY
from plantstub.server.runtime import load
from plantstub.server.table import Sessions
from tests.helpers import JSON_AUTH, make_request, no_hang, reload, write

SEQUENCE = """\
description: {description}
rules:
  - match: {{path: /plants}}
    replies:
      - {{status: 400, body: {{error: 503, message: Store is closed}}}}
      - {{status: 200, body: {{name: {second}}}}}
      - {{status: 200, body: {{name: third}}}}
"""
OTHER = "description: {description}\nrules:\n  - match: {{path: /plants}}\n    reply: {{status: 200}}\n"


def control_for(folder, scenario: str | None = "seq") -> Sessions:
    return Sessions(load(build_settings({"scenarios": str(folder), "scenario": scenario, "watch": True})))


def answer(control: Sessions, name: str = "Fern") -> str:
    """Which reply the default session's active scenario gives a POST /plants now (counted, as a request would be)."""
    session = control.default
    assert session.active is not None
    chosen = select_rule(session.scenarios.indexes[session.active], session.counters, make_request(),
                         {"id": 1, "name": name})
    assert chosen is not None
    rule, at = chosen
    return f"{rule.label}.replies[{at}]"


# -- the active scenario while its file is missing ------------------------------------------------
def test_reload_keeps_the_active_scenario_while_its_file_is_missing(tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    write(tmp_path, "other.yaml", OTHER.format(description="v1"))
    control = control_for(tmp_path)
    assert answer(control) == "rules[0].replies[0]"
    kept = control.default.scenarios.scenarios["seq"]
    seq.unlink()
    assert reload(control) == [
        f"{seq} is gone; the active scenario 'seq' stays active as last loaded until its file is back",
        f"reloaded 1 scenario(s) from {tmp_path}",
    ]
    assert (control.default.active, control.default.scenarios.scenarios["seq"], control.default.scenarios.missing) == ("seq", kept, {"seq": str(seq)})
    assert answer(control) == "rules[0].replies[1]"  # answers as before, counters and all
    write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    assert reload(control) == [
        f"the active scenario 'seq' is back ({seq}); loaded, still active",
        f"reloaded 2 scenario(s) from {tmp_path}",
    ]
    assert (control.default.active, control.default.scenarios.missing) == ("seq", {})
    assert control.default.scenarios.scenarios["seq"] is not kept  # the file as it is now
    assert answer(control) == "rules[0].replies[2]"  # the same rules: the sequence carries on


def test_reload_keeps_the_active_scenario_when_its_file_names_another(tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    control = control_for(tmp_path)
    write(tmp_path, "seq.yaml", "name: renamed\n" + SEQUENCE.format(description="v1", second="two"))
    assert reload(control)[0] == (
        f"{seq} no longer defines 'seq'; the active scenario 'seq' stays active as last loaded until its file is back")
    assert (control.default.active, sorted(control.default.scenarios.missing)) == ("seq", ["seq"])
    assert {"seq", "renamed"} <= set(control.default.scenarios.scenarios)


def test_reload_keeps_the_folder_version_over_a_builtin_of_that_name(tmp_path):
    closed = write(tmp_path, "store-closed.yaml", OTHER.format(description="mine"))
    control = control_for(tmp_path, "store-closed")
    closed.unlink()
    reload(control)
    assert control.default.scenarios.scenarios["store-closed"].description == "mine"  # not switched to the built-in meanwhile
    assert control.default.scenarios.missing == {"store-closed": str(closed)}


def test_switching_away_drops_the_kept_scenario(tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    write(tmp_path, "other.yaml", OTHER.format(description="v1"))
    control = control_for(tmp_path)
    seq.unlink()
    reload(control)
    control.default.use("other")
    assert ("seq" in control.default.scenarios.scenarios, control.default.scenarios.missing) == (False, {})


async def test_missing_is_listed_by_the_admin_api(aiohttp_client, tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    app = create_app(scenarios=str(tmp_path), scenario="seq", watch=True)
    client = await aiohttp_client(app)
    seq.unlink()
    reload(app[SESSIONS_KEY])
    listed = await (await client.get("/__plantstub/scenarios")).json()
    assert listed["active"] == "seq"
    assert {s["name"]: s["missing"] for s in listed["scenarios"]}["seq"] is True
    assert listed["errors"] == []
    assert (await client.get("/__plantstub/health")).status == 200  # nothing is lost: health stays ok


# -- rule counters across reloads ------------------------------------------------------------------
def test_reload_keeps_counters_of_scenarios_whose_rules_did_not_change(tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    write(tmp_path, "other.yaml", OTHER.format(description="v1"))
    control = control_for(tmp_path)
    assert answer(control) == "rules[0].replies[0]"
    write(tmp_path, "other.yaml", OTHER.format(description="v2"))  # another file
    reload(control)
    assert answer(control) == "rules[0].replies[1]"
    seq.write_text("# a comment moves every line\n" + SEQUENCE.format(description="v2", second="two"))
    reload(control)
    assert answer(control) == "rules[0].replies[2]"  # lines and description are not rules
    write(tmp_path, "seq.yaml", SEQUENCE.format(description="v2", second="deux"))
    reload(control)
    assert answer(control) == "rules[0].replies[0]"  # its own rules changed: afresh


def test_a_broken_reload_keeps_counters(tmp_path):
    write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="two"))
    broken = write(tmp_path, "other.yaml", OTHER.format(description="v1"))
    control = control_for(tmp_path)
    assert answer(control) == "rules[0].replies[0]"
    broken.write_text("rules: [")
    assert reload(control)[-1] == "kept the last good scenarios (6)"
    assert answer(control) == "rules[0].replies[1]"


# -- seeing changes ----------------------------------------------------------------------------------
def test_snapshot_sees_an_edit_that_keeps_every_stamp(tmp_path):
    path = write(tmp_path, "a.yaml", "x: aaaa\n")
    snapshot = FolderSnapshot(tmp_path)
    assert snapshot.scan() == ["a.yaml"]
    assert snapshot.scan() == []
    path.write_text("x: bbbb\n")
    # As on a filesystem whose timestamps did not move (same second): the stamps are all equal.
    now = os.stat(path)
    snapshot.files["a.yaml"] = ((now.st_mtime_ns, now.st_ctime_ns, now.st_size, now.st_ino), snapshot.files["a.yaml"][1])
    assert snapshot.scan() == ["a.yaml"]  # recent, so hashed: the content changed


def test_snapshot_sees_an_edit_that_restores_size_and_mtime(tmp_path):
    path = write(tmp_path, "a.yaml", "x: aaaa\n")
    old = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(old, old))
    snapshot = FolderSnapshot(tmp_path)
    snapshot.scan()
    path.write_text("x: bbbb\n")
    os.utime(path, ns=(old, old))
    assert snapshot.scan() == ["a.yaml"]


def test_snapshot_trusts_settled_stamps_and_ignores_touch(tmp_path, monkeypatch):
    path = write(tmp_path, "a.yaml", "x: aaaa\n")
    write(tmp_path, ".#a.yaml", "an editor's lock file")
    snapshot = FolderSnapshot(tmp_path)
    assert snapshot.scan() == ["a.yaml"]
    monkeypatch.setattr(watching, "RACY_NS", 0)  # as if every file were older than a timestamp's granularity
    assert (snapshot.scan(), snapshot.hashed) == ([], 0)  # a settled folder costs a stat per file
    os.utime(path)  # touch: a new stamp, the same content
    assert (snapshot.scan(), snapshot.hashed) == ([], 1)
    path.unlink()
    assert snapshot.scan() == ["a.yaml"]


async def test_a_change_during_a_reload_is_loaded_next(tmp_path):
    write(tmp_path, "seq.yaml", SEQUENCE.format(description="v1", second="one"))
    control = control_for(tmp_path)
    assert control.runtime.folder.snapshot is not None
    loads: list[str] = []
    finished = asyncio.Event()

    async def reload(changed: list[str]) -> None:
        loaded = await off_loop(control.load_folder)
        loads.append(loaded.scenarios["seq"].description)
        if len(loads) == 1:  # the file changes again while the first reload is being installed
            write(tmp_path, "seq.yaml", SEQUENCE.format(description="v3", second="three"))
        control.install(loaded)
        if control.default.scenarios.scenarios["seq"].description == "v3":
            finished.set()

    task = asyncio.create_task(watching.watch(control.runtime.folder.snapshot, reload, interval=0.01))
    write(tmp_path, "seq.yaml", SEQUENCE.format(description="v2", second="two"))
    try:
        await asyncio.wait_for(finished.wait(), 5)
    finally:
        task.cancel()
    assert loads == ["v2", "v3"]


async def test_off_loop_runs_in_a_thread_and_raises_there():
    def boom() -> None:
        raise ValueError("from the thread")

    assert await off_loop(threading.get_ident) != threading.get_ident()
    with pytest.raises(ValueError, match=r"^from the thread$"):
        await off_loop(boom)


# -- linear indexing ---------------------------------------------------------------------------------
def test_rule_index_keeps_rule_order_across_pinned_and_free_rules(tmp_path):
    write(tmp_path, "mix.yaml", """\
rules:
  - {match: {body: {name: A}}, reply: {status: 200}}
  - {match: {path: /plants}, reply: {status: 200}}
  - {match: {body: {name: A}}, reply: {status: 200}}
  - {match: {body: {name: B}}, reply: {status: 200}}
""")
    control = control_for(tmp_path, None)
    index = RuleIndex(control.default.scenarios.scenarios["mix"])
    order = {name: [r.index for r in index.candidates(make_request(), {"name": name})] for name in ("A", "B", "C")}
    assert order == {"A": [0, 1, 2], "B": [1, 3], "C": [1]}
    assert [r.index for r in index.candidates(make_request(), [1])] == [1]


def test_rule_index_of_many_pinned_rules_is_built_in_linear_time():
    # A list per pinned value, each of every rule, took 25 s for 5,000 rules: for these 20,000, some 7 minutes.
    rules = tuple(Rule(i, Criteria(body={"name": f"P{i}"}), (Reply(),)) for i in range(20_000))
    index = RuleIndex(Scenario("many", "", "many.yaml", rules))
    with no_hang("the index and the choice"):
        chosen = select_rule(index, RuleCounters(), make_request(headers=JSON_AUTH), {"name": "P19999"})
    assert chosen is not None and chosen[0].index == 19_999


def test_snapshot_reads_no_file_outside_the_folder(tmp_path, monkeypatch):
    outside = write(tmp_path, "secret.yaml", "x: 1\n")
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "link.yaml").symlink_to(outside)
    opened: list[str] = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    snapshot = FolderSnapshot(folder)
    assert snapshot.scan() == ["link.yaml"]
    outside.write_text("x: 22\n")
    assert snapshot.scan() == ["link.yaml"]  # seen by its stamp
    assert opened == []


def test_snapshot_does_not_open_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe.yaml")  # opening it would wait for a writer for ever
    snapshot = FolderSnapshot(tmp_path)
    assert (snapshot.scan(), snapshot.hashed) == (["pipe.yaml"], 0)
