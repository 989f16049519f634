"""A bad setting given in Python is named as the Python caller wrote it (`max_body=`), not as a flag of
`plantstub serve`; from the command line and the environment, as typed there.

Found by a new user's trial: `Stub(max_body="x")` raised `--max-body='x': ...`, a flag the caller never typed.
"""

from __future__ import annotations

import pytest

from plantstub import ConfigError, Stub, create_app


def test_stub_names_a_bad_keyword_as_the_caller_wrote_it():
    with pytest.raises(ConfigError) as refused:
        Stub(max_body="1x")
    assert str(refused.value) == "max_body='1x': not a size in bytes (expected an integer 1-2147483647)"


def test_create_app_names_a_bad_keyword_as_the_caller_wrote_it():
    with pytest.raises(ConfigError) as refused:
        create_app(read_timeout=-1)
    assert str(refused.value).startswith("read_timeout=-1: not a number of seconds")


def test_the_environment_is_still_named_by_its_variable(monkeypatch):
    monkeypatch.setenv("PLANTSTUB_JOURNAL_FLUSH", "never")
    with pytest.raises(ConfigError) as refused:
        Stub()
    assert str(refused.value) == "PLANTSTUB_JOURNAL_FLUSH='never': unknown flush mode (expected batch or call)"


def test_a_scenarios_folder_or_scenario_found_wrong_at_start_is_named_as_given(tmp_path):
    with pytest.raises(ConfigError) as refused:
        Stub(scenarios=tmp_path / "nowhere").start()
    assert str(refused.value) == f"scenarios={str(tmp_path / 'nowhere')!r}: no such folder"
    with pytest.raises(ConfigError) as refused:
        Stub(scenario="nope").start()
    assert str(refused.value).startswith("scenario='nope': unknown scenario 'nope' (known: ")


def test_serve_names_the_environment_variable_a_bad_scenario_came_from(tmp_path):
    import os
    import subprocess
    import sys

    started = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0"], cwd=tmp_path,
                             env={**os.environ, "PLANTSTUB_SCENARIO": "nope"}, capture_output=True, text=True,
                             timeout=30)
    assert started.returncode == 1
    assert started.stderr.startswith("plantstub: PLANTSTUB_SCENARIO='nope': unknown scenario 'nope' (known: ")


def test_a_journal_or_webhook_refused_at_start_is_named_as_given(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError) as refused:
        Stub(journal=tmp_path / "notes.txt" / "calls.jsonl").start()
    assert str(refused.value).startswith(f"journal={str(tmp_path / 'notes.txt' / 'calls.jsonl')!r}: cannot open")
    with pytest.raises(ConfigError) as refused:
        Stub(spec="plant-store-full", webhook=["/plant/webhok=http://127.0.0.1:9/hook"]).start()
    assert str(refused.value) == "webhook: '/plant/webhok' is not a webhook of the spec (did you mean '/plant/webhook'?)"
