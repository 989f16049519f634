"""The pytest plugin's cost to every project that installs plantstub (its behaviour is tested in tests/consumer/).

Issue 24: a worker's first `plantstub` must start fast, and a run that never asks for it must pay next to nothing.
`tests/benchmarks/fixture_startup.py` measures the time; these tests pin what is imported, through pytest's own
entry point in a fresh process.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from plantstub import Stub

# What a project's pytest run loads when the plugin does (the pytest11 entry point): none of the server's libraries.
NOT_FOR_EVERY_RUN = ("aiohttp", "yaml", "jsonschema", "jsonschema_rs", "referencing", "regex", "orjson", "asyncio",
                     "plantstub.stub", "plantstub.server", "plantstub.contract", "plantstub.scenarios")
# What a test on a sidecar (--plantstub-url) loads: the HTTP client of the admin API, not the server.
NOT_FOR_A_SIDECAR = ("aiohttp", "yaml", "jsonschema", "jsonschema_rs", "referencing", "regex",
                     "plantstub.stub", "plantstub.contract", "plantstub.server.app", "plantstub.scenarios.load")
# What the in-process stub's default run never needs: jsonschema and referencing only word a broken file or resolve
# a $ref the loader's own walk cannot follow; aiohttp's server, the proxy and the store serve features that are off.
NOT_FOR_A_DEFAULT_STUB = ("jsonschema", "referencing", "regex", "aiohttp.web", "plantstub.server.app",
                          "plantstub.proxy.forward", "plantstub.stateful.resources", "plantstub.store")

CONFTEST = '''
import sys

WATCHED = {watched!r}


def pytest_unconfigure(config):
    # The last hook: every fixture has been torn down and plantstub's report hooks have run.
    print("plugin loaded:", config.pluginmanager.hasplugin("plantstub"))
    print("imported:", sorted(m for m in WATCHED if m in sys.modules))
'''

CALL = '''
import urllib.request


def test_one_call(plantstub):
    request = urllib.request.Request(plantstub.url + "/plants", data=b'{{"id": 1, "name": "Fern"}}', method="POST",
                                     headers={{"Authorization": "Bearer t", "Content-Type": "application/json"}})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200
    plantstub.assert_called("POST", "/plants", body={{"name": "Fern"}}, times=1)
'''


def run_alone(pytester: pytest.Pytester, watched: tuple[str, ...], *args: str) -> pytest.RunResult:
    """The inner suite in a fresh pytest process with plantstub's plugin (and xdist's) only: in this venv
    pytest-aiohttp's would import aiohttp before any test, as it does in no project that lacks it."""
    pytester.makeconftest(CONFTEST.format(watched=watched))
    others = [arg for e in entry_points(group="pytest11") if e.name not in ("plantstub", "xdist", "xdist.looponfail")
              for arg in ("-p", f"no:{e.name}")]
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", *others, *args)


def test_loading_the_pytest_plugin_imports_no_server_code():
    # pytest loads the plugin in every project that has plantstub installed, used or not.
    code = f"import sys, plantstub.pytest_plugin; print(sorted(m for m in {NOT_FOR_EVERY_RUN!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr


def test_a_run_that_does_not_use_the_fixture_imports_no_server_code(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = run_alone(pytester, NOT_FOR_EVERY_RUN)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugin loaded: True", "imported: []"])


@pytest.fixture
def sidecar():
    """A running Stub, started before `pytester` is set up (ask for it first): pytester takes its snapshot of
    sys.modules then and drops what was imported after it, and PyYAML imported anew beside the C parser its first
    import loaded reads every mapping with tag None (`could not determine a constructor for the tag None`) in the
    worker's later tests. So what the inner run makes it do (the plugin's connect, which lists the scenarios and so
    loads the built-in ones' YAML) is done once here, before."""
    with Stub() as stub:
        Stub.connect(stub.url)
        yield stub


def test_the_fixture_on_a_sidecar_imports_no_server_code(sidecar, pytester):
    # A worker on a sidecar drives it over HTTP: it pays neither aiohttp nor the spec's loaders.
    pytester.makepyfile(test_call=CALL.format())
    result = run_alone(pytester, NOT_FOR_A_SIDECAR, f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugin loaded: True", "imported: []"])


def test_the_fixture_in_process_imports_only_what_a_default_run_uses(pytester):
    pytester.makepyfile(test_call=CALL.format())
    result = run_alone(pytester, NOT_FOR_A_DEFAULT_STUB)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugin loaded: True", "imported: []"])


GC_WATCH = '''
import gc
import sys

import pytest

seen = []  # (what happened, whether the collector was on then) during the first test's setup
watching = False


def watch(event, args):
    # The first setup imports the stub (lazily: the plugin loads without it) and binds its socket.
    if watching and (event == "socket.bind" or (event == "import" and args[0] == "plantstub.stub")):
        seen.append((event, gc.isenabled()))


sys.addaudithook(watch)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    global watching
    before = gc.isenabled()
    watching = True
    yield
    watching = False
    print(f"collector on before the setup: {before}; during it: {sorted(set(seen))}; after it: {gc.isenabled()}")
'''


def test_the_fixture_s_first_use_pauses_the_garbage_collector(pytester):
    # Importing and starting the server builds objects that all live on: a collection meanwhile only walks them
    # (about 70 collections, 40 ms of a worker's start). How many collections still come is the interpreter's and
    # the libraries' business; that the collector is paused while the stub is imported and started, and on again
    # after, is the plugin's.
    pytester.makepyfile(gc_watch=GC_WATCH, test_gc='''
        import gc

        def test_collector_on_again(plantstub):
            assert gc.isenabled()
    ''')
    result = run_alone(pytester, (), "-p", "gc_watch")
    result.assert_outcomes(passed=1)
    said = ("collector on before the setup: True; during it: [('import', False), ('socket.bind', False)]; "
            "after it: True")
    assert said in result.stdout.str(), result.stdout.str()
