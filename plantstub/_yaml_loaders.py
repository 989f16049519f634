"""PyYAML's loaders and emitter as plantstub reads and writes YAML (safe, JSON-typed): imported when a YAML
document is first read or written (_yaml.py), so a start that reads none, such as a plain `plantstub serve` of the
bundled spec, never imports PyYAML."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterator
from typing import NoReturn

import yaml
from yaml.constructor import ConstructorError

from plantstub._json import MAX_DIGITS, cut, shown
from plantstub._memo import IdentityMemo
from plantstub._yaml_events import _SAFE_BASE, check_yaml_shape
from plantstub._yaml_events import read_events as _read_events

_MERGE = "tag:yaml.org,2002:merge"
_KEY_TYPES = (str, int, float, bool, type(None))


class JsonSafeLoader(_SAFE_BASE):
    """`yaml.SafeLoader` reading plain scalars by the YAML 1.2 core schema, as OpenAPI recommends.

    Only `true`/`false` are booleans (a country code `NO` stays a string), `18:00` and dates stay
    strings, `0755` is decimal; so a value means what a JSON reader would take it to mean.
    Keys are strings, as in JSON. A key written twice in one mapping is an error (as in js-yaml),
    not a silent overwrite. A document nested or expanded beyond the limits above raises DocumentLimit
    before it is composed.
    """

    def __init__(self, stream: str, max_values: int | None = None) -> None:
        super().__init__(stream)
        self.text = stream
        self.max_values = max_values  # None: as many as MAX_ALIASED and the nesting allow

    def get_single_node(self) -> yaml.Node | None:
        check_yaml_shape(self.text, self.max_values)
        return super().get_single_node()

    def construct_undefined(self, node: yaml.Node) -> NoReturn:
        raise ConstructorError(None, None, f"could not determine a constructor for the tag {shown(node.tag)}",
                               node.start_mark)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, object]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], yaml.Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                    continue
                slot = (key_node.tag, key_node.value)
                if slot in seen:
                    first = seen[slot].start_mark.line + 1
                    raise ConstructorError(
                        None, None, f"duplicate key {shown(key_node.value)} (first at line {first})", key_node.start_mark
                    )
                seen[slot] = key_node
        mapping = super().construct_mapping(node, deep=deep)
        if not all(isinstance(k, _KEY_TYPES) for k in mapping):
            raise ConstructorError(None, None, "a key must be text, a number, true, false or null", node.start_mark)
        # JSON keys are strings: `200:` is the status code "200", as a JSON pointer finds it.
        return {k if isinstance(k, str) else json.dumps(k): v for k, v in mapping.items()}


def _written_tag(tag: str) -> str:
    """`tag:yaml.org,2002:int` -> `!!int`, as written."""
    return cut("!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag)


_Construct = Callable[[_SAFE_BASE, yaml.ScalarNode], object]  # a loader's constructor of a scalar's value


def _scalar(construct: _Construct) -> _Construct:
    """`construct`, refusing in YAML's terms a value it cannot read (`!!int abc`, `!!bool maybe`, `!!timestamp x`)."""

    def guarded(loader: _SAFE_BASE, node: yaml.ScalarNode) -> object:
        try:
            return construct(loader, node)
        except (ValueError, LookupError, AttributeError, TypeError):  # what PyYAML's constructors then raise
            raise ConstructorError(None, None, f"{shown(node.value)} is not a {_written_tag(node.tag)}",
                                   node.start_mark) from None

    return guarded


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text, 8)
    if text.startswith("0x"):
        return int(text, 16)
    digits = len(text) - (text[0] in "+-")
    if digits > MAX_DIGITS:
        raise ConstructorError(None, None, f"a number of {digits} digits is longer than the {MAX_DIGITS} digits"
                                           " plantstub reads", node.start_mark)
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
for _tag in ("int", "float", "bool", "timestamp"):
    JsonSafeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _scalar(JsonSafeLoader.yaml_constructors[f"tag:yaml.org,2002:{_tag}"]))
# `<<` as a value, not a key: its text (SafeConstructor's construct_scalar, named as this loader's constructor)
_merge_text: Callable[[JsonSafeLoader, yaml.ScalarNode], str] = JsonSafeLoader.construct_scalar
JsonSafeLoader.add_constructor(_MERGE, _merge_text)
JsonSafeLoader.add_constructor(None, JsonSafeLoader.construct_undefined)


class JsonSafeDumper(yaml.SafeDumper):
    """PyYAML's safe emitter, quoting every text that YAML 1.1 or the loader above (YAML 1.2's core schema) would read
    as something else (`yes`, `1e3`, `0o17`): a file it writes reads back as the data it was given."""

    def analyze_scalar(self, scalar: str) -> yaml.emitter.ScalarAnalysis:
        """A text holding NEL, U+2028 or U+2029 double-quoted (written `\\N`, `\\L`, `\\P`): PyYAML writes them as they
        are in other styles, where a reader folds them into a space."""
        analysis = super().analyze_scalar(scalar)
        if "\x85" in scalar or "\u2028" in scalar or "\u2029" in scalar:
            analysis.allow_flow_plain = analysis.allow_block_plain = False
            analysis.allow_single_quoted = analysis.allow_block = False
        return analysis


JsonSafeDumper.yaml_implicit_resolvers = {  # its own: PyYAML's are shared by every loader and dumper
    first: [*yaml.SafeDumper.yaml_implicit_resolvers.get(first, []), *JsonSafeLoader.yaml_implicit_resolvers.get(first, [])]
    for first in {*yaml.SafeDumper.yaml_implicit_resolvers, *JsonSafeLoader.yaml_implicit_resolvers}
}


# -- YAML with line marks ---------------------------------------------------------------------
def _text_key(key: object) -> str:
    return key if isinstance(key, str) else json.dumps(key)  # as JsonSafeLoader turns keys into text


class LineMarkedLoader(JsonSafeLoader):
    """Safe YAML that also remembers the line of every mapping key and sequence item; `max_values`: refused (at
    the line where it passes) before it is composed when it holds more values."""

    def __init__(self, stream: str, max_values: int | None = None) -> None:
        super().__init__(stream, max_values)
        self.line_marks: IdentityMemo[dict[str, int] | list[int]] = IdentityMemo()  # container -> {key: line} or [line, ...]

    def construct_line_map(self, node: yaml.MappingNode) -> Iterator[dict[Hashable, object]]:
        data: dict[Hashable, object] = {}
        yield data
        data.update(self.construct_mapping(node))
        # node.value is flattened now (merge keys resolved); a key written later wins, as in the data.
        lines = {_text_key(self.construct_object(k)): k.start_mark.line + 1 for k, _ in node.value}
        self.line_marks.put(data, lines)

    def construct_line_seq(self, node: yaml.SequenceNode) -> Iterator[list[object]]:
        data: list[object] = []
        yield data
        data.extend(self.construct_sequence(node))
        self.line_marks.put(data, [item.start_mark.line + 1 for item in node.value])


LineMarkedLoader.add_constructor("tag:yaml.org,2002:map", LineMarkedLoader.construct_line_map)
LineMarkedLoader.add_constructor("tag:yaml.org,2002:seq", LineMarkedLoader.construct_line_seq)


def read_events(text: str | bytes) -> object:
    """The value JsonSafeLoader reads from `text`, built straight from libyaml's events (_yaml_events.py)."""
    return _read_events(text, JsonSafeLoader)


def dump_yaml(data: object) -> str:
    """`data` (JSON values) as a block-style YAML document, keys in their order: the one way plantstub writes YAML."""
    return yaml.dump(data, Dumper=JsonSafeDumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=120)
