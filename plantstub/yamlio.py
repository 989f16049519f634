"""YAML and JSON reading shared by the spec and scenario loaders (safe, JSON-typed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


class JsonSafeLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that keeps dates and times as strings, as JSON would see them."""


# A bare 2024-01-01 in an example must stay the string a JSON client would send.
JsonSafeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_text(text: str, name: str) -> Any:
    """Parse JSON (by extension) or YAML text; raises ValueError with `name:line: reason`."""
    if name.endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    try:
        return yaml.load(text, Loader=JsonSafeLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ValueError(f"{name}{line}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}: not valid YAML: {exc}") from None


def read_document(path: Path) -> Any:
    """Read and parse one YAML or JSON file; raises ValueError with a readable reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_text(text, str(path))
