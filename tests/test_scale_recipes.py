"""docs/scale.md's recipes agree with the configurations the suite runs (tests/integration/test_scale_balancers.py):
the Kubernetes ingress hashes on the nginx recipe's maps, probes health; nginx and HAProxy are whole configurations
started by the page's own command lines; the balancer tests fail, not skip, without nginx or haproxy."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from tests import balancers
from tests.balancers import HAPROXY, NGINX, RECIPES
from tests.helpers import REPO

SCALE = (REPO / "docs" / "scale.md").read_text()
MAPS = re.compile(r"^ *map .*?^ *}\n", re.S | re.M)


def yaml_blocks() -> list[dict]:
    return [yaml.safe_load(code) for code in re.findall(r"^```yaml\n(.*?)^```", SCALE, re.S | re.M)]


def kind(name: str) -> dict:
    (found,) = [block for block in yaml_blocks() if block.get("kind") == name]
    return found


def test_the_ingress_hashes_on_the_maps_of_the_nginx_recipe():
    maps = [textwrap.dedent(found) for found in MAPS.findall(NGINX.config())]
    assert len(maps) == 2 and "$plantstub_session" in maps[1]
    assert MAPS.findall(kind("ConfigMap")["data"]["http-snippet"]) == maps  # the same text, map by map
    annotations = kind("Ingress")["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/upstream-hash-by"] == "$plantstub_session"
    assert "hash $plantstub_session consistent;" in NGINX.config()


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


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_placing_the_test_addresses_changes_only_them(recipe):
    recipe = RECIPES[recipe]
    conf = recipe.config()
    placed = balancers.placed(recipe, conf, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], 9)
    assert placed == (conf.replace("127.0.0.1:4011", "127.0.0.1:1").replace("127.0.0.1:4012", "127.0.0.1:2")
                      .replace("127.0.0.1:4013", "127.0.0.1:3").replace(recipe.listen, recipe.listen.replace("4010", "9")))
    with pytest.raises(AssertionError, match=re.escape("'127.0.0.1:4013' is not there exactly once")):
        balancers.placed(recipe, conf.replace("127.0.0.1:4013", "10.0.0.3:4013"), ["a", "b", "c"], 9)


def test_the_recipes_are_whole_configurations_with_their_files_in_a_folder_of_the_job():
    assert re.search(r"^pid nginx.pid;$", NGINX.config(), re.M) and "\nhttp {\n" in NGINX.config()
    assert "user " not in NGINX.config()  # runs as whoever starts it
    assert re.search(r"^global$", HAPROXY.config(), re.M) and re.search(r"^defaults$", HAPROXY.config(), re.M)
    # What the tests run: the page's command lines, `$PWD` the job's folder, in the foreground.
    assert balancers.argv(NGINX, Path("/ci/job"))[1:] == ["-p", "/ci/job/nginx", "-c", "nginx.conf", "-e",
                                                          "error.log", "-g", "daemon off;"]
    assert balancers.argv(HAPROXY, Path("/ci/job"))[1:] == ["-f", "/ci/job/haproxy.cfg", "-db"]
    assert "mkdir -p nginx && cp nginx.conf nginx/" in SCALE  # where the nginx line finds its configuration


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_without_the_balancer_the_test_fails_naming_the_package(monkeypatch, recipe):
    recipe = RECIPES[recipe]
    monkeypatch.setattr(balancers.shutil, "which", lambda name: None)
    monkeypatch.setattr(balancers.os, "access", lambda path, mode: False)
    with pytest.raises(AssertionError, match=re.escape(f"{recipe.name} is not installed: apt-get install -y "
                                                       f"{recipe.package}")):
        recipe.binary()
