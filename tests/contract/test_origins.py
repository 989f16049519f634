"""Converted places back to the places the user wrote, with their lines (contract/origins.py)."""

from __future__ import annotations

import json

import pytest

from plantstub.contract.origins import Origins, shown_at

YAML = """\
swagger: "2.0"
paths:
  /pets.json:
    post:
      parameters:
        - name: body
          in: body
          schema:
            type: object
            properties:
              name: {type: string}
        - &alias {name: q, in: query}
        - *alias
      responses:
        "200": {description: ok}
        ? [complex, key]
        : ignored
"""


@pytest.fixture(params=["yaml", "json"])
def origins(request, tmp_path) -> Origins:
    import yaml

    path = tmp_path / f"api.{request.param}"
    if request.param == "yaml":
        path.write_text(YAML)
    else:
        doc = yaml.safe_load(YAML.split("        ? [")[0])
        path.write_text(json.dumps(doc, indent=1))
    found = Origins(path, str(path))
    found.map("paths./pets.json.post.requestBody.content.application/json.schema",
              ("paths", "/pets.json", "post", "parameters", 0, "schema"))
    found.map("paths./pets.json.post.parameters[0]", ("paths", "/pets.json", "post", "parameters", 1))
    return found


def test_origins_location_of_a_converted_place(origins):
    text, steps = origins.original("paths./pets.json.post.requestBody.content.application/json.schema.properties.name:"
                                   " not good")
    assert text == "paths./pets.json.post.parameters[0].schema.properties.name: not good"
    assert steps == ("paths", "/pets.json", "post", "parameters", 0, "schema", "properties", "name")


def test_origins_lines_yaml_and_json(origins):
    deep = ("paths", "/pets.json", "post", "parameters", 0, "schema", "properties", "name")
    second = ("paths", "/pets.json", "post", "parameters", 1)
    lines = origins.lines({deep, second, ("paths", "/nowhere"), ("swagger",), ("paths", "/pets.json", "responses")})
    json_file = origins.shown.endswith(".json")
    assert lines[deep] == (13 if json_file else 11)
    assert lines[second] == (19 if json_file else 12)
    assert lines[("paths", "/nowhere")] == (3 if json_file else 2)  # the deepest step the file holds: `paths`
    assert lines[("swagger",)] == (2 if json_file else 1)


def test_origins_placed_messages(origins):
    placed = origins.placed(["paths./pets.json.post.parameters[0]: (said about q)",
                             ("paths./pets.json.post: the converter's own", ("paths", "/pets.json", "post")),
                             "no place at all"])
    json_file = origins.shown.endswith(".json")
    assert placed == [f"{origins.shown}:{19 if json_file else 12}: paths./pets.json.post.parameters[1]: (said about q)",
                      f"{origins.shown}:{5 if json_file else 4}: paths./pets.json.post: the converter's own",
                      "no place at all"]


def test_origins_file_gone_keeps_the_locations(tmp_path):
    origins = Origins(tmp_path / "gone.yaml", "gone.yaml")
    assert origins.placed(["paths./a.get: x"]) == ["paths./a.get: x"]


@pytest.mark.parametrize(
    ("steps", "shown"),
    [(("paths", "/a", "get", "parameters", 0, "schema"), "paths./a.get.parameters[0].schema"), ((), ""),
     (("securityDefinitions", "key"), "securityDefinitions.key")],
)
def test_shown_at(steps, shown):
    assert shown_at(steps) == shown
