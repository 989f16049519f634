"""One test document served with `plantstub serve --stateful`, and its declared answers to check bodies against.

A test module names its document and takes the two fixtures:

    DOC = StatefulDoc("store-keys.yaml")
    served, url = DOC.fixtures()
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers import SPECS, ServeProcess, call


class StatefulDoc:
    """tests/data/specs/NAME: served `--stateful`, and read to validate answers against what it declares."""

    def __init__(self, name: str) -> None:
        self.spec = SPECS / name
        self.doc = yaml.safe_load(self.spec.read_text(encoding="utf-8"))

    def fixtures(self) -> tuple[Any, Any]:
        """`served` (one `plantstub serve --stateful` per module) and `url` (it, reset before each test)."""
        spec = self.spec

        @pytest.fixture(scope="module")
        def served(tmp_path_factory):
            serve = ServeProcess("--spec", str(spec), "--port", "0", "--stateful",
                                 "--scenarios", str(tmp_path_factory.mktemp("scenarios")))
            yield serve.url
            serve.stop()

        @pytest.fixture
        def url(served):
            assert call(served, "POST", "/__plantstub/reset")[0] == 200
            return served

        return served, url

    def declared(self, path: str, method: str = "get", status: int | str = 200) -> jsonschema.protocols.Validator:
        """A validator of the answer the document declares for `method path` and `status` (its $refs resolve)."""
        content = self.doc["paths"][path][method]["responses"][str(status)]["content"]
        root = {**next(iter(content.values()))["schema"], "components": self.doc["components"]}
        return jsonschema.Draft202012Validator(root, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

    def valid(self, path: str, method: str, status: int, body: Any) -> Any:
        """`body`, asserted valid against the answer the document declares for `method path` and `status`."""
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in self.declared(path, method, status).iter_errors(body)]
        assert errors == [], body
        return body
