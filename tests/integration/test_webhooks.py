"""Webhooks and callbacks sent for real: subscriptions, delivery, retries, the delivery log, rules and callbacks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from plantstub import CallAssertionError, ConfigError, ScenarioError, Stub, SubscriptionError
from tests.helpers import HANG, SPECS, Receiver, call, free_port_url, write

NEW_PLANT = {"id": 7, "name": "Fern", "tag": "green"}
CALLBACKS = SPECS / "subscriptions-callbacks.openapi.yaml"


@pytest.fixture
def receiver() -> Receiver:
    with Receiver() as r:
        yield r


def test_webhook_created_plant_is_delivered_to_subscriber(receiver: Receiver) -> None:
    with Stub(spec="plant-store-full", webhook=[receiver.url + "/hook"]) as stub:
        status, answer = call(stub.url, "POST", "/plants", NEW_PLANT)
        assert (status, answer) == (200, {"name": "Fern", "tag": "green"})
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.seq, delivery.name, delivery.url) == (1, "/plant/webhook", receiver.url + "/hook")
        assert (delivery.body, delivery.attempts, delivery.status, delivery.error, delivery.valid) == (
            NEW_PLANT, 1, 200, None, True)
        assert delivery.time.endswith("Z")
        [got] = receiver.received
        assert got["path"] == "/hook" and got["body"] == NEW_PLANT
        assert got["headers"]["Content-Type"] == "application/json"
        assert got["headers"]["X-Plantstub-Webhook"] == "/plant/webhook"
        stub.assert_delivered("/plant/webhook", body={"name": "Fern"}, times=1)


def test_webhook_not_sent_for_refused_request_nor_without_subscriber(receiver: Receiver) -> None:
    with Stub(spec="plant-store-full") as stub:
        assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200  # nobody subscribed
        stub.subscribe(receiver.url)
        assert call(stub.url, "POST", "/plants", {"name": "no id"})[0] == 400  # invalid: nothing created
        assert call(stub.url, "POST", "/plants", NEW_PLANT, {"Prefer": "code=400"})[0] == 400
        assert call(stub.url, "GET", "/plants")[0] == 200  # not a POST
        assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200
        stub.wait_for_deliveries(1, timeout=HANG)
        time.sleep(0.3)  # room for a wrongful second delivery to show up
        assert [d.body for d in stub.deliveries] == [NEW_PLANT]
        assert len(receiver.received) == 1


def test_webhook_retried_after_5xx_until_receiver_answers() -> None:
    with Receiver(statuses=(500, 503, 200)) as flaky, Stub(spec="plant-store-full", webhook=[flaky.url]) as stub:
        call(stub.url, "POST", "/plants", NEW_PLANT)
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.attempts, delivery.status, delivery.error, delivery.valid) == (3, 200, None, True)
        assert len(flaky.received) == 3


def test_webhook_gives_up_after_three_5xx() -> None:
    with Receiver(statuses=(500,)) as broken, Stub(spec="plant-store-full", webhook=[broken.url]) as stub:
        call(stub.url, "POST", "/plants", NEW_PLANT)
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.attempts, delivery.status, delivery.valid) == (3, 500, False)
        assert delivery.error == "the receiver answered 500 on each of 3 attempts"


def test_webhook_connection_refused_is_retried_and_recorded() -> None:
    nobody = free_port_url()
    with Stub(spec="plant-store-full", webhook=[nobody]) as stub:
        assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200
        assert stub.deliveries == []  # the answer did not wait for the retries (0.2 and 0.4 s apart)
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.url, delivery.attempts, delivery.status, delivery.valid) == (nobody, 3, None, False)
        assert delivery.error == "the receiver could not be reached (ClientConnectorError)"


def test_webhook_receiver_answering_undeclared_status_is_not_valid() -> None:
    with Receiver(statuses=(418,)) as teapot, Stub(spec="plant-store-full", webhook=[teapot.url]) as stub:
        call(stub.url, "POST", "/plants", NEW_PLANT)
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.attempts, delivery.status, delivery.valid) == (1, 418, False)
        assert delivery.error == "the receiver answered 418, which /plant/webhook does not declare (declared: 200)"


@pytest.mark.slow  # by hand, as no process is started: its receiver takes 3 s to answer
def test_webhook_answer_never_waits_for_slow_receiver() -> None:
    with Receiver(delay=3.0) as slow, Stub(spec="plant-store-full", webhook=[slow.url]) as stub:
        for _ in range(3):
            assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200
        assert stub.deliveries == []  # three answers before the first delivery is even answered (3 s)
        assert len(stub.wait_for_deliveries(3, timeout=HANG)) == 3


def test_webhook_subscriptions_through_admin_api(receiver: Receiver) -> None:
    with Stub(spec="plant-store-full") as stub:
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {})
        wanted = {"/plant/webhook": receiver.url + "/plants-hook"}
        assert call(stub.url, "PUT", "/__plantstub/webhooks", wanted) == (200, wanted)
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, wanted)
        call(stub.url, "POST", "/plants", NEW_PLANT)
        stub.wait_for_deliveries(1, timeout=HANG)
        status, listed = call(stub.url, "GET", "/__plantstub/deliveries")
        assert status == 200 and len(listed) == 1
        assert set(listed[0]) == {"seq", "time", "name", "url", "body", "attempts", "status", "error", "valid"}
        assert listed[0]["url"] == receiver.url + "/plants-hook" and listed[0]["valid"] is True
        assert call(stub.url, "DELETE", "/__plantstub/deliveries") == (200, {"deleted": 1})
        assert call(stub.url, "GET", "/__plantstub/deliveries") == (200, [])
        # reset: deliveries gone, start-up subscriptions (none) back
        call(stub.url, "POST", "/plants", NEW_PLANT)
        stub.wait_for_deliveries(1, timeout=HANG)
        call(stub.url, "POST", "/__plantstub/reset")
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {})
        assert call(stub.url, "GET", "/__plantstub/deliveries") == (200, [])


@pytest.mark.parametrize(("body", "message"), [
    ({"/plant/webhok": "http://127.0.0.1:9/x"},
     "body: '/plant/webhok' is not a webhook of the spec (did you mean '/plant/webhook'?)"),
    ({"*": "file:///etc/passwd"}, "body.*: 'file:///etc/passwd' is not an http:// or https:// URL with a host"),
    ({"*": 5}, "body.*: '5' is not an http:// or https:// URL with a host"),
    (["http://127.0.0.1:9"], 'body: expected a mapping; send {"WEBHOOK NAME or *": "http://URL", ...} ({} for none)'),
], ids=["unknown-name", "file-url", "not-a-string", "a-list"])
def test_webhook_admin_refuses_bad_subscription_and_keeps_the_old(body: object, message: str) -> None:
    with Stub(spec="plant-store-full", webhook=["http://127.0.0.1:9/kept"]) as stub:
        assert call(stub.url, "PUT", "/__plantstub/webhooks", body) == (400, {"error": 400, "message": message})
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {"*": "http://127.0.0.1:9/kept"})


@pytest.mark.parametrize("remote", [False, True], ids=["in-process", "connect"])
@pytest.mark.parametrize(("url", "name", "message"), [
    ("http://127.0.0.1:9", "/plant/webhok",
     "name: '/plant/webhok' is not a webhook of the spec (did you mean '/plant/webhook'?)"),
    ("http://127.0.0.1:9", "nope", "name: 'nope' is not a webhook of the spec (declared: /plant/webhook, or * for every one)"),
    ("file:///etc/passwd", "/plant/webhook", "url: 'file:///etc/passwd' is not an http:// or https:// URL with a host"),
    ("ftp://x", None, "url: 'ftp://x' is not an http:// or https:// URL with a host"),
], ids=["misspelt-name", "unknown-name", "file-url", "every-webhook-ftp-url"])
def test_webhook_subscribe_names_the_argument_that_is_wrong(url: str, name: str | None, message: str,
                                                             remote: bool) -> None:
    with Stub(spec="plant-store-full") as stub:
        driven = Stub.connect(stub.url) if remote else stub
        with pytest.raises(SubscriptionError) as refused:
            driven.subscribe(url, name=name)
        assert str(refused.value) == message
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {})  # nothing subscribed


def test_webhook_subscribe_in_python_and_failed_assertion_text(receiver: Receiver) -> None:
    with Stub(spec="plant-store-full") as stub:
        with pytest.raises(ConfigError, match=r"^name: 'nope' is not a webhook of the spec"):
            stub.subscribe(receiver.url, name="nope")
        stub.subscribe(receiver.url, name="/plant/webhook")
        call(stub.url, "POST", "/plants", NEW_PLANT)
        stub.wait_for_deliveries(1, timeout=HANG)
        with pytest.raises(CallAssertionError) as failed:
            stub.assert_delivered("/plant/webhook", body={"name": "Cactus"})
        assert str(failed.value) == (
            "plantstub: expected at least 1 delivery of /plant/webhook with body {'name': 'Cactus'}; got 0.\n"
            "1 delivery recorded:\n"
            f"  #1 /plant/webhook -> {receiver.url}  200  attempts 1  body {{'id': 7, 'name': 'Fern', 'tag': 'green'}}"
        )
        with pytest.raises(CallAssertionError, match=r"^plantstub: expected 2 deliveries within 0.2 s; got 1"):
            stub.wait_for_deliveries(2, timeout=0.2)


def test_webhook_rule_sends_its_own_body_after_its_delay(tmp_path: Path, receiver: Receiver) -> None:
    write(tmp_path, "announce.yaml", """\
rules:
  - match: {method: POST, path: /plants, body: {name: Fern}}
    reply: {status: 200, body: {name: Fern}}
    webhooks:
      - {name: /plant/webhook, body: {id: 99, name: Announced}, delay_ms: 300}
      - {name: /plant/webhook}
  - match: {method: POST, path: /plants, body: {name: Quiet}}
    reply: {status: 200, body: {name: Quiet}}
    webhooks: []
""")
    with Stub(spec="plant-store-full", scenarios=tmp_path, scenario="announce", webhook=[receiver.url]) as stub:
        call(stub.url, "POST", "/plants", {"id": 3, "name": "Quiet"})
        call(stub.url, "POST", "/plants", NEW_PLANT)
        first = stub.wait_for_deliveries(1, timeout=HANG)
        assert [d.body for d in first] == [NEW_PLANT]  # no body given: the created record, at once
        both = stub.wait_for_deliveries(2, timeout=HANG)
        assert [d.body for d in both] == [NEW_PLANT, {"id": 99, "name": "Announced"}]
        assert [r["body"]["name"] for r in receiver.received] == ["Fern", "Announced"]


def test_webhook_rule_body_breaking_the_schema_is_a_load_error(tmp_path: Path) -> None:
    write(tmp_path, "bad.yaml", """\
rules:
  - match: {method: POST, path: /plants}
    reply: {status: 200, body: {name: Fern}}
    webhooks:
      - name: /plant/webhook
        body: {name: 5}
      - name: /plant/webhok
""")
    with pytest.raises(ConfigError) as failed:
        Stub(spec="plant-store-full", scenarios=tmp_path).start()
    assert str(failed.value).splitlines()[1:] == [
        f"{tmp_path / 'bad.yaml'}:6: rules[0].webhooks[0].body: 'id' is a required property (webhook /plant/webhook request body)",
        f"{tmp_path / 'bad.yaml'}:6: rules[0].webhooks[0].body.name: 5 is not of type 'string' (webhook /plant/webhook request body)",
        f"{tmp_path / 'bad.yaml'}:7: rules[0].webhooks[1].name: '/plant/webhok' is not a webhook of the spec nor a "
        "callback of the operations this rule matches (did you mean '/plant/webhook'?)",
    ]
    assert isinstance(failed.value.__cause__, (type(None), ScenarioError))


def test_callback_url_comes_from_the_request(receiver: Receiver) -> None:
    with Stub(spec=CALLBACKS) as stub:
        status, _ = call(stub.url, "POST", "/subscriptions?topic=a%20b", {"callbackUrl": receiver.url + "/me"})
        assert status == 201
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.name, delivery.url, delivery.status, delivery.valid) == (
            "onEvent", receiver.url + "/me/events?topic=a%20b", 200, False)  # the callback declares 204 only
        assert delivery.body == {"kind": "created", "at": 0}
        [got] = receiver.received  # the callback whose URL the spec wrote is never sent
        assert got["path"] == "/me/events?topic=a%20b"


def test_callback_receiver_answering_declared_status_is_valid() -> None:
    with Receiver(statuses=(204,)) as receiver, Stub(spec=CALLBACKS) as stub:
        call(stub.url, "POST", "/subscriptions?topic=t", {"callbackUrl": receiver.url})
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.status, delivery.valid, delivery.error) == (204, True, None)


@pytest.mark.parametrize(("path", "body", "error"), [
    ("/subscriptions", {"callbackUrl": "http://127.0.0.1:9"}, "not sent: $request.query.topic is missing from the request"),
    ("/subscriptions?topic=t", {"callbackUrl": "file:///etc/passwd"},
     "not sent: 'file:///etc/passwd/events?topic=t' is not an http:// or https:// URL with a host"),
], ids=["missing-query", "file-url"])
def test_callback_that_cannot_be_sent_is_recorded_with_why(path: str, body: dict, error: str) -> None:
    with Stub(spec=CALLBACKS) as stub:
        assert call(stub.url, "POST", path, body)[0] == 201
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.attempts, delivery.status, delivery.valid, delivery.error) == (0, None, False, error)


def test_callback_rule_gives_the_body(tmp_path: Path, receiver: Receiver) -> None:
    write(tmp_path, "deleted.yaml", """\
rules:
  - match: {method: POST, path: /subscriptions}
    reply: {status: 201, body: {id: s-1}}
    webhooks:
      - {name: onEvent, body: {kind: deleted, at: 5}}
""")
    with Stub(spec=CALLBACKS, scenarios=tmp_path, scenario="deleted") as stub:
        call(stub.url, "POST", "/subscriptions?topic=t", {"callbackUrl": receiver.url})
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert delivery.body == {"kind": "deleted", "at": 5}


@pytest.mark.slow  # by hand, as no process is started: about 2 s of deliveries to a slow receiver
def test_webhook_queue_cap_counts_lost_deliveries_in_health() -> None:
    with Receiver(delay=1.0) as slow, Stub(spec="plant-store-full", webhook=[slow.url]) as stub:
        sender = stub._live().webhooks.sender
        sender.cap, sender.outbox.workers = 2, 4  # before the first delivery (the workers are the stub's)
        for i in range(10):
            call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": i})
        status, health = call(stub.url, "GET", "/__plantstub/health")
        # the workers (4 here) hold one each, 2 wait in the queue, 4 are lost
        assert status == 503 and health["status"] == "degraded"
        assert health["problems"] == [
            {"at": "webhooks", "message": "4 deliveries were not sent: more than 2 were waiting to be sent"}]
        assert health["webhooks"]["lost"] == 4
        assert len(stub.wait_for_deliveries(6, timeout=HANG)) == 6


def test_webhook_subscribed_back_to_the_stub_does_not_loop(tmp_path: Path) -> None:
    # Without credentials a delivery is refused (401); a scenario that lets every request in would loop for ever.
    write(tmp_path, "open.yaml", "validate_requests: false\nrules:\n  - match: {method: POST, path: /plants}\n"
                                 "    reply: {status: 200, body: {name: Fern}}\n")
    with Stub(spec="plant-store-full", scenarios=tmp_path, scenario="open") as stub:
        stub.subscribe(stub.url + "/plants")  # the webhook's body is a valid POST /plants
        call(stub.url, "POST", "/plants", NEW_PLANT)
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        time.sleep(0.3)  # room for a wrongful second round
        assert (delivery.status, len(stub.deliveries), len(stub.calls)) == (200, 1, 2)


def test_webhook_startup_subscription_must_name_a_webhook() -> None:
    with pytest.raises(ConfigError, match=r"^webhook: 'nope' is not a webhook of the spec \(declared: /plant/webhook, or \* for every one\)$"):
        Stub(spec="plant-store-full", webhook=["nope=http://127.0.0.1:9"]).start()
    with pytest.raises(ConfigError, match=r"^webhook: two URLs for every webhook \(http://a, http://b\); give one$"):
        Stub(spec="plant-store-full", webhook=["http://a", "http://b"])


def test_webhook_name_cannot_inject_headers(tmp_path: Path, receiver: Receiver) -> None:
    write(tmp_path, "spec.yaml", """\
openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /things:
    post:
      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/T'}}}}
      responses: {"201": {description: made}}
webhooks:
  "evil\\r\\nX-Injected: 1":
    post:
      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/T'}}}}
      responses: {"200": {description: ok}}
components:
  schemas:
    T: {type: object}
""")
    with Stub(spec=tmp_path / "spec.yaml", webhook=[receiver.url]) as stub:
        assert call(stub.url, "POST", "/things", {"a": 1})[0] == 201
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert (delivery.status, delivery.valid) == (200, True)
        [got] = receiver.received
        assert "X-Injected" not in got["headers"]
        assert got["headers"]["X-Plantstub-Webhook"] == "evil%0D%0AX-Injected:%201"


async def test_webhook_with_create_app_in_the_tests_own_loop(aiohttp_client, aiohttp_server) -> None:
    from aiohttp import web

    from plantstub import create_app

    received = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=200)

    receiver_app = web.Application()
    receiver_app.router.add_post("/hook", hook)
    receiver_server = await aiohttp_server(receiver_app)
    client = await aiohttp_client(create_app(spec="plant-store-full"))
    url = str(receiver_server.make_url("/hook"))
    answer = await client.put("/__plantstub/webhooks", json={"*": url})
    assert answer.status == 200
    answer = await client.post("/plants", json=NEW_PLANT, headers={"Authorization": "Bearer t"})
    assert answer.status == 200
    deadline = time.monotonic() + HANG
    listed: list = []
    while not listed and time.monotonic() < deadline:
        listed = await (await client.get("/__plantstub/deliveries")).json()
        await asyncio.sleep(0.01)
    assert [(d["url"], d["status"], d["valid"]) for d in listed] == [(url, 200, True)]
    assert received == [NEW_PLANT]


def test_webhook_rule_body_templates_are_filled_and_checked_once_rendered(tmp_path: Path, receiver: Receiver) -> None:
    write(tmp_path, "templated.yaml", """\
rules:
  - match: {method: POST, path: /plants}
    reply: {status: 200, body: {name: "{{ request.body.name }}"}}
    webhooks:
      - name: /plant/webhook
        body: {id: "{{ request.body.id }}", name: "New {{ request.body.name }}"}
      - name: /plant/webhook
        body: {name: "{{ request.body.name }}"}
""")
    with Stub(spec="plant-store-full", scenarios=tmp_path, scenario="templated", webhook=[receiver.url]) as stub:
        call(stub.url, "POST", "/plants", NEW_PLANT)
        sent, refused = sorted(stub.wait_for_deliveries(2, timeout=HANG), key=lambda d: d.attempts, reverse=True)
        assert (sent.body, sent.status, sent.valid) == ({"id": 7, "name": "New Fern"}, 200, True)
        assert (refused.body, refused.attempts, refused.status, refused.valid) == ({"name": "Fern"}, 0, None, False)
        assert refused.error == "not sent: the rule's body breaks the webhook's schema: body: 'id' is a required property"
        assert [r["body"] for r in receiver.received] == [{"id": 7, "name": "New Fern"}]


def test_webhook_subscription_refused_from_another_site() -> None:
    # A web page must not point the stub's webhooks at a URL of its choosing.
    with Stub(spec="plant-store-full") as stub:
        status, _ = call(stub.url, "PUT", "/__plantstub/webhooks", {"*": "http://127.0.0.1:9/page"},
                         {"Origin": "http://evil.test"})
        assert status == 403
        status, _ = call(stub.url, "PUT", "/__plantstub/webhooks", {"*": "http://127.0.0.1:9/page"},
                         {"Content-Type": "text/plain"})
        assert status == 415
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {})
