"""The spec cache through load_spec: a hit gives the spec a load gives, and whatever is off is a miss."""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path

import orjson
import pytest

from plantstub._json import inside
from plantstub.config import build_settings
from plantstub.contract import spec_cache
from plantstub.contract.compiled import Checks, places
from plantstub.contract.load import _Loader, load_spec
from plantstub.contract.property_map import PropertyMap
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.spec_json import encode
from plantstub.errors import SpecError
from plantstub.stub import Stub
from tests.helpers import SPECS


@pytest.fixture(autouse=True)
def every_size(monkeypatch):
    """The test documents are small: cache them as if they were big."""
    monkeypatch.setattr(spec_cache, "MIN_CACHED", 0)


@pytest.fixture
def multi(tmp_path: Path) -> Path:
    """A spec with $refs into sibling files, copied where a test may change it."""
    shutil.copytree(SPECS / "multi", tmp_path / "multi")
    return tmp_path / "multi" / "main.yaml"


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("spec-*.json"))


def loads_nothing(monkeypatch) -> None:
    """From here on a load that reads the document fails the test: only a hit may answer."""

    def refuse(self):
        raise AssertionError("the document was read: not a cache hit")

    monkeypatch.setattr(_Loader, "read_spec", refuse)


def test_spec_cache_hit_gives_the_spec_the_load_gave(tmp_path, multi, monkeypatch):
    cache = tmp_path / "cache"
    loaded = load_spec(multi, cache=cache)
    assert len(entries(cache)) == 1
    loads_nothing(monkeypatch)
    cached = load_spec(multi, cache=cache)
    assert encode(cached) == encode(loaded)
    assert [op.label for op in cached.operations] == [op.label for op in loaded.operations]


def test_spec_cache_keeps_one_defs_mapping_shared_by_every_bundle(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    load_spec(SPECS / "greenhouse-3.1.json", cache=cache)
    loads_nothing(monkeypatch)
    spec = load_spec(SPECS / "greenhouse-3.1.json", cache=cache)
    roots = [m.schema for op in spec.operations for m in (op.body or {}).values()]
    roots += [m.schema for op in spec.operations for r in op.responses.values() for m in r.content.values()]
    defs = {id(r["$defs"]) for r in roots if isinstance(r, dict) and "$defs" in r}
    assert len(defs) == 1


def test_spec_cache_misses_when_a_referenced_file_changes(tmp_path, multi):
    cache = tmp_path / "cache"
    before = load_spec(multi, cache=cache)
    units = multi.parent / "schemas" / "units.yaml"
    units.write_text(units.read_text().replace("minimum: 0", "minimum: 5"))
    after = load_spec(multi, cache=cache)
    assert encode(after) != encode(before)
    assert "minimum: 5" in units.read_text() and '"minimum":5' in entries(cache)[0].read_text()
    assert encode(load_spec(multi, cache=cache)) == encode(after)


def test_spec_cache_misses_when_a_referenced_file_is_gone_and_the_loader_says_why(tmp_path, multi):
    cache = tmp_path / "cache"
    load_spec(multi, cache=cache)
    (multi.parent / "parameters.yaml").unlink()
    with pytest.raises(SpecError) as refused:
        load_spec(multi, cache=cache)
    assert "parameters.yaml: no such file" in str(refused.value)


@pytest.mark.parametrize(
    ("damage", "label"),
    [
        (lambda raw: raw[: len(raw) // 2], "truncated"),
        (lambda raw: b"\x00\xff garbage", "not JSON"),
        (lambda raw: b'{"format": 1}\n{}', "foreign header"),
        (lambda raw: raw.partition(b"\n")[0] + b"\n" + orjson.dumps({"defs": 1}), "payload hash differs"),
        (lambda raw: b"", "empty"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_spec_cache_ignores_a_damaged_entry_and_writes_it_again(tmp_path, multi, damage, label):
    cache = tmp_path / "cache"
    expected = encode(load_spec(multi, cache=cache))
    (entry,) = entries(cache)
    whole = entry.read_bytes()
    entry.write_bytes(damage(whole))
    assert encode(load_spec(multi, cache=cache)) == expected
    assert entry.read_bytes() == whole


def test_spec_cache_reads_a_forged_payload_as_a_miss_not_a_crash(tmp_path, multi):
    cache = tmp_path / "cache"
    expected = encode(load_spec(multi, cache=cache))
    (entry,) = entries(cache)
    head = orjson.loads(entry.read_bytes().partition(b"\n")[0])
    payload = orjson.dumps({**expected, "schemas": [[{}, 99]]})  # a `$defs` index out of range
    head["payload"] = spec_cache.digest(payload)
    entry.write_bytes(orjson.dumps(head) + b"\n" + payload)
    assert encode(load_spec(multi, cache=cache)) == expected


def json_answer_spec(path: Path, media: str) -> Path:
    """A spec of one operation answering 200 with JSON, `media` the line under its media type."""
    path.write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n"
                    "        '200':\n          description: ok\n          content:\n            application/json:\n"
                    f"              {media}\n")
    return path


def test_spec_cache_never_keeps_a_spec_with_errors(tmp_path):
    cache = tmp_path / "cache"
    spec = json_answer_spec(tmp_path / "bad.yaml", "schema: {$ref: '#/components/schemas/Nope'}")
    for _ in range(2):
        with pytest.raises(SpecError) as refused:
            load_spec(spec, cache=cache)
        assert str(refused.value).startswith(f"cannot use spec {spec}: paths./a.get.responses.200")
    assert entries(cache) == []


def test_spec_cache_hit_says_the_warnings_again(tmp_path, caplog, monkeypatch):
    cache = tmp_path / "cache"
    spec = tmp_path / "warned.yaml"
    spec.write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /search?q={q}:\n    get:\n"
                    "      responses: {'200': {description: ok}}\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n")
    first = load_spec(spec, cache=cache)
    loads_nothing(monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        second = load_spec(spec, cache=cache)
    assert second.warnings == first.warnings != ()
    assert [r.getMessage() for r in caplog.records] == [f"plantstub: spec {spec}: {w}" for w in first.warnings]


@pytest.mark.parametrize("example", [".nan", "-.inf", "1e999", "[1, 18446744073709551616]", "{a: -9223372036854775809}"])
def test_spec_cache_does_not_keep_a_value_its_reader_would_change(tmp_path, example):
    cache = tmp_path / "cache"
    load_spec(json_answer_spec(tmp_path / "odd.yaml", f"example: {example}"), cache=cache)
    assert entries(cache) == []


@pytest.mark.parametrize("example", ["18446744073709551615", "-9223372036854775808", "'12345678901234567890123'"])
def test_spec_cache_keeps_the_values_its_reader_reads_exactly(tmp_path, monkeypatch, example):
    cache = tmp_path / "cache"
    spec = json_answer_spec(tmp_path / "wide.yaml", f"example: {example}")
    loaded = load_spec(spec, cache=cache)
    loads_nothing(monkeypatch)
    cached = load_spec(spec, cache=cache)
    assert cached.operations[0].responses["200"].content["application/json"].example == \
        loaded.operations[0].responses["200"].content["application/json"].example


def test_spec_cache_off_writes_nothing(tmp_path, multi, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    load_spec(multi, cache=False)
    monkeypatch.setenv("PLANTSTUB_SPEC_CACHE", "off")
    load_spec(multi)
    assert not (tmp_path / "xdg").exists()


def test_spec_cache_default_folder_is_under_xdg_cache_home(tmp_path, multi, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("PLANTSTUB_SPEC_CACHE")
    load_spec(multi)
    assert len(entries(tmp_path / "xdg" / "plantstub")) == 1


def test_spec_cache_skips_a_spec_under_the_size_it_pays_for(tmp_path, multi, monkeypatch):
    monkeypatch.setattr(spec_cache, "MIN_CACHED", multi.stat().st_size + 1)
    load_spec(multi, cache=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_spec_cache_keeps_the_entries_used_last(tmp_path, monkeypatch):
    monkeypatch.setattr(spec_cache, "MAX_ENTRIES", 2)
    cache = tmp_path / "cache"
    names = ["greenhouse-3.0.yaml", "greenhouse-3.1.json", "tree.yaml"]
    for name in names:
        shutil.copy(SPECS / name, tmp_path / name)
    load_spec(tmp_path / names[0], cache=cache)
    first = entries(cache)
    load_spec(tmp_path / names[1], cache=cache)
    load_spec(tmp_path / names[0], cache=cache)  # a hit: used last now
    stale = cache / ".spec-crashed.tmp"
    stale.write_bytes(b"{")
    os.utime(stale, (0, 0))
    load_spec(tmp_path / names[2], cache=cache)
    kept = entries(cache)
    assert len(kept) == 2 and first[0] in kept
    assert not stale.exists()


def test_spec_cache_concurrent_loads_write_one_whole_entry(tmp_path, multi):
    cache = tmp_path / "cache"
    expected = {**encode(load_spec(multi, cache=False)), "property_map": None}  # walked when served, not before
    results: list[dict] = []

    def load() -> None:
        results.append({**encode(load_spec(multi, cache=cache)), "property_map": None})

    threads = [threading.Thread(target=load) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 6
    assert len(entries(cache)) == 1 and list(cache.glob(".spec-*.tmp")) == []
    assert {**encode(load_spec(multi, cache=cache)), "property_map": None} == expected


def test_spec_cache_unwritable_folder_warns_and_loads(tmp_path, multi, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        spec = load_spec(multi, cache=blocker / "cache")
    assert spec.operations
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [f"plantstub: spec cache {blocker / 'cache'}: cannot write"]


def test_spec_cache_folder_given_to_stub_is_the_one_used(tmp_path, multi):
    cache = tmp_path / "cache"
    with Stub(spec=multi, spec_cache=cache):
        pass
    with Stub(spec=multi, spec_cache="off"):
        pass
    assert len(entries(cache)) == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [("off", False), ("OFF", False), ("/tmp/specs", Path("/tmp/specs")), ("", True)],
    ids=["off", "OFF", "folder", "unset"],
)
def test_spec_cache_setting_from_the_environment(value, expected):
    assert build_settings(env={"PLANTSTUB_SPEC_CACHE": value}).spec_cache == expected


@pytest.mark.parametrize("package", ["jsonschema-rs", "pyyaml"])
def test_spec_cache_misses_under_another_engine_release(tmp_path, multi, monkeypatch, package):
    """Bundling keeps or sets aside each pattern by what the installed jsonschema-rs compiles: an entry written
    under one release is never read under another (nor under another PyYAML or Python)."""
    cache = tmp_path / "cache"
    load_spec(multi, cache=cache)
    real = spec_cache.version
    monkeypatch.setattr(spec_cache, "version", lambda name: "0.0-other" if name == package else real(name))
    load_spec(multi, cache=cache)
    assert len(entries(cache)) == 2  # a miss: written again under its own key


def _schemas_in(node: object) -> list[dict]:
    """Every mapping in `node`, itself included (schemas, and the mappings of values beside them)."""
    return [item for item in inside(node) if isinstance(item, dict)]


@pytest.mark.parametrize("name", ["real-world.yaml", "greenhouse-3.1.json", "multi/main.yaml", "tree.yaml",
                                  "overlapping-oneof.yaml"])
def test_spec_cache_keeps_the_property_map_a_walk_of_the_spec_read_back_makes(tmp_path, monkeypatch, name):
    """The shared validator's property map comes back with the spec: the places and `$defs` entries at once, the
    rest walked on first need, naming every schema as walking the spec read back does."""
    cache = tmp_path / "cache"
    load_spec(SPECS / name, cache=cache)
    loads_nothing(monkeypatch)
    spec = load_spec(SPECS / name, cache=cache)
    roots = list(places(spec))
    kept, walked = spec.property_map, PropertyMap.of(roots)
    assert kept is not None and kept.pending
    assert kept.core == walked.core and kept.pointers == {}
    defs = next(r["$defs"] for r in roots if isinstance(r, dict) and "$defs" in r)
    assert [kept.names.get(r) for r in roots] == [walked.names.get(r) for r in roots]
    assert [kept.names.get(d) for d in defs.values()] == [walked.names.get(d) for d in defs.values()]
    schemas = [s for root in roots for s in _schemas_in(root)]
    # A bare `$ref` (checked as its target) and a schema with no `$ref` in it are named without the walk.
    plain = [s for s in schemas if "$ref" not in str(s) or (len(s) == 1 and str(s.get("$ref")).startswith("#/$defs/"))]
    assert plain and [kept.name(s, roots) for s in plain] == [walked.name(s, roots) for s in plain]
    assert kept.pending
    assert [kept.name(s, roots) for s in schemas] == [walked.name(s, roots) for s in schemas]
    assert not kept.pending and kept.pointers == walked.pointers


def _older(raw: bytes) -> bytes:
    """The entry as the plantstub before the property map wrote it: format 5, no map, its hash right."""
    head, _, payload = raw.partition(b"\n")
    data = orjson.loads(payload)
    del data["property_map"]
    older = orjson.dumps(data)
    return orjson.dumps({**orjson.loads(head), "format": 5, "payload": spec_cache.digest(older)}) + b"\n" + older


def test_spec_cache_reads_an_older_plantstubs_entry_as_a_miss_and_writes_it_again(tmp_path, multi):
    cache = tmp_path / "cache"
    expected = encode(load_spec(multi, cache=cache))
    (entry,) = entries(cache)
    whole = entry.read_bytes()
    entry.write_bytes(_older(whole))
    assert encode(load_spec(multi, cache=cache)) == expected
    assert entry.read_bytes() == whole


def _forge(entry: Path, change) -> None:
    """Change the entry's property map, its hash made right."""
    head, _, payload = entry.read_bytes().partition(b"\n")
    data = orjson.loads(payload)
    change(data["property_map"])
    forged = orjson.dumps(data)
    entry.write_bytes(orjson.dumps({**orjson.loads(head), "payload": spec_cache.digest(forged)}) + b"\n" + forged)


def _swap_places(mapped: list) -> None:
    (first, name_a), (second, name_b) = mapped[1][:2]
    mapped[1][:2] = [[first, name_b], [second, name_a]]


def test_spec_cache_property_map_named_otherwise_checks_as_each_schema_compiled_alone(tmp_path):
    """A forged map (its hash made right) naming the places otherwise: read, never a crash, and every verdict that
    of the schema compiled alone (what a walk of the spec does not find as read back is compiled alone)."""
    path = SPECS / "overlapping-oneof.yaml"
    cache = tmp_path / "cache"
    load_spec(path, cache=cache)
    (entry,) = entries(cache)
    _forge(entry, _swap_places)
    spec = load_spec(path, cache=cache)
    roots = list(places(spec))
    checks = Checks(roots, prebuilt=spec.property_map)
    defs = next(r["$defs"] for r in roots if isinstance(r, dict) and "$defs" in r)
    shared = 0
    for schema in [*roots, *(s for root in roots for s in _schemas_in(root) if "$defs" not in s)]:
        if not isinstance(schema, dict) or not ({"type", "$ref", "oneOf", "items"} & schema.keys()):
            continue
        check = checks.check(schema, defs)
        shared += check.skip
        alone = SchemaCheck(schema if "$defs" in schema else {**schema, "$defs": defs}, "test")
        for value in ({}, [], "x", 5, {"kind": "a", "name": "Fern"}, [{"kind": "b"}]):
            assert check.errors(value, "body") == alone.errors(value, "body"), (schema, value)
    assert shared and spec.property_map is not None and spec.property_map.pointers == {}


def test_spec_cache_property_map_naming_two_schemas_as_one_is_a_miss(tmp_path, multi):
    cache = tmp_path / "cache"
    expected = encode(load_spec(multi, cache=cache))
    (entry,) = entries(cache)
    whole = entry.read_bytes()
    _forge(entry, lambda mapped: mapped[1].__setitem__(0, [mapped[1][0][0], next(iter(mapped[0].values()))]))
    assert encode(load_spec(multi, cache=cache)) == expected
    assert entry.read_bytes() == whole


def test_a_package_importable_without_its_metadata_keys_its_entries_as_unknown(monkeypatch):
    """PyYAML or jsonschema-rs vendored or copied without their dist-info: the cache still works (its own entries),
    rather than every big spec failing to load."""
    import importlib.metadata

    from plantstub.contract import spec_cache

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert spec_cache.version("pyyaml") == "unknown"
