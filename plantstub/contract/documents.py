"""The files a spec is read from and the `$ref`s between them: the spec's own file and those its $refs name,
each read once and only under the root (--spec-root, else the spec's folder); a $ref followed to its target, with a
"did you mean" when a pointer's last step is a typo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlparse

from plantstub._json import MAX_SHOWN, cut, shown
from plantstub._words import did_you_mean
from plantstub._yaml import parse_bytes, read_bytes
from plantstub.contract import oas32
from plantstub.contract.bundle import join
from plantstub.contract.spec_cache import SpecCache, digest
from plantstub.errors import SpecError

_NOWHERE = object()
SHIPPED = Path(__file__).parents[1] / "data"  # the documents shipped with plantstub (--spec plant-store), as named
PARSED_SUFFIX = ".parsed.json"


def parsed_form(path: Path) -> Path:
    """Where the value of a document shipped with plantstub is kept beside it, as JSON: `NAME.parsed.json`."""
    return path.with_name(path.name + PARSED_SUFFIX)


def shipped_value(path: Path, data: bytes) -> object:
    """The value of a document shipped with plantstub whose parsed form (`{"sha256": the YAML file's content hash,
    "value": what it parses to}`) is of these very bytes, else _NOWHERE: the bundled spec is then read with no YAML
    parser imported (a start's cost). tests/contract/test_shipped_parsed.py keeps each parsed form current
    (`python -m tests.contract.test_shipped_parsed` writes them)."""
    if path.parent != SHIPPED.resolve():  # `path` is resolved
        return _NOWHERE
    try:
        kept = json.loads(parsed_form(path).read_bytes())
    except (OSError, ValueError):
        return _NOWHERE
    return kept["value"] if isinstance(kept, dict) and kept.get("sha256") == digest(data) else _NOWHERE


class Documents:
    """The spec at `file` and the files its $refs reach under `root`, parsed once each; targets found once each."""

    def __init__(self, file: Path, root: Path | None = None, cache: SpecCache | None = None) -> None:
        self.shown = file
        self.file = file.resolve()
        # The folder referenced files must lie in, symlinks resolved: `..` or a link cannot lead out of it.
        self.root = self.file.parent if root is None else root.resolve()
        self.root_given = root is not None
        self.uri = self.file.as_uri()
        self.found: dict[str, tuple[Any, str]] = {}  # absolute $ref target -> (its contents, its file's URI)
        self.read_files: dict[str, Any] = {}  # file URI -> its contents
        self.registry: Any = None  # `referencing`'s, over read_files: built when walk() cannot follow a $ref
        self.cache = cache
        self.digests: dict[str, str] = {}  # path of each file read -> its content hash (the cache's key)
        self.own: str | None = None  # the URI an OpenAPI 3.2 document's `$self` gives it

    def forget(self) -> None:
        """Drop the parsed files."""
        self.read_files.clear()
        self.found.clear()
        self.registry = None

    def display(self, uri: str) -> str:
        """How messages name a file: as given for the main one, else relative to its folder."""
        if uri == self.uri:
            return str(self.shown)
        path = Path(unquote(urlparse(uri).path))
        try:
            return str(path.relative_to(self.file.parent))
        except ValueError:
            return str(path)

    def read(self, uri: str, name: str) -> Any:
        """Parse the file at `uri`: the spec itself, or a file a $ref names, which must lie under the root.

        A referenced file is never quoted: a syntax error says where only, and a file that holds no
        mapping or list (any text file reads as YAML's one long string) is refused without showing it.
        """
        path = Path(unquote(urlparse(uri).path))
        main = uri == self.uri
        if not main and not path.resolve().is_relative_to(self.root):
            if self.root_given:
                raise SpecError(f"{name} is outside --spec-root {self.root}; not read")
            raise SpecError(f"{name} is outside the spec's folder {self.root}; not read"
                            " (--spec-root DIR lets $refs read files under DIR)")
        if not main and path.exists() and not path.is_file():  # a named pipe would block the read for ever
            raise SpecError(f"{name} is not a regular file; not read")
        try:
            data = read_bytes(path, name)
            if self.cache is not None:
                self.digests[str(path)] = digest(data)
            contents = shipped_value(path, data) if main else _NOWHERE
            if contents is _NOWHERE:
                contents = parse_bytes(data, name, quote=main)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        if not main and not isinstance(contents, (dict, list)):
            raise SpecError(f"{name} holds no YAML or JSON mapping or list, so nothing in it can be referenced")
        self.read_files[uri] = contents
        self.registry = None  # built again, with this file, when next needed
        return contents

    def deref(self, node: Any, base: str, where: str) -> tuple[Any, str]:
        """Follow `$ref`s of a non-schema object; returns the target and its base URI."""
        seen: list[str] = []
        written: list[str] = []
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            target = join(base, node["$ref"])
            written.append(node["$ref"])
            if target in seen:
                raise SpecError(f"{where}: $ref loop: {cut(' -> '.join(written), 3 * MAX_SHOWN)}")
            seen.append(target)
            node, base = self.lookup(target, where, node["$ref"])
        return node, base

    def lookup(self, target: str, where: str, ref: str) -> tuple[Any, str]:
        """The contents at absolute `target` (reading a sibling file on first use) and its file URI."""
        if self.own is not None:  # written with the document's `$self` URI: the file it names (OpenAPI 3.2)
            target = oas32.as_read(target, self.own, self.uri)
        found = self.found.get(target)
        if found is not None:  # a big document names the same targets thousands of times
            return found
        found = self.walk(target)
        if found is not None:
            self.found[target] = found
            return found
        uri, fragment = urldefrag(target)
        if urlparse(uri).scheme != "file":
            raise SpecError(f"{where}: $ref {shown(ref)}: only local files can be referenced (no network)")
        if uri not in self.read_files:
            try:
                self.read(uri, self.display(uri))
            except SpecError as exc:
                raise SpecError(f"{where}: $ref {shown(ref)}: {exc}") from None
        contents = self.resolve(target)
        if contents is _NOWHERE:
            pointer = unquote(fragment) or "/"
            raise SpecError(
                f"{where}: $ref {shown(ref)}: {self.display(uri)} has nothing at {shown(pointer)}{self.near(uri, pointer)}"
            ) from None
        found = self.found[target] = (contents, uri)
        return found

    def resolve(self, target: str) -> Any:
        """The contents at `target` as `referencing` finds them (anchors, pointers walk() does not follow), or
        _NOWHERE. Imported here, not with the module: most documents never need it, and every start would pay."""
        import referencing
        import referencing.exceptions

        if self.registry is None:
            self.registry = referencing.Registry().with_resources(
                (uri, referencing.Resource.opaque(contents)) for uri, contents in self.read_files.items())
        try:
            return self.registry.resolver().lookup(target).contents
        except (referencing.exceptions.Unresolvable, LookupError, TypeError, ValueError):  # `#/x` into a list
            return _NOWHERE

    def walk(self, target: str) -> tuple[Any, str] | None:
        """The contents at `target`, a JSON pointer into a file read already, found step by step (as `referencing`
        finds it, in a tenth of the time: a big document has thousands of targets); None: ask `referencing`."""
        uri, _, fragment = target.partition("#")
        node = self.read_files.get(uri, _NOWHERE)
        if node is _NOWHERE or (fragment and not fragment.startswith("/")):
            return None
        for step in unquote(fragment).split("/")[1:] if fragment else ():
            step = step.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and step in node:
                node = node[step]
            elif isinstance(node, list) and step.isdigit() and (step == "0" or step[0] != "0") and int(step) < len(node):
                node = node[int(step)]
            else:
                return None
        return node, uri

    def near(self, uri: str, pointer: str) -> str:
        """` (did you mean 'Plant'?)` when the last step of a broken pointer is a typo."""
        parent, _, last = pointer.rpartition("/")
        container = self.resolve(f"{uri}#{parent}")
        if not isinstance(container, dict):
            return ""
        hint = did_you_mean(last.replace("~1", "/").replace("~0", "~"), container)
        return f" ({hint})" if hint else ""
