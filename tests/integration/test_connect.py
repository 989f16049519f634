"""Stub.connect(url): a `plantstub serve` process driven over its admin API with the in-process Stub's methods
and the same assertion texts; stub.session() in process and remote."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from plantstub import CallAssertionError, PlantstubError, ScenarioError, Stub
from plantstub.errors import UnknownScenario
from tests.helpers import JSON_AUTH, post_status

TRAFFIC = [b'{"id": 1, "name": "Fern"}', b'{"id": "x", "name": "Cactos"}', b'{"id": 3, "name": "Ivy", "tag": "a"}']


def send_traffic(url: str) -> None:
    for body in TRAFFIC:
        post_status(url, body)
    post_status(url, b'{"id": 4, "name": "Fern"}', path="/plant")


def failure(run) -> str:
    with pytest.raises(CallAssertionError) as caught:
        run()
    return str(caught.value)


def sessions_of(url: str) -> list[str]:
    with urllib.request.urlopen(url + "/__plantstub/sessions", timeout=5) as response:
        return [s["id"] for s in json.load(response)["sessions"]]


@pytest.fixture
def sidecar(serve, tmp_path):
    return serve("--port", "0", "--stateful", "--spec", "plant-store-full", cwd=tmp_path)


@pytest.fixture
def local():
    with Stub(stateful=True, spec="plant-store-full") as stub:
        yield stub


ASSERTIONS = [
    ("called-body", lambda s: s.assert_called("POST", "/plants", body={"name": "Cactus"})),
    ("called-times", lambda s: s.assert_called("POST", "/plants", times=5)),
    ("called-headers", lambda s: s.assert_called("POST", "/plants", headers={"Authorization": "Bearer z"},
                                                 query={"dry_run": "1"}, status=201)),
    ("not-called", lambda s: s.assert_not_called("POST", "/plants", body={"name": "Fern"})),
    ("all-valid", lambda s: s.assert_all_valid()),
]


def test_connect_fails_with_the_same_texts_as_in_process(sidecar, local):
    remote = Stub.connect(sidecar.url)
    send_traffic(sidecar.url)
    send_traffic(local.url)
    for name, check in ASSERTIONS:
        text = failure(lambda check=check: check(remote))
        assert text == failure(lambda check=check: check(local)), name
        assert text.startswith("plantstub: "), name
    def shown(call):  # the same call but for its time and the Host it was sent to
        data = call.to_dict()
        data["headers"].pop("Host")
        return data | {"time": None}

    assert [shown(c) for c in remote.calls] == [shown(c) for c in local.calls]
    assert remote.assert_called("POST", "/plants", body={"name": "Ivy"})[0].body["tag"] == "a"


def test_connect_scenarios_reset_coverage_state(sidecar, local):
    remote = Stub.connect(sidecar.url)
    for stub in (remote, local):
        stub.use("flaky")
        assert post_status(stub.url, TRAFFIC[0]) == 400
        assert post_status(stub.url, TRAFFIC[0]) == 200
        stub.reset()
        assert stub.calls == []
        assert post_status(stub.url, TRAFFIC[0]) == 400  # the counters started again
        stub.use(None)
    assert remote.coverage() == local.coverage()
    for stub in (remote, local):
        stub.set_state({"/plants": [{"id": 7, "name": "Moss"}]})
        assert stub.state == {"/plants": [{"id": 7, "name": "Moss"}]}
    texts = []
    for stub in (remote, local):
        with pytest.raises(ScenarioError) as caught:
            stub.set_state({"/plants": [{"id": "x"}], "/nope": []})
        texts.append(str(caught.value))
    assert texts[0] == texts[1] and texts[0].startswith("stub.set_state(): ")
    unknown = []
    for stub in (remote, local):
        with pytest.raises(UnknownScenario) as caught:
            stub.use("nope")
        unknown.append(str(caught.value))
    assert unknown[0] == unknown[1] and unknown[0].startswith("unknown scenario 'nope' (known: ")


def test_connect_state_of_a_stub_without_a_store(serve, tmp_path):
    sidecar = serve("--port", "0", cwd=tmp_path)
    with Stub() as local:
        texts = []
        for stub in (Stub.connect(sidecar.url), local):
            with pytest.raises(PlantstubError) as caught:
                stub.state  # noqa: B018 - the property raises
            texts.append(str(caught.value))
    assert texts[0] == texts[1] and "--stateful" in texts[0]


def test_remote_sessions_are_isolated_and_end_with_their_block(sidecar):
    remote = Stub.connect(sidecar.url)
    with remote.session() as one, remote.session() as two:
        assert one.url.startswith(sidecar.url + "/__session/") and one.url != two.url
        one.use("flaky")
        two.use("flaky")
        assert post_status(one.url, TRAFFIC[0]) == 400
        assert post_status(two.url, TRAFFIC[0]) == 400  # the case: each sees the 400
        assert [c.path for c in one.calls] == ["/plants"]
        assert one.calls[0].response["status"] == 400
        assert remote.calls == []
        one.set_state({"/plants": [{"id": 1, "name": "Fern"}]})
        assert two.state == {"/plants": []}
        assert sorted(sessions_of(sidecar.url)) == sorted([one.session_id, two.session_id])
    assert sessions_of(sidecar.url) == []


def test_in_process_session_is_isolated_with_its_own_url(local):
    with local.session() as view:
        assert local.url.endswith("/") and view.url.startswith(local.url + "__session/")  # one shape: a base URL
        view.use("flaky")
        assert post_status(view.url, TRAFFIC[0]) == 400
        assert post_status(local.url, TRAFFIC[0]) == 200
        assert [c.status for c in view.calls] == [400]
        assert [c.status for c in local.calls] == [200]
        view.assert_called("POST", "/plants", status=400, times=1)
        sid = view.session_id
        assert view.url.endswith(f"/__session/{sid}/") and view.headers == {"X-Plantstub-Session": sid}
        assert sessions_of(local.url) == [sid]
    assert sessions_of(local.url) == []
    assert post_status(local.url, TRAFFIC[2]) == 200  # the stub itself still runs


@pytest.mark.parametrize(("token", "said"), [(None, "no admin token was given"),
                                             ("wrong", "the admin token given is not its token")],
                         ids=["missing", "wrong"])
def test_connect_checks_the_admin_token_at_once(serve, tmp_path, token, said):
    sidecar = serve("--port", "0", env={"PLANTSTUB_ADMIN_TOKEN": "s3cret"}, cwd=tmp_path)
    with pytest.raises(PlantstubError) as caught:
        Stub.connect(sidecar.url, admin_token=token)  # at connect, not at the first admin call
    assert str(caught.value) == (
        f"Stub.connect({sidecar.url!r}): the stub runs with --admin-token and {said}; pass the token of its "
        "--admin-token (the admin_token argument; PLANTSTUB_ADMIN_TOKEN for the pytest fixture)")
    with pytest.raises(PlantstubError) as caught:  # a session's URL: the same check, the same words
        Stub.connect(sidecar.url + "/__session/ci-1", admin_token=token)
    assert said in str(caught.value)


def test_connect_with_an_admin_token(serve, tmp_path):
    sidecar = serve("--port", "0", env={"PLANTSTUB_ADMIN_TOKEN": "s3cret"}, cwd=tmp_path)
    remote = Stub.connect(sidecar.url, admin_token="s3cret")
    with remote.session() as view:
        post_status(view.url, TRAFFIC[0])
        assert len(view.calls) == 1


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1:1", "Stub.connect('ftp://127.0.0.1:1'): not the base URL of a stub (expected "
                              "http://HOST:PORT, optionally with /__session/ID)"),
        ("http://127.0.0.1:1", "cannot reach the stub at http://127.0.0.1:1: "),
    ],
    ids=["scheme", "refused"],
)
def test_connect_to_nothing_says_so(url, message):
    with pytest.raises(PlantstubError) as caught:
        Stub.connect(url)
    assert str(caught.value).startswith(message)


def test_connect_to_something_else_says_so(serve, tmp_path):
    sidecar = serve("--port", "0", cwd=tmp_path)
    with pytest.raises(PlantstubError) as caught:
        Stub.connect(sidecar.url + "/__session/a.b")
    assert "not as a plantstub does" in str(caught.value) or "answered 400" in str(caught.value)


def test_connect_headers_ignore_case(sidecar):
    remote = Stub.connect(sidecar.url)
    urllib.request.urlopen(urllib.request.Request(sidecar.url + "/plants", data=TRAFFIC[0], headers=JSON_AUTH), timeout=5)
    [call] = remote.calls
    assert call.headers["authorization"] == "Bearer t"


def test_connect_rules_from_code_and_waiting_as_in_process(sidecar, local):
    remote = Stub.connect(sidecar.url)
    errors, waits, unknown = [], [], []
    for stub in (remote, local):
        rule = stub.when("POST", "/plants", body={"name": "Cactus"}, times=1).reply(
            400, {"error": 503, "message": "closed"})
        assert post_status(stub.url, b'{"id": 9, "name": "Cactus"}') == 400
        assert post_status(stub.url, b'{"id": 10, "name": "Cactus"}') == 200  # times=1: then the default
        assert rule.uses == 1 and [r["id"] for r in stub.rules] == [rule.id]
        # Relative to the folder pytest runs in when the file is under it (not so in the lanes): the file and line.
        assert re.search(r"(^|/)tests/integration/test_connect\.py:\d+$", stub.rules[0]["source"])
        assert stub.wait_for_calls(2, timeout=2, path="/plants")[0].rule == rule.id
        with pytest.raises(CallAssertionError) as caught:
            stub.wait_for_calls(1, timeout=0.2, body={"name": "Rose"})
        waits.append(str(caught.value))
        with pytest.raises(ScenarioError) as declared:
            stub.when(path="/plants").reply(418)  # one line for both: the same file:line in the text
        errors.append(str(declared.value))
        with pytest.raises(TypeError) as typo:
            stub.wait_for_calls(1, pathh="/plants")
        unknown.append(str(typo.value))
        assert (rule.remove(), rule.remove()) == (True, False)
        stub.when("POST", "/plants").reply(200, {"name": "x"})
        stub.reset()
        assert stub.rules == []
    assert waits[0] == waits[1] and waits[0].startswith("plantstub: waited 0.2 s for 1 call (any) with body {'name': 'Rose'}; got 0.")
    assert errors[0] == errors[1]
    # The test's own file and line (relative to the folder pytest runs in when it is under it; not so in the lanes).
    assert re.match(r"(/.*/)?tests/integration/test_connect\.py:\d+: ", errors[0]) and "418 is not declared" in errors[0]
    assert unknown[0] == unknown[1]


def call_json(url: str, path: str) -> tuple[int, str]:
    """(status, message) of a GET that fails."""
    try:
        urllib.request.urlopen(url + path, timeout=5)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())["message"]
    return 200, ""


def test_declare_returns_the_handle_when_gives_and_rules_lists_handles(sidecar, local):
    """issue 24: declare() gave the id as a string and `rules` dicts; both give the handle when(...).reply() gives."""
    for stub in (Stub.connect(sidecar.url), local):
        declared = stub.declare({"match": {"path": "/plants", "body": {"name": "Cactus"}}, "times": 1,
                                 "reply": {"status": 400, "body": {"error": 503, "message": "closed"}}})
        built = stub.when("POST", "/plants", body={"name": "Ivy"}).reply(200, {"name": "Ivy"})
        assert (declared.id, built.id, declared.uses) == ("r1", "r2", 0)
        assert post_status(stub.url, b'{"id": 9, "name": "Cactus"}') == 400
        assert declared.uses == 1 and re.search(r"test_connect\.py:\d+$", declared.source)
        listed = stub.rules
        assert [(type(r).__name__, r.id, r.uses) for r in listed] == [("RuleHandle", "r1", 1), ("RuleHandle", "r2", 0)]
        assert listed[1].rule == {"match": {"method": "POST", "path": "/plants", "body": {"name": "Ivy"}},
                                  "reply": {"status": 200, "body": {"name": "Ivy"}}}
        # What code written against the id string and the dicts did keeps working.
        assert (str(declared), declared == "r1", stub.calls[0].rule == declared, listed[0]["id"], listed[0]["uses"]) == (
            "r1", True, True, "r1", 1)
        assert listed[0] == declared and {declared: 1}["r1"] == 1
        assert listed[1].remove() and not built.remove() and stub.remove_rule(declared) and stub.rules == []
        assert (declared.uses, built.uses) == (0, 0)  # gone (remote: GET rules/ID answers 404)
        assert call_json(stub.url, "/__plantstub/rules/r1") == (404, "path: no rule 'r1' (rules: none)")
        stub.reset()


def test_remote_session_rules_are_its_own(sidecar):
    remote = Stub.connect(sidecar.url)
    with remote.session() as one, remote.session() as two:
        one.when("POST", "/plants").reply(400, {"error": 1, "message": "mine"})
        assert post_status(one.url, TRAFFIC[0]) == 400
        assert post_status(two.url, TRAFFIC[0]) == 200
        assert two.rules == [] and remote.rules == []


def test_connect_webhooks_as_in_process(sidecar, local):
    from tests.helpers import Receiver

    remote = Stub.connect(sidecar.url)
    texts = []
    with Receiver() as receiver, remote.session() as mine:
        for stub in (mine, local):
            stub.subscribe(receiver.url + "/hook")
            assert post_status(stub.url, b'{"id": 21, "name": "Fern"}') == 200
            [delivery] = stub.wait_for_deliveries(1, timeout=5)
            assert (delivery.url, delivery.status, delivery.body) == (receiver.url + "/hook", 200,
                                                                      {"id": 21, "name": "Fern"})
            stub.assert_delivered("/plant/webhook", body={"name": "Fern"}, times=1)
            with pytest.raises(CallAssertionError) as caught:
                stub.assert_delivered(body={"name": "Rose"})
            texts.append(str(caught.value).replace(receiver.url, "URL"))
        assert remote.deliveries == []  # the session's subscription is its own
    assert texts[0] == texts[1]


def test_reset_subscriptions_ends_a_test_subscription_in_process_and_over_http(serve, tmp_path):
    """The plugin's teardown: only the start-up subscriptions (--webhook) stay, through either transport."""
    hook = "http://127.0.0.1:9/start"
    sidecar = serve("--port", "0", "--spec", "plant-store-full", "--webhook", hook, cwd=tmp_path)
    with Stub(spec="plant-store-full", webhook=[hook]) as local:
        for stub in (Stub.connect(sidecar.url), local):
            stub.subscribe("http://127.0.0.1:9/test", "/plant/webhook")
            assert stub.reset_subscriptions() == {"*": hook}
            assert stub.pending_deliveries() == 0
