"""The pytest plugin's cost to every project that installs plantstub (its behaviour is tested in tests/consumer/)."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_pytest_plugin_imports_no_server_code():
    # pytest loads the plugin in every project that has plantstub installed, used or not.
    code = "import sys, plantstub.pytest_plugin; print(sorted(m for m in ('aiohttp', 'jsonschema', 'yaml') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr
