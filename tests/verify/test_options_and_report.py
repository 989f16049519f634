"""`plantstub verify`'s settings and refusals, its comparisons and its reports, without a service (a port nothing
listens on stands for one that is down)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from plantstub._json import MISSING
from plantstub.cli import main
from plantstub.errors import ConfigError
from plantstub.verify.judge import Verdict, body_differences, shape_differences
from plantstub.verify.options import verify_settings
from plantstub.verify.report import DIFFER, Outcome, junit, lines
from plantstub.verify.secrets import Secrets
from tests.helpers import free_port_url, write


@pytest.mark.parametrize(("explicit", "env", "message"), [
    ({}, {}, "verify needs the real service's base URL: --against URL (or PLANTSTUB_AGAINST)"),
    ({"against": "ftp://x"}, {}, "--against: 'ftp://x' is not an http:// or https:// URL with a host (expected the "
                                 "real service's base URL, e.g. https://staging.example.com)"),
    ({"against": "http://x", "compare": "exact"}, {}, "--compare='exact': unknown comparison (expected status, class, "
                                                      "shape, body)"),
    ({"against": "http://x"}, {"PLANTSTUB_REQUEST_TIMEOUT": "0"},
     "PLANTSTUB_REQUEST_TIMEOUT='0': not a number of seconds (expected a number above 0, at most 86400)"),
    ({"against": "http://x", "header": ["Bearer hunter2-secret"]}, {},
     "--header: expected 'NAME: VALUE' (a header name, a colon, its value); the value given is not shown, as it may be "
     "a credential"),
    ({"against": "http://x", "header": ["Bad Name: hunter2-secret"]}, {},
     "--header: 'Bad Name' is not a header name (letters, digits and !#$%&'*+-.^_`|~)"),
], ids=["no URL", "not http", "unknown comparison", "no time", "no colon", "bad name"])
def test_a_bad_setting_is_named_and_a_header_value_never_quoted(explicit, env, message):
    with pytest.raises(ConfigError) as refused:
        verify_settings(explicit, env)
    assert str(refused.value) == message


def test_settings_come_from_the_environment_below_the_flags(tmp_path):
    env = {"PLANTSTUB_AGAINST": "https://staging.example.com/api/", "PLANTSTUB_HEADER": "Authorization: Bearer x1\n"
           "X-Tenant: acme\n", "PLANTSTUB_COMPARE": "body", "PLANTSTUB_ALLOW_WRITES": "1", "PLANTSTUB_SCENARIOS":
           str(tmp_path), "PLANTSTUB_RECORD": "ignored: serve's, with --proxy", "PLANTSTUB_PORT": "not one of ours"}
    settings = verify_settings({"compare": "class"}, env)
    assert settings.against == "https://staging.example.com/api"
    assert settings.headers == (("Authorization", "Bearer x1"), ("X-Tenant", "acme"))
    assert (settings.compare, settings.allow_writes, settings.paths, settings.record) == ("class", True, (tmp_path,), None)


def test_a_service_that_is_down_is_a_rule_with_no_answer(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    write(tmp_path / "scenarios", "closed.yaml", "rules:\n  - match: {method: GET, path: /plants}\n    reply: {status: "
                                                 "200, body: [{name: x}]}\n")
    url = free_port_url()
    status = main(["verify", "--against", url, "--spec", "plant-store-full", "--header", "Authorization: Bearer abcd"])
    out, _ = capsys.readouterr()
    assert out.splitlines()[:2] == ["scenarios/closed.yaml:2 GET /plants: stub 200, service no answer: differs (no answer)",
                                    f"    {url}/plants refused the connection; is the real service running?"]
    assert status == 1


@pytest.mark.parametrize(("args", "error"), [
    (["nowhere/"], "nowhere: no such file or folder"),
    (["--scenario", "nope", "scenarios"], "--scenario 'nope': no such scenario (loaded: good)"),
    (["broken.yaml"], "broken.yaml:3: rules[0].reply.status: 418 is not declared for GET /plants (declared: 200, 400); "
                      "add `off_contract: true` to this rule to serve it anyway"),
], ids=["no such path", "no such scenario", "a file that does not load"])
def test_what_cannot_be_verified_fails_the_run_saying_why(tmp_path, monkeypatch, capsys, args, error):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    write(tmp_path / "scenarios", "good.yaml", "rules: []\n")
    write(tmp_path, "broken.yaml", "rules:\n  - match: {method: GET, path: /plants}\n    reply: {status: 418}\n")
    status = main(["verify", "--against", free_port_url(), "--spec", "plant-store-full", *args])
    out, err = capsys.readouterr()
    assert (status, err.splitlines()[0]) == (1, error)
    assert out.splitlines()[-1].endswith("; 1 load error (on stderr)")


def test_no_rule_at_all_fails_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    write(tmp_path / "scenarios", "empty.yaml", "rules: []\n")
    assert main(["verify", "--against", free_port_url()]) == 1
    assert capsys.readouterr().err == "plantstub: no scenario rules to verify in scenarios\n"


@pytest.mark.parametrize(("stub", "service", "found"), [
    ({"name": "Fern"}, {"name": "Ivy", "tag": "x"}, []),
    ({"name": "Fern", "id": 1}, {"name": "Fern", "id": 1.5}, []),
    ({"name": "Fern"}, {"tag": "x"}, ["body.name: stub a string, service absent"]),
    ({"id": 1}, {"id": "1"}, ["body.id: stub a number, service '1' (a string)"]),
    ({"ok": True}, {"ok": 1}, ["body.ok: stub a boolean, service 1 (a number)"]),
    ([{"name": "a"}], [], []),
    ([{"name": "a"}], [{"name": "b"}, {"name": None}], ["body[1].name: stub a string, service None (null)"]),
    ([{"a": 1}, {"b": "x"}], [{"b": "y"}, {"a": 2}], []),
    ({"pot": {"size": 1}}, {"pot": [1]}, ["body.pot: stub an object, service [1] (an array)"]),
], ids=["more in the answer", "numbers", "absent", "another type", "boolean is not number", "empty list",
        "an item of another shape", "items of either shape", "object against array"])
def test_shape_is_the_replys_properties_and_json_types_found_in_the_answer(stub, service, found):
    assert shape_differences(stub, service, "body") == found


def test_body_differences_list_each_value_and_property():
    assert body_differences({"a": 1, "b": [1, 2], "c": True}, {"a": 1.0, "b": [1], "d": "x", "c": 1}, "body") == [
        "body.b: stub 2 items, service 1 item", "body.c: stub True, service 1", "body.d: stub absent, service 'x'"]
    assert body_differences({"a": 1}, MISSING, "body") == ["body: stub {'a': 1}, service absent"]


def test_secrets_hide_header_values_their_credentials_and_secret_fields():
    secrets = Secrets([("Authorization", "Bearer tok-123456"), ("X-Api-Key", "k9k9k9"), ("X-Short", "ab")])
    assert secrets.text("got Bearer tok-123456, then tok-123456 and k9k9k9; ab stays") == \
        "got REDACTED, then REDACTED and REDACTED; ab stays"
    assert secrets.value({"message": "tok-123456", "access_token": "other", "tok-123456": 1}) == \
        {"message": "REDACTED", "access_token": "REDACTED", "REDACTED": 1}
    assert secrets.headers([("X-Short", "ab"), ("Cookie", "c=1"), ("Accept", "k9k9k9/json")]) == \
        {"X-Short": "REDACTED", "Cookie": "REDACTED", "Accept": "REDACTED/json"}


def test_junit_holds_any_text_a_service_sends_as_valid_xml(tmp_path: Path):
    verdict = Verdict(200, {"name": "x"}, 200, "odd", ("shape",), ("body: stub an object, service 'a\x00\x1b<&>\ud800'",),
                      (), 0.01)
    outcome = Outcome("weird <name>", "s.yaml", 3, "rules[0]", "GET /plants", DIFFER, verdict=verdict)
    secrets = Secrets([("Authorization", "Bearer tok-123456")])
    (tmp_path / "r.xml").write_bytes(junit([outcome], secrets, "suite & co", 0.5))
    case = ET.parse(tmp_path / "r.xml").getroot().find("testsuite/testcase")
    assert case is not None and case.get("name") == "s.yaml:3 GET /plants"
    failure = case.find("failure")
    assert failure is not None and failure.text == "body: stub an object, service 'a\ufffd\ufffd<&>\ufffd'"
    assert lines([outcome], secrets)[0] == "s.yaml:3 GET /plants: stub 200, service 200: differs (shape)"


def test_a_built_in_scenario_needs_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    url = free_port_url()
    status = main(["verify", "--against", url, "--scenario", "dropped-connection"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    assert out.splitlines()[0].endswith("dropped-connection.yaml:6 POST /plants: not verifiable: `fault: "
                                        "connection_reset`: the stub failing on purpose is no claim about the service")


def test_a_line_holds_no_control_character_a_service_sent():
    verdict = Verdict(200, {"a": 1}, 200, {"a": 1, "x\n\x1b[31m": 2}, ("body",),
                      tuple(body_differences({"a": 1}, {"a": 1, "x\n\x1b[31m": 2}, "body")), (), 0.01)
    outcome = Outcome("s", "s.yaml", 3, "rules[0]", "GET /plants", DIFFER, verdict=verdict)
    assert lines([outcome], Secrets([])) == ["s.yaml:3 GET /plants: stub 200, service 200: differs (body)",
                                             "    body.x\\x0a\\x1b[31m: stub absent, service 2"]
