"""The documents shipped with plantstub are read from their parsed form (`data/NAME.openapi.yaml.parsed.json`), so a
plain start imports no YAML parser (issue 41, goal 2): each parsed form is current, holds what its YAML parses to,
and is read only while it is of those very bytes.

After changing a shipped YAML document, write its parsed form again: `python -m tests.contract.test_shipped_parsed`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from plantstub._yaml import parse_bytes
from plantstub.config import BUNDLED_SPECS
from plantstub.contract import documents
from plantstub.contract.documents import parsed_form
from plantstub.contract.load import bundled_spec_path, load_spec
from plantstub.contract.spec_cache import digest
from plantstub.contract.spec_json import encode


def parsed(path: Path) -> dict[str, object]:
    """The parsed form of the YAML document at `path`, as written beside it."""
    data = path.read_bytes()
    return {"sha256": digest(data), "value": parse_bytes(data, path.name)}


def write(path: Path) -> None:
    parsed_form(path).write_text(json.dumps(parsed(path), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", BUNDLED_SPECS)
def test_each_shipped_document_has_its_current_parsed_form(name):
    path = bundled_spec_path(name)
    kept = json.loads(parsed_form(path).read_text(encoding="utf-8"))
    # The same value, keys in the same order (what a spec's walks and its answers' fields follow).
    assert json.dumps(kept) == json.dumps(parsed(path)), \
        "the parsed form is out of date: python -m tests.contract.test_shipped_parsed writes it"


@pytest.mark.parametrize("name", BUNDLED_SPECS)
def test_the_spec_loaded_from_the_parsed_form_is_the_one_the_yaml_gives(name, tmp_path):
    shipped = load_spec(name, cache=False)
    copy = tmp_path / bundled_spec_path(name).name  # outside plantstub/data: read as YAML, as any user's file is
    shutil.copy(bundled_spec_path(name), copy)
    from_yaml = load_spec(copy, cache=False)
    assert {**encode(shipped), "source": ""} == {**encode(from_yaml), "source": ""}
    assert shipped.source == str(bundled_spec_path(name))  # named by its YAML file, as before


def test_a_parsed_form_is_read_only_while_it_is_of_the_yaml_it_stands_for(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "SHIPPED", tmp_path)
    path = tmp_path / "plant-store.openapi.yaml"
    shutil.copy(bundled_spec_path(), path)
    form = parsed(path)
    form["value"]["info"]["title"] = "From the parsed form"  # type: ignore[index]
    parsed_form(path).write_text(json.dumps(form), encoding="utf-8")
    assert load_spec(path, cache=False).title == "From the parsed form"  # current: read instead of the YAML

    path.write_bytes(path.read_bytes().replace(b"version:", b"version:  ", 1))  # the YAML changed since
    assert load_spec(path, cache=False).title == parsed(path)["value"]["info"]["title"]  # type: ignore[index]

    parsed_form(path).write_text("{not json", encoding="utf-8")
    assert load_spec(path, cache=False).title == parsed(path)["value"]["info"]["title"]  # type: ignore[index]


def test_a_users_file_with_a_parsed_form_beside_it_is_read_as_written(tmp_path):
    path = tmp_path / "plant-store.openapi.yaml"
    shutil.copy(bundled_spec_path(), path)
    form = parsed(path)
    form["value"]["info"]["title"] = "From the parsed form"  # type: ignore[index]
    parsed_form(path).write_text(json.dumps(form), encoding="utf-8")
    assert load_spec(path, cache=False).title != "From the parsed form"


if __name__ == "__main__":
    for name in BUNDLED_SPECS:
        write(bundled_spec_path(name))
        print(f"wrote {parsed_form(bundled_spec_path(name))}")
