"""`plantstub serve --spec` on shapes from public OpenAPI documents (tests/data/specs/real-world.yaml)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from tests.helpers import SPECS, ServeProcess


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object) -> None:
        return None


def call(url: str, method: str = "GET", body: object = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_serve_answers_real_world_shapes_and_warns_once(tmp_path):
    stub = ServeProcess("--spec", str(SPECS / "real-world.yaml"), "--port", "0", "--scenarios", str(tmp_path))
    try:
        assert call(stub.url + "/login/redirect") == (302, b"")
        assert call(stub.url + "/legacy") == (400, b'{"error":400,"message":"string"}')
        status, body = call(stub.url + "/chains/1")
        assert status == 501 and "(Link.next -> Link)" in json.loads(body)["message"]
        assert call(stub.url + "/beds") == (200, b"{}")
        status, body = call(stub.url + "/gardeners?city=%CE%91%CE%B8", "POST", {"name": "Ωmega"})
        assert (status, json.loads(body)["name"]) == (201, "Ωmega")
        assert call(stub.url + "/gardeners?city=x1", "POST", {"name": "Ωmega"})[0] == 400
    finally:
        stub.stop()
    warnings = [line for line in stub.stderr.splitlines() if "have no answer that keeps the contract" in line]
    assert warnings == [f"plantstub: 2 operation(s) of {SPECS / 'real-world.yaml'} have no answer that keeps the"
                        " contract; with no scenario rule they answer 501 with the reason:"]
    assert "  GET /stream: its response 101 is informational (1xx), which cannot end an exchange" in stub.stderr
    assert "Traceback" not in stub.stderr
