"""Issue 37, item 3: one redaction rule (plantstub/redaction.py) for everything written from traffic. Marked secrets
sent every way a client and a service send them (query, headers, body fields of many names, `Bearer `/`Basic ` values,
cookies, a message quoting the URL or a redacted value) reach none of: the file `--record` writes, a HAR export,
`import-har`'s file, the pytest HTML report."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plantstub import Stub
from plantstub.cli import main
from tests.helpers import JSON_AUTH, Upstream, raw_call

MARK = re.compile(r"SECRET-\d\d")
NAMES = ["password", "passwd", "pwd", "pin", "passphrase", "auth", "jwt", "otp", "session", "sessionId", "sid",
         "signature", "cvv", "card_number", "apiKey", "client_secret", "refresh_token", "x-auth-token", "PIN_CODE",
         "accessToken", "sessionid", "cardNumber"]


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


class Marks:
    """Secret values, each unique (`SECRET-NN`), handed out as the probe needs them."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self) -> str:
        self.sent.append(f"SECRET-{len(self.sent) + 1:02d}")
        return self.sent[-1]

    def fields(self) -> dict[str, object]:
        return {name: self() for name in NAMES}


def raw_answer(body: dict, headers: str = "") -> str:
    payload = json.dumps(body).encode()
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{headers}Content-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n").encode()
    return base64.b64encode(head + payload).decode()


def send_secrets(url: str) -> list[str]:
    """Three exchanges through a --proxy stub carrying marked secrets; the marks sent (the non-secret fields are
    marked `keep-...`: they must stay)."""
    mark = Marks()
    # 1. kept as a rule: secrets in the query, the headers, the request body and the answer (body and Set-Cookie)
    body = {"id": 1, "name": "Fern", "shipping": "keep-shipping", "note": f"Bearer {mark()}",
            "basic": f"basic {mark()}", "nested": {"token": mark(), "list": [{"secret": mark()}]}, **mark.fields()}
    answer = {"name": "Fern", "tag": "keep-tag", "author": "keep-author", "pinned": "keep-pinned", **mark.fields(),
              "deep": {"jwt": mark()}, "bearer": f"Bearer {mark()}"}
    status, _, _ = raw_call(url, "POST", f"/plants?api_key={mark()}&sessionId={mark()}&page=keep-page",
                            json.dumps(body).encode(),
                            {**JSON_AUTH, "Authorization": f"Bearer {mark()}", "Cookie": f"sid={mark()}",
                             "X-Api-Key": mark(), "Proxy-Authorization": f"Basic {mark()}",
                             "X-Raw-Answer": raw_answer(answer, f"Set-Cookie: sid={mark()}\r\n")})
    assert status == 200
    # 2. left out: the answer breaks the contract, and the problem quotes the body with its token
    broken = base64.b64encode(json.dumps({"token": mark(), "tag": 5}).encode()).decode()
    status, _, _ = raw_call(url, "POST", f"/plants?access_token={mark()}", json.dumps({"id": 2, "name": "Ivy"}).encode(),
                            {**JSON_AUTH, "X-Answer": broken})
    assert status == 200
    # 3. left out: the service's answer is not HTTP, and the 502's text quotes the URL with its query
    status, _, _ = raw_call(url, "POST", f"/plants?api_key={mark()}", json.dumps({"id": 3, "name": "Oak"}).encode(),
                            {**JSON_AUTH, "X-Raw-Answer": base64.b64encode(b"NOT HTTP AT ALL\r\n\r\n").decode()})
    assert status == 502
    return mark.sent


def found(text: str, sent: list[str]) -> list[str]:
    return sorted(set(MARK.findall(text)) & set(sent))


def test_no_secret_sent_reaches_the_recorded_file(upstream, tmp_path):
    with Stub(proxy=upstream.url, record=tmp_path) as stub:
        sent = send_secrets(stub.url)
        assert stub.calls[0].headers["Authorization"].startswith("Bearer SECRET-")  # the journal keeps them
    text = (tmp_path / "recorded-001.yaml").read_text()
    assert found(text, sent) == [], f"{len(found(text, sent))} of {len(sent)} secrets reached the file"
    assert len(sent) >= 47
    for kept in ("keep-shipping", "keep-tag", "keep-author", "keep-pinned", "page: keep-page"):
        assert kept in text
    assert "?" not in "".join(line for line in text.splitlines() if line.startswith("#"))  # no query in messages
    assert main(["check", str(tmp_path)]) == 0


def test_no_secret_reaches_a_har_export_nor_the_file_import_har_writes(upstream, tmp_path):
    with Stub(proxy=upstream.url) as stub:
        sent = send_secrets(stub.url)
        status, har, _ = raw_call(stub.url, "GET", "/__plantstub/calls?format=har")
    assert status == 200
    assert found(har.decode(), sent) == []
    entry = json.loads(har)["log"]["entries"][0]
    assert {"name": "Authorization", "value": "REDACTED"} in entry["request"]["headers"]
    assert {"name": "page", "value": "keep-page"} in entry["request"]["queryString"]
    (tmp_path / "calls.har").write_bytes(har)
    assert main(["import-har", str(tmp_path / "calls.har"), "--out", str(tmp_path / "x.yaml")]) == 0
    assert found((tmp_path / "x.yaml").read_text(), sent) == []


def test_a_har_from_elsewhere_has_its_secrets_redacted_on_import(tmp_path):
    mark = Marks()
    body = {"id": 7, "name": "Fern", **mark.fields()}
    har = {"log": {"entries": [{
        "request": {"method": "POST", "url": f"https://api.example.com/plants?api_key={mark()}",
                    "headers": [{"name": "Authorization", "value": f"Bearer {mark()}"}],
                    "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
        "response": {"status": 200, "headers": [{"name": "Set-Cookie", "value": f"sid={mark()}"}],
                     "content": {"mimeType": "application/json",
                                 "text": json.dumps({"name": "Fern", **mark.fields()})}}}]}}
    (tmp_path / "in.har").write_text(json.dumps(har))
    assert main(["import-har", str(tmp_path / "in.har"), "--out", str(tmp_path / "in.yaml")]) == 0
    assert found((tmp_path / "in.yaml").read_text(), mark.sent) == []


def test_the_pytest_report_shows_no_secret(pytester, upstream):
    pytester.makepyfile(test_secrets=f"""
        import json, sys, urllib.error, urllib.request
        from pathlib import Path

        import pytest

        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.integration.test_record_secrets import send_secrets

        @pytest.mark.plantstub(proxy={upstream.url!r}, strict=False)
        def test_sends(plantstub):
            Path("sent.json").write_text(json.dumps(send_secrets(plantstub.url.rstrip("/"))))

        @pytest.mark.plantstub(strict=False)
        def test_fails(plantstub):
            request = urllib.request.Request(
                plantstub.url.rstrip("/") + "/plants?token=SECRET-97", data=b'{{"id": "x", "password": "SECRET-99"}}',
                headers={{"Authorization": "Bearer SECRET-98", "Content-Type": "application/json"}})
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(request)
            assert False, "failing on purpose"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--plantstub-report=report.html")
    result.assert_outcomes(passed=1, failed=1)
    text = (pytester.path / "report.html").read_text()
    sent = [*json.loads((pytester.path / "sent.json").read_text()), "SECRET-97", "SECRET-98", "SECRET-99"]
    assert found(text, sent) == []
    assert "REDACTED" in text and "keep-shipping" in text and "keep-tag" in text


def test_record_secrets_keep_exports_them_as_sent(upstream):
    with Stub(proxy=upstream.url, record_secrets="keep") as stub:
        raw_call(stub.url, "POST", "/plants?api_key=k1", json.dumps({"id": 1, "name": "Fern", "password": "p1"}).encode(),
                 JSON_AUTH)
        entry = json.loads(raw_call(stub.url, "GET", "/__plantstub/calls?format=har")[1])["log"]["entries"][0]
    assert {"name": "Authorization", "value": "Bearer t"} in entry["request"]["headers"]
    assert json.loads(entry["request"]["postData"]["text"])["password"] == "p1"
    assert entry["request"]["url"].endswith("/plants?api_key=k1")
