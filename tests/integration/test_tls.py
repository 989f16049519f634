"""HTTPS: `Stub(tls=True)` and its `ca_file`, `serve --tls-cert/--tls-key`, and --proxy to an https:// real service
whose certificate is verified (system trust, --proxy-ca)."""

from __future__ import annotations

import json
import re
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from plantstub import Stub
from plantstub.cli import main
from plantstub.errors import ConfigError
from tests.helpers import JSON_AUTH, Upstream, address, same

FERN = json.dumps({"id": 1, "name": "Fern"}).encode()


def post(url: str, cafile: Path | None = None) -> tuple[int, object]:
    context = ssl.create_default_context(cafile=None if cafile is None else str(cafile))
    request = urllib.request.Request(url + "/plants", data=FERN, headers=JSON_AUTH)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA of the test's own and a certificate for 127.0.0.1 it signed, as PEM files."""
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    files = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    issued.private_key_pem.write_to_path(str(files["key"]))
    for i, blob in enumerate(issued.cert_chain_pems):
        blob.write_to_path(str(files["cert"]), append=i > 0)
    return files


@pytest.fixture(scope="module")
def tls_upstream(certificates: dict[str, Path]) -> Iterator[Upstream]:
    with Upstream(certificates["cert"], certificates["key"]) as running:
        yield running


def test_a_stub_with_tls_serves_https_that_its_ca_file_verifies():
    with Stub(tls=True) as stub:
        assert stub.url.startswith("https://127.0.0.1:")
        assert type(stub.ca_file) is str  # what requests' verify= and ssl.create_default_context(cafile=) take
        assert Path(stub.ca_file).read_text().startswith("-----BEGIN CERTIFICATE-----")
        assert post(stub.url, stub.ca_file) == (200, {"name": "Fern"})
        with pytest.raises(urllib.error.URLError):  # the throwaway CA is trusted by nobody else
            post(stub.url)
        with stub.session() as view:
            assert (view.url.startswith(stub.url), view.ca_file) == (True, stub.ca_file)
            assert post(view.url.rstrip("/"), view.ca_file) == (200, {"name": "Fern"})
        folder = Path(stub.ca_file).parent
    assert not folder.exists()  # the throwaway CA and key are removed at stop


def test_tls_without_trustme_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "trustme", None)  # as if not installed
    with pytest.raises(ConfigError) as refused:
        Stub(tls=True).start()
    assert str(refused.value) == ("tls=True (pytest: --plantstub-tls) needs the trustme package to make a throwaway "
                                  "certificate: pip install 'plantstub[tls]'")


def test_serve_tls_without_trustme_names_the_flag(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "trustme", None)  # as if not installed: a CLI user never wrote tls=True
    assert main(["serve", "--port", "0", "--tls"]) == 1
    assert capsys.readouterr().err == ("plantstub: --tls (PLANTSTUB_TLS) needs the trustme package to make a "
                                       "throwaway certificate: pip install 'plantstub[tls]'\n")


def test_serve_tls_cert_and_key_listens_on_https(serve, certificates, tmp_path):
    stub = serve("--port", "0", "--tls-cert", str(certificates["cert"]), "--tls-key", str(certificates["key"]),
                 cwd=tmp_path)
    assert stub.listening_line.startswith("plantstub listening on https://127.0.0.1:")
    assert post(stub.url, certificates["ca"]) == (200, {"name": "Fern"})


@pytest.mark.parametrize(("args", "message"), [
    (["--tls-cert", "{cert}"], "plantstub: --tls-cert without --tls-key: HTTPS needs both the certificate and its "
                               "private key"),
    (["--tls-cert", "{ca}", "--tls-key", "{key}"], "plantstub: --tls-cert='{ca}', --tls-key='{key}': cannot load the "
                                                   "certificate and key (*); expected PEM files, the key the "
                                                   "certificate's"),
    (["--proxy", "https://127.0.0.1:9", "--proxy-ca", "{key}"], "plantstub: --proxy-ca='{key}': cannot load it as CA "
                                                                "certificates (*); expected a PEM file"),
], ids=["cert-alone", "key-not-the-certificates", "proxy-ca-not-a-ca"])
def test_serve_refuses_tls_files_that_do_not_load(certificates, tmp_path, args, message):
    names = {name: str(path) for name, path in certificates.items()}
    done = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0",
                           *(arg.format(**names) for arg in args)],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert done.returncode == 1
    head, _, tail = message.format(**names).partition("(*)")
    said = done.stderr.strip()
    assert said.startswith(head) and said.endswith(tail), said


def test_proxy_to_https_verifies_the_certificate(tls_upstream, certificates):
    with Stub(proxy=tls_upstream.url) as stub:  # the system's CAs do not know the test's CA
        status, body = post(stub.url)
        assert (status, list(body)) == (502, ["error", "message"]) and body["error"] == 502
        # plantstub's words around OpenSSL's reason ("unable to get local issuer certificate"), which is OpenSSL's
        assert same([body["message"]], [re.compile(
            re.escape(f"upstream: TLS with {tls_upstream.url}/plants failed: its certificate does not verify (")
            + r"[^()]+" + re.escape("); if it is signed by your own CA, trust that with --proxy-ca FILE"))])
        assert stub.calls[0].upstream["status"] is None  # type: ignore[index]
    with Stub(proxy=tls_upstream.url, proxy_ca=certificates["ca"]) as stub:
        assert post(stub.url) == (200, {"name": "Fern"})
        assert stub.calls[0].upstream == {"url": tls_upstream.url + "/plants", "status": 200, "valid": True,
                                          "errors": []}


def test_https_in_front_and_behind(tls_upstream, certificates):
    with Stub(tls=True, proxy=tls_upstream.url, proxy_ca=certificates["ca"]) as stub:
        assert post(stub.url, stub.ca_file) == (200, {"name": "Fern"})


def test_the_fixture_with_plantstub_tls_exposes_the_ca_file(pytester):
    pytester.makepyfile(test_it='''
        import json, ssl, urllib.request

        def test_https(plantstub):
            assert plantstub.url.startswith("https://")
            context = ssl.create_default_context(cafile=str(plantstub.ca_file))
            request = urllib.request.Request(plantstub.url + "/plants", data=b'{"id": 1, "name": "Fern"}',
                                             headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
            with urllib.request.urlopen(request, context=context, timeout=10) as response:
                assert json.loads(response.read()) == {"name": "Fern"}
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--plantstub-tls")
    result.assert_outcomes(passed=1)


def test_serve_tls_makes_a_throwaway_certificate_and_names_its_ca(serve, tmp_path):
    stub = serve("--port", "0", "--tls", cwd=tmp_path)
    assert stub.listening_line.startswith("plantstub listening on https://127.0.0.1:")
    request = urllib.request.Request(stub.url + "/plants", data=FERN, headers=JSON_AUTH)
    with urllib.request.urlopen(request, timeout=10, context=ssl._create_unverified_context()) as response:
        assert json.loads(response.read()) == {"name": "Fern"}
    assert stub.stop() == 0
    said = stub.stderr.splitlines()[0]
    prefix = "plantstub: HTTPS with a throwaway certificate; clients trust its CA, "
    assert said.startswith(prefix) and said.endswith(" (removed at stop)")
    ca_file = Path(said.removeprefix(prefix).removesuffix(" (removed at stop)"))
    assert ca_file.name == "ca.pem" and not ca_file.exists()


def _closed_by_the_stub(sock: socket.socket) -> bool:
    """Whether the other end has closed `sock`: a read sees the end at once (a hang until the socket's timeout
    otherwise, which raises)."""
    try:
        return sock.recv(1) == b""
    except (ConnectionError, ssl.SSLError):
        return True


def test_a_stub_stops_at_once_over_a_kept_alive_https_connection():
    import gc
    import http.client

    stub = Stub(tls=True).start()
    assert stub.ca_file is not None
    host, port = address(stub.url)
    connection = http.client.HTTPSConnection(host, int(port), timeout=5,
                                             context=ssl.create_default_context(cafile=str(stub.ca_file)))
    try:
        connection.request("POST", "/plants", body=FERN, headers=JSON_AUTH)
        assert connection.getresponse().read() == b'{"name":"Fern"}'  # and the connection stays open
        stub.stop()
        assert _closed_by_the_stub(connection.sock)  # not waiting for the client's close_notify
    finally:
        connection.close()
    gc.collect()  # a socket the stub left open would warn here (ResourceWarning), failing the test


def test_plantstub_health_asks_over_https_when_the_stub_serves_it(serve, certificates, tmp_path):
    import os

    env = {"PLANTSTUB_TLS_CERT": str(certificates["cert"]), "PLANTSTUB_TLS_KEY": str(certificates["key"])}
    stub = serve("--port", "0", cwd=tmp_path, env=env)
    port = str(address(stub.url)[1])
    health = [sys.executable, "-m", "plantstub", "health"]
    asked = subprocess.run(health, capture_output=True, text=True, timeout=30,
                           env={**os.environ, **env, "PLANTSTUB_PORT": port})
    assert (asked.returncode, asked.stderr) == (0, "")
    plain = subprocess.run(health, capture_output=True, text=True, timeout=30, env={**os.environ, "PLANTSTUB_PORT": port})
    assert (plain.returncode, plain.stderr) == (1, f"plantstub: http://127.0.0.1:{port} is not healthy: it answered 400: "
                                                "request: this is plain HTTP on an HTTPS port; use https://\n")


def _sent_to_a_tls_stub(sent: bytes) -> tuple[bytes, list[int]]:
    """What a stub with --tls and a --read-timeout of 1 s answers `sent` before it closes the connection (within 30 s:
    asyncio's own bound on a handshake is 60 s), and the statuses of the calls it recorded."""
    import socket

    with Stub(tls=True, read_timeout=1) as stub:
        host, port = address(stub.url)
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(sent)
            sock.settimeout(30)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        return data, [call.response["status"] for call in stub.calls]


@pytest.mark.parametrize("sent", [b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"], ids=["nothing", "half-a-hello"])
def test_a_tls_client_that_never_finishes_its_handshake_is_closed_after_the_read_timeout(sent):
    assert _sent_to_a_tls_stub(sent)[0] == b""  # closed by the stub, not timed out here


@pytest.mark.parametrize("sent", [b"POST /plants HTTP/1.1\r\nHost: x\r\n", b"\x00"], ids=["half-a-head", "a-byte"])
def test_plain_bytes_that_stop_short_on_an_https_stub_are_answered_after_the_read_timeout(sent):
    """Plain HTTP whose head never ends held the connection open for good (no --read-timeout past TLS's door)."""
    data, recorded = _sent_to_a_tls_stub(sent)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in head
    assert json.loads(body) == {"error": 400, "message": "request: this is plain HTTP on an HTTPS port; use https://"}
    assert recorded == [400]


def test_plain_http_sent_to_an_https_stub_is_told_so_and_recorded():
    import socket

    with Stub(tls=True) as stub:
        host, port = address(stub.url)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in head
        assert json.loads(body) == {"error": 400, "message": "request: this is plain HTTP on an HTTPS port; use https://"}
        [call] = stub.calls
        assert (call.method, call.path, call.response["status"]) == ("POST", "/plants", 400)
        assert post(stub.url, stub.ca_file) == (200, {"name": "Fern"})  # and HTTPS is served as before
