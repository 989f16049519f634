"""YAML and JSON reading shared by the spec and scenario loaders (safe, JSON-typed)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

_MERGE = "tag:yaml.org,2002:merge"
# libyaml's parser when PyYAML has it (about 9x faster: start-up time), the pure-Python one otherwise.
_SAFE_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class JsonSafeLoader(_SAFE_BASE):  # type: ignore[misc,valid-type]
    """`yaml.SafeLoader` reading plain scalars by the YAML 1.2 core schema, as OpenAPI recommends.

    Only `true`/`false` are booleans (a country code `NO` stays a string), `18:00` and dates stay
    strings, `0755` is decimal; so a value means what a JSON reader would take it to mean.
    Keys are strings, as in JSON. A key written twice in one mapping is an error (as in js-yaml),
    not a silent overwrite.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], yaml.Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                    continue
                slot = (key_node.tag, key_node.value)
                if slot in seen:
                    first = seen[slot].start_mark.line + 1
                    raise ConstructorError(
                        None, None, f"duplicate key {key_node.value!r} (first at line {first})", key_node.start_mark
                    )
                seen[slot] = key_node
        mapping = super().construct_mapping(node, deep=deep)
        # JSON keys are strings: `200:` is the status code "200", as a JSON pointer finds it.
        return {k if isinstance(k, str) else json.dumps(k): v for k, v in mapping.items()}


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text, 8)
    if text.startswith("0x"):
        return int(text, 16)
    return int(text)  # decimal, leading zeros and all: YAML 1.2 has no 0755 octal


JsonSafeLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    ("float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
     "-+0123456789."),
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("merge", r"<<", "<"),
):
    JsonSafeLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_pattern})$"), list(_first))
JsonSafeLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
JsonSafeLoader.add_constructor(_MERGE, yaml.SafeLoader.construct_scalar)  # `<<` as a value, not a key


def parse_text(text: str, name: str) -> Any:
    """Parse JSON (by extension) or YAML text; raises ValueError with `name:line: reason`."""
    if name.endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    try:
        return yaml.load(text, Loader=JsonSafeLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        if text.lstrip().startswith("{"):
            try:  # JSON with tabs is valid JSON but not valid YAML
                return json.loads(text)
            except json.JSONDecodeError:
                pass
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ValueError(f"{name}{line}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}: not valid YAML: {exc}") from None


def read_document(path: Path, name: str | None = None) -> Any:
    """Read and parse one YAML or JSON file; raises ValueError with a readable reason.

    `name` is how messages show the file (default: the path as given); it keeps the file's extension.
    """
    name = str(path) if name is None else name
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: tolerate a byte-order mark
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"{name}: cannot read ({exc.strerror})") from None
    return parse_text(text, name)


# -- YAML with line marks ---------------------------------------------------------------------
def _text_key(key: Any) -> Any:
    return key if isinstance(key, str) else json.dumps(key)  # as JsonSafeLoader turns keys into text


class LineMarkedLoader(JsonSafeLoader):
    """Safe YAML that also remembers the line of every mapping key and sequence item."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        # id(container) -> (container, {key: line} or [line, ...]); holding the container keeps its id unique.
        self.line_marks: dict[int, tuple[Any, Any]] = {}

    def construct_line_map(self, node: Any) -> Iterator[dict[str, Any]]:
        data: dict[str, Any] = {}
        yield data
        data.update(self.construct_mapping(node))
        # node.value is flattened now (merge keys resolved); a key written later wins, as in the data.
        lines = {_text_key(self.construct_object(k)): k.start_mark.line + 1 for k, _ in node.value}
        self.line_marks[id(data)] = (data, lines)

    def construct_line_seq(self, node: Any) -> Iterator[list[Any]]:
        data: list[Any] = []
        yield data
        data.extend(self.construct_sequence(node))
        self.line_marks[id(data)] = (data, [item.start_mark.line + 1 for item in node.value])


LineMarkedLoader.add_constructor("tag:yaml.org,2002:map", LineMarkedLoader.construct_line_map)
LineMarkedLoader.add_constructor("tag:yaml.org,2002:seq", LineMarkedLoader.construct_line_seq)
