"""`plantstub verify --ca FILE` against an https service whose certificate a CA of its own signed (here: a stub
started with `tls=True`, whose `ca_file` is that CA): trusted with the flag, refused without it, and a file that
holds no certificate stops the run before anything is sent."""

from __future__ import annotations

import pytest

from plantstub import Stub
from plantstub.cli import main

SCENARIO = """\
rules:
  - match: {method: POST, path: /plants, body: {id: 7}}
    reply:
      status: 200
      body: {name: Fern}
"""


@pytest.fixture
def scenarios(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("PLANTSTUB_CA", "PLANTSTUB_HEADER", "PLANTSTUB_AGAINST", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "plants.yaml").write_text(SCENARIO, encoding="utf-8")
    return tmp_path


def verify(url: str, *args: str) -> int:
    return main(["verify", "--against", url, "--allow-writes", "--header", "Authorization: Bearer t", *args])


def test_a_service_signed_by_its_own_ca_is_verified_with_ca_and_refused_without(scenarios, capsys, monkeypatch):
    with Stub(tls=True) as service:
        assert verify(service.url, "--ca", str(service.ca_file)) == 0
        assert capsys.readouterr().out.splitlines()[0] == (
            "scenarios/plants.yaml:2 POST /plants: stub 200, service 200: agrees")
        monkeypatch.setenv("PLANTSTUB_CA", str(service.ca_file))
        assert verify(service.url) == 0  # the environment's, as every verify flag
        monkeypatch.delenv("PLANTSTUB_CA")
        assert verify(service.url) == 1
        first = capsys.readouterr().out.splitlines()
    assert "scenarios/plants.yaml:2 POST /plants" in first[-3] and "no answer" in " ".join(first), first


def test_a_ca_file_that_holds_no_certificate_stops_the_run_before_anything_is_sent(scenarios, capsys):
    (scenarios / "ca.pem").write_text("not a certificate\n", encoding="utf-8")
    status = verify("https://127.0.0.1:9", "--ca", "ca.pem")
    err = capsys.readouterr().err
    assert status == 1
    assert "--ca='ca.pem': cannot load it as CA certificates (" in err and "expected a PEM file" in err
