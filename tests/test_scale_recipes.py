"""docs/scale.md's recipes agree with the nginx configuration the suite runs (tests/integration/test_scale_nginx.py):
the Kubernetes ingress hashes on the same maps, probes health; the nginx test fails, not skips, without nginx."""

from __future__ import annotations

import re

import pytest
import yaml

from tests import nginx
from tests.helpers import REPO

SCALE = (REPO / "docs" / "scale.md").read_text()
MAPS = re.compile(r"^map .*?^}\n", re.S | re.M)


def yaml_blocks() -> list[dict]:
    return [yaml.safe_load(code) for code in re.findall(r"^```yaml\n(.*?)^```", SCALE, re.S | re.M)]


def kind(name: str) -> dict:
    (found,) = [block for block in yaml_blocks() if block.get("kind") == name]
    return found


def test_the_ingress_hashes_on_the_maps_of_the_nginx_recipe():
    maps = MAPS.findall(nginx.doc_config())
    assert len(maps) == 2 and "$plantstub_session" in maps[1]
    assert MAPS.findall(kind("ConfigMap")["data"]["http-snippet"]) == maps  # the same text, map by map
    annotations = kind("Ingress")["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/upstream-hash-by"] == "$plantstub_session"
    assert "hash $plantstub_session consistent;" in nginx.doc_config()


def test_the_deployment_runs_replicas_probed_on_health():
    spec = kind("Deployment")["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    assert spec["replicas"] == 3
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/__plantstub/health", "port": 4010}
    assert kind("Service")["spec"]["selector"] == spec["selector"]["matchLabels"]


def test_the_ci_job_runs_pytest_on_the_balancer():
    (job,) = [block for block in yaml_blocks() if "jobs" in block]
    steps = [step.get("run", "") for step in job["jobs"]["integration"]["steps"]]
    assert 'pytest -n auto --plantstub-url "$PLANTSTUB_URL"' in steps


def test_placing_the_test_addresses_changes_only_them():
    conf = nginx.doc_config()
    placed = nginx.placed(conf, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], 9)
    assert placed == (conf.replace("127.0.0.1:4011", "127.0.0.1:1").replace("127.0.0.1:4012", "127.0.0.1:2")
                      .replace("127.0.0.1:4013", "127.0.0.1:3").replace("listen 127.0.0.1:4010;", "listen 127.0.0.1:9;"))
    with pytest.raises(AssertionError, match=re.escape("'127.0.0.1:4013' is not there exactly once")):
        nginx.placed(conf.replace("127.0.0.1:4013", "10.0.0.3:4013"), ["a", "b", "c"], 9)


def test_without_nginx_the_test_fails_naming_the_package(monkeypatch):
    monkeypatch.setattr(nginx.shutil, "which", lambda name: None)
    monkeypatch.setattr(nginx.os, "access", lambda path, mode: False)
    with pytest.raises(AssertionError, match=re.escape("nginx is not installed: apt-get install -y nginx-light")):
        nginx.nginx_binary()
