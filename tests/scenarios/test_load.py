"""Scenario loading: exact `file:line: path: message` for every broken file, the model, the JSON Schema."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plantstub._json import NO_BODY
from plantstub.contract.load import load_spec
from plantstub.errors import ScenarioError
from plantstub.scenarios.load import (
    ScenarioLoadError,
    builtin_folder,
    load_builtin_scenarios,
    load_scenario_file,
    load_scenarios,
    scenario_schema,
)
from plantstub.scenarios.model import Criteria, Reply, Rule, Scenario
from tests.helpers import REPO, SCENARIO_DATA, TREES, same, write

BUILTIN = builtin_folder()
SPEC = load_spec()

LOOP = "an alias inside the anchored value it stands for: a loop, which JSON data cannot hold"
BOMB = "aliases expand to more than the 100,000 values plantstub reads"

BROKEN = [
    ("unknown-key.yaml", "7: rules[0].match: unknown key 'heders' (did you mean 'headers'?)"),
    ("unknown-top-level-key.yaml", "2: unknown key 'descripton' (did you mean 'description'?)"),
    ("wrong-type.yaml", "5: rules[0].times: 'once' is not of type 'integer'"),
    ("status-out-of-range.yaml", "6: rules[0].reply.status: 999 is greater than the maximum of 599"),
    ("status-not-declared.yaml",
     "8: rules[0].replies[1].status: 418 is not declared for POST /plants (declared: 200, 400);"
     " add `off_contract: true` to this rule to serve it anyway"),
    ("body-breaks-schema.yaml",
     "8: rules[0].reply.body.error: 'closed' is not of type 'integer' (POST /plants response 400)"),
    ("text-body.yaml",
     "5: rules[0].reply.body: a string body is sent as text/plain, which POST /plants response 200 does not"
     " declare (declared: application/json); set a Content-Type header or add `off_contract: true` to this"
     " rule to serve it anyway"),
    ("bad-yaml.yaml", re.compile(r"5: not valid YAML: \S.*")),  # the reason after ours is libyaml's
    ("duplicate-key.yaml", "8: not valid YAML: duplicate key 'status' (first at line 6)"),
    ("empty.yaml", "1: the file is empty (expected `description:` and `rules:`)"),
    ("not-a-mapping.yaml", "1: a scenario file holds a mapping (description:, rules:), not a list"),
    ("no-reply.yaml",
     "4: rules[0]: has no `reply:`; add `reply:` (one answer) or `replies:` (successive answers, the last repeats)"),
    ("reply-and-replies.yaml",
     "6: rules[0]: has both `reply:` and `replies:`; keep one (`replies:` for answers that change per call)"),
    ("unknown-fault.yaml",
     "5: rules[0].reply.fault: 'conection_reset' is not one of ['connection_reset', 'empty_reply',"
     " 'malformed_body'] (did you mean 'connection_reset'?)"),
    ("unknown-template-root.yaml",
     "7: rules[0].reply.body.name: unknown template root 'config' in '{{ config.x }}' (expected request.body,"
     " request.headers, request.query, request.path or request.method)"),
    ("unknown-request-field.yaml",
     "7: rules[0].reply.headers.X-Name: unknown request field 'bodyy' in '{{ request.bodyy.name }}'"
     " (did you mean 'request.body'?)"),
    ("python-expression.yaml",
     "6: rules[0].reply.body: unknown template root '__import__' in \"{{ __import__('os').system('true') }}\""
     " (expected request.body, request.headers, request.query, request.path or request.method)"),
    ("unmatched-path.yaml", "8: rules[2].match.path: /plantz matches no path in the spec (paths: /plants)"),
    ("times-below-replies.yaml",
     "4: rules[0].times: is 1 but 2 replies are listed, so replies[1] would never answer; raise `times` or"
     " remove those replies"),
    ("method-not-on-path.yaml", "4: rules[0].match.method: GET is not an operation of /plants (methods: POST)"),
]


@pytest.fixture
def in_scenarios(monkeypatch):
    """Run from tests/data/scenarios, so errors name files as `broken/x.yaml`."""
    monkeypatch.chdir(SCENARIO_DATA)


def located(where: str, expected: str | re.Pattern[str]) -> str | re.Pattern[str]:
    """`where` followed by the expected text or pattern."""
    return re.compile(re.escape(where) + expected.pattern) if isinstance(expected, re.Pattern) else where + expected


def errors_of(path: Path, spec=SPEC) -> list[str]:
    with pytest.raises(ScenarioLoadError) as caught:
        load_scenario_file(path, spec)
    return [str(e) for e in caught.value.errors]


@pytest.mark.parametrize(("name", "expected"), BROKEN, ids=[name.removesuffix(".yaml") for name, _ in BROKEN])
def test_load_scenario_file_names_file_line_path_and_problem(in_scenarios, name, expected):
    assert same(errors_of(Path("broken", name)), [located(f"broken/{name}:", expected)])


def test_load_scenario_file_pins_every_broken_file():
    assert sorted(p.name for p in (SCENARIO_DATA / "broken").iterdir()) == sorted(name for name, _ in BROKEN)


def test_load_scenarios_reports_every_broken_file_in_order(in_scenarios):
    scenarios, errors = load_scenarios(Path("broken"), SPEC)
    assert scenarios == {}
    assert same([str(e) for e in errors], [located(f"broken/{name}:", expected) for name, expected in sorted(BROKEN)])


def test_load_scenarios_duplicate_names_name_both_files(in_scenarios):
    scenarios, errors = load_scenarios(Path("duplicates"), SPEC)
    assert list(scenarios) == ["cactus"]
    assert scenarios["cactus"].file == "duplicates/a-cactus.yaml"
    assert [str(e) for e in errors] == [
        "duplicates/b-cactus.yaml:3: name: scenario 'cactus' is already defined by duplicates/a-cactus.yaml;"
        " give one of them another `name:`"
    ]


def test_scenario_load_error_is_a_scenario_error_listing_every_problem(tmp_path):
    path = write(tmp_path, "many.yaml", "rules:\n  - match: {methd: POST}\n    reply: {status: 700, delay_ms: -1}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario_file(path, SPEC)
    assert isinstance(caught.value, ScenarioLoadError)
    assert str(caught.value) == "\n".join([
        f"{path}:2: rules[0].match: unknown key 'methd' (did you mean 'method'?)",
        f"{path}:3: rules[0].reply.delay_ms: -1 is less than the minimum of 0",
        f"{path}:3: rules[0].reply.status: 700 is greater than the maximum of 599",
    ])
    assert (caught.value.file, caught.value.line, caught.value.path) == (str(path), 2, "rules[0].match")


def test_load_scenario_file_product_example_gives_the_model():
    path = REPO / "scenarios" / "product-example.yaml"
    assert load_scenario_file(path, SPEC) == Scenario(
        name="product-example",
        description="Creating a cactus fails once, then works.",
        file=str(path),
        rules=(
            Rule(0, Criteria("POST", "/plants", {"x-tenant": "acme"}, {"dry_run": "1"}, {"name": "Cactus"}, 5), (
                Reply(400, {}, {"error": 503, "message": "Store is closed"}, line=12),
                Reply(200, {}, {"name": "{{ request.body.name }}", "tag": "succulent"}, line=14),
            ), None, False, 5),
            Rule(1, Criteria(None, "/plants", {}, {}, {"tag": "poison"}, 16), (
                Reply(200, {"X-Trace": "abc"}, {"name": "{{ request.body.name }}"}, 250, line=18),
            ), 1, False, 16),
            Rule(2, Criteria(None, "/plants", {}, {}, {"name": "Gremlin"}, 23), (
                Reply(500, {}, "not json at all", line=25),
            ), None, True, 23),
            Rule(3, Criteria(None, "/plants", {}, {}, {"name": "Unplugged"}, 26), (
                Reply(200, {}, NO_BODY, fault="connection_reset", line=27),
            ), None, False, 26),
        ),
        validate_requests=True,
    )


def test_rule_label_is_its_location():
    rule = load_scenario_file(BUILTIN / "flaky.yaml", SPEC).rules[0]
    assert rule.label == "rules[0]"
    assert [r.status for r in rule.replies] == [400, 200]


def test_load_scenarios_good_folder(in_scenarios):
    scenarios, errors = load_scenarios(Path("good"), SPEC)
    assert errors == []
    assert sorted(scenarios) == ["anchors", "faults-and-off-contract", "minimal", "templated-replies"]
    minimal = scenarios["minimal"]
    assert (minimal.description, minimal.rules, minimal.validate_requests) == ("", (), True)
    templated = scenarios["templated-replies"]
    assert templated.validate_requests is False
    # Header names are stored lower-case; numbers and booleans are matched as their text.
    assert templated.rules[0].match.headers == {"x-count": "5", "x-debug": "true"}
    assert templated.rules[0].match.query == {"page": "2"}
    moss = scenarios["anchors"].rules[1].replies[0]
    assert (moss.status, moss.body, moss.delay_ms, moss.line) == (400, {"error": 400, "message": "Closed"}, 100, 9)


def test_load_scenarios_repo_examples_pass():
    scenarios, errors = load_scenarios(REPO / "scenarios", SPEC)
    assert errors == []
    assert sorted(scenarios) == ["product-example"]
    builtins, unfit = load_builtin_scenarios(SPEC)
    assert (sorted(builtins), unfit) == (["dropped-connection", "flaky", "slow", "store-closed"], {})
    assert all(s.description for s in [*scenarios.values(), *builtins.values()])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{error: "{{ request.body.id }}", message: m}', []),
        ('"{{ request.body }}"', []),
        ('{error: "#{{ request.body.id }}", message: m}',
         ["3: rules[0].reply.body.error: '#{{ request.body.id }}' is not of type 'integer'"
          " (POST /plants response 400)"]),
        ('{error: 1, message: {text: "{{ request.body.name }}"}}',
         ["3: rules[0].reply.body.message: {'text': '{{ request.body.name }}'} is not of type 'string'"
          " (POST /plants response 400)"]),
        ('{error: 1, message: "{{ request.body }}"}',
         ["3: rules[0].reply.body.message: {{ request.body }} gives an object (as the request schema of POST /plants"
          " says), but POST /plants response 400 needs a string here; put it inside text (\"Plant {{ request.body }}\")"
          " to send it as a string, or add `off_contract: true` to this rule to serve it anyway"]),
        ('{error: "{{ request.headers.X-Code }}", message: m}',
         ["3: rules[0].reply.body.error: {{ request.headers.X-Code }} gives a string (as the request schema of"
          " POST /plants says), but POST /plants response 400 needs an integer here; put it inside text"
          " (\"Plant {{ request.headers.X-Code }}\") to send it as a string, or add `off_contract: true` to this rule"
          " to serve it anyway"]),
        ('{error: 1, message: "{{ request.body.nme }}"}',
         ["3: rules[0].reply.body.message: {{ request.body.nme }}: the request body of POST /plants: 'nme' is not"
          " declared (did you mean 'name'? declared: name, tag, id); add `off_contract: true` to this rule to serve"
          " it anyway"]),
        ('{error: 1, message: "{{ request.body.name }}", extra: "{{ request.query.x }}"}', []),
    ],
    ids=["lone-placeholder-of-a-fitting-type", "whole-body", "placeholder-in-text-is-a-string",
         "placeholder-inside-object", "object-where-a-string-is-needed", "header-is-text", "undeclared-request-field",
         "fitting-types"],
)
def test_load_scenario_file_checks_the_type_of_lone_placeholders(tmp_path, body, expected):
    text = f"rules:\n  - match: {{method: POST}}\n    reply: {{status: 400, body: {body}}}\n"
    path = write(tmp_path, "t.yaml", text)
    if expected:
        assert errors_of(path) == [f"{path}:{line}" for line in expected]
    else:
        load_scenario_file(path, SPEC)


@pytest.mark.parametrize(
    ("match", "reply", "expected"),
    [
        ("{path: '/trees/{id}', method: GET}", "{status: 200, body: {height: 3}}", None),
        ("{path: /trees/42, method: GET}", "{status: 404}", None),
        ("{path: /trees/42, method: DELETE}", "{status: 204}", None),
        ("{path: /trees/42}", "{status: 200, body: {height: 3}}", None),  # answers GET only: see below
        ("{method: GET}", "{body: {height: tall}}",
         "rules[0].reply.body.height: 'tall' is not of type 'integer' (GET /trees/{treeId} response 200)"),
        ("{method: GET}", "{status: 204}",
         "rules[0].reply.status: 204 is not declared for GET /trees/{treeId} (declared: 200, 404);"
         " add `off_contract: true` to this rule to serve it anyway"),
        ("{method: DELETE}", "{body: {}}",
         "rules[0].reply.status: 200 (the default status) is not declared for DELETE /trees/{treeId}"
         " (declared: 204); add `off_contract: true` to this rule to serve it anyway"),
        ("{method: DELETE}", "{status: 204, body: {}}",
         "rules[0].reply.body: DELETE /trees/{treeId} response 204 declares no body; remove it or add"
         " `off_contract: true` to this rule to serve it anyway"),
        ("{method: PATCH}", "{status: 200}",
         "rules[0].match.method: PATCH matches no operation in the spec (methods: DELETE, GET)"),
        ("{path: /trees}", "{status: 200}",
         "rules[0].match.path: /trees matches no path in the spec (paths: /trees/{treeId})"),
        ("{method: GET}", "{status: 200, headers: {content-type: text/csv}, body: 'a,b'}",
         "rules[0].reply.headers.content-type: 'text/csv' is not declared for GET /trees/{treeId} response 200"
         " (declared: application/json); add `off_contract: true` to this rule to serve it anyway"),
    ],
    ids=["template-path", "literal-path", "no-body-status", "fits-one-operation-of-path", "bad-body",
         "undeclared-status", "default-status", "body-where-none-declared", "unknown-method", "unknown-path",
         "undeclared-content-type"],
)
def test_load_scenario_file_checks_replies_against_every_operation_they_can_match(tmp_path, match, reply, expected):
    spec = load_spec(write(tmp_path, "trees.yaml", TREES))
    path = write(tmp_path, "s.yaml", f"rules:\n  - match: {match}\n    reply: {reply}\n")
    if expected is None:
        load_scenario_file(path, spec)
    else:
        line = 2 if ".match." in expected else 3
        assert errors_of(path, spec) == [f"{path}:{line}: {expected}"]


@pytest.mark.parametrize(
    ("match", "answers"),
    [("{path: /trees/42}", frozenset({"GET /trees/{treeId}"})), ("{path: /trees/42, method: GET}", None)],
    ids=["no-method", "method"],
)
def test_load_scenario_file_narrows_a_rule_without_method_to_the_operations_it_fits(tmp_path, match, answers):
    spec = load_spec(write(tmp_path, "trees.yaml", TREES))
    path = write(tmp_path, "s.yaml", f"rules:\n  - match: {match}\n    reply: {{status: 200, body: {{height: 3}}}}\n")
    assert load_scenario_file(path, spec).rules[0].answers == answers


def test_load_scenario_file_refuses_a_rule_without_method_that_fits_no_operation(tmp_path):
    spec = load_spec(write(tmp_path, "trees.yaml", TREES))
    path = write(tmp_path, "s.yaml", "rules:\n  - match: {path: /trees/42}\n    reply: {status: 201}\n")
    assert errors_of(path, spec) == [
        f"{path}:3: rules[0].reply.status: 201 is not declared for {op} (declared: {declared}); add `off_contract: true`"
        " to this rule to serve it anyway" for op, declared in [("DELETE /trees/{treeId}", "204"),
                                                                 ("GET /trees/{treeId}", "200, 404")]
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rules:\n  - reply:\n      body: !!set {a, b}\n", "3: rules[0].reply.body: a set is not a JSON value"),
        ("rules:\n  - reply:\n      body: !!python/object:os.system ls\n",
         re.compile(r"3: not valid YAML: .*'tag:yaml.org,2002:python/object:os.system'")),  # PyYAML's words
        ("a: &a [*a, *a]\n", f"1: {LOOP}"),
        ("description: x\n---\ndescription: y\n",
         re.compile(r"2: not valid YAML: \S.*")),  # PyYAML's reason
        ("rules:\n  - match:\n    reply: {}\n", "2: rules[0].match: null is not of type 'object'"),
    ],
    ids=["set", "python-tag", "self-reference", "two-documents", "empty-match"],
)
def test_load_scenario_file_accepts_only_json_shaped_yaml(tmp_path, text, expected):
    path = write(tmp_path, "s.yaml", text)
    text = expected.pattern if isinstance(expected, re.Pattern) else expected
    assert same(errors_of(path), [located(f"{path}:" if text[0].isdigit() else f"{path}: ", expected)])


def test_load_scenario_file_alias_bomb_is_refused_quickly(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    assert errors_of(path) == [f"{path}:5: {BOMB}"]


def test_load_scenarios_reads_yaml_and_yml_only_sorted_not_recursive(tmp_path):
    write(tmp_path, "b.yml", "rules: []\n")
    write(tmp_path, "a.yaml", "rules: []\n")
    write(tmp_path, "notes.txt", "not a scenario")
    write(tmp_path, ".#a.yaml", "editor lock file")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "c.yaml", "rules: []\n")
    scenarios, errors = load_scenarios(tmp_path, SPEC)
    assert (list(scenarios), errors) == (["a", "b"], [])


def test_load_scenarios_refuses_links_outside_the_folder(tmp_path):
    folder, outside = tmp_path / "scenarios", tmp_path / "secret.yaml"
    folder.mkdir()
    outside.write_text("rules: []\n")
    (folder / "leak.yaml").symlink_to(outside)
    (folder / "broken-link.yaml").symlink_to(tmp_path / "nothing.yaml")
    write(folder, "real.yaml", "rules: []\n")
    (folder / "alias.yaml").symlink_to(folder / "real.yaml")
    scenarios, errors = load_scenarios(folder, SPEC)
    assert sorted(scenarios) == ["alias", "real"]
    assert [str(e) for e in errors] == [
        f"{folder}/broken-link.yaml: links to {tmp_path / 'nothing.yaml'}, outside {folder}; not read",
        f"{folder}/leak.yaml: links to {outside}, outside {folder}; not read",
    ]


def test_load_scenarios_missing_folder_is_an_error(tmp_path):
    scenarios, errors = load_scenarios(tmp_path / "nope", SPEC)
    assert scenarios == {}
    # in brackets, the operating system's reason
    assert same([str(e) for e in errors], [re.compile(re.escape(f"{tmp_path / 'nope'}: cannot read the folder (") + r".+\)")])


def test_schema_describes_every_property():
    def properties(node):
        if isinstance(node, dict):
            yield from node.get("properties", {}).items()
            for value in node.values():
                yield from properties(value)

    found = list(properties(scenario_schema()))
    assert len(found) == 29  # 19, the store's state:, a rule's webhooks: (name, body, delay_ms), 5 matchers
    assert [name for name, sub in found if not (sub.get("title") and sub.get("description"))] == []


def test_repo_examples_name_the_schema_for_editors():
    for folder in (REPO / "scenarios", BUILTIN):
        for path in sorted(folder.glob("*.yaml")):
            first = path.read_text().splitlines()[0]
            target = (path.parent / first.removeprefix("# yaml-language-server: $schema=")).resolve()
            assert target.name == "scenario.schema.json" and target.is_file(), path


PLACEHOLDER_SPEC = """
openapi: 3.1.0
info: {title: T, version: "1"}
paths:
  /things:
    get:
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Thing"}}}}}
    post:
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/NewThing"}}}}
      responses: {"200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Thing"}}}}}
  /pets:
    post:
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                oneOf:
                  - {type: object, required: [s], properties: {s: {type: string}}, additionalProperties: false}
                  - {type: object, required: [n], properties: {n: {type: integer}}, additionalProperties: false}
  /closed:
    post:
      requestBody:
        content: {application/json: {schema: {type: object, properties: {a: {type: string}}, additionalProperties: false}}}
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
components:
  schemas:
    NewThing:
      type: object
      properties: {name: {type: string}, size: {type: integer}, open: {type: object, properties: {a: {type: string}}}}
    Thing: {type: object, required: [name], properties: {name: {type: string}, size: {type: integer}, note: {}}}
    Pet:
      type: object
      properties: {kind: {type: string}}
      oneOf:
        - {type: object, properties: {bark: {type: string}}}
        - {type: object, properties: {meow: {type: integer}}}
"""


@pytest.mark.parametrize(
    "rule",
    [
        # A field declared in one branch of a oneOf next to the object's own properties.
        "{match: {path: /pets}, reply: {body: {s: '{{ request.body.bark }}'}}}",
        # A response oneOf around a placeholder: judged with a value of the request field in it.
        "{match: {path: /pets, body: {meow: 1}}, reply: {body: {n: '{{ request.body.meow }}'}}}",
        # Also matches GET /things, which has no body: the optional key is left out there.
        "{match: {path: /things}, reply: {body: {name: fixed, size: '{{ request.body.size }}'}}}",
        # An undeclared name in an open schema may be sent: left to run time.
        "{match: {path: /things, method: POST}, reply: {body: {name: x, note: '{{ request.body.open.colour }}'}}}",
    ],
    ids=["oneof-branch-field", "oneof-response", "rule-matching-a-bodiless-operation", "open-schema"],
)
def test_legitimate_placeholders_load(tmp_path, rule):
    spec = load_spec(write(tmp_path, "spec.yaml", PLACEHOLDER_SPEC))
    load_scenario_file(write(tmp_path, "ok.yaml", f"rules:\n  - {rule}\n"), spec)


def test_a_placeholder_the_request_cannot_carry_is_refused(tmp_path):
    spec = load_spec(write(tmp_path, "spec.yaml", PLACEHOLDER_SPEC))
    path = write(tmp_path, "bad.yaml", "rules:\n  - {match: {path: /closed}, reply: {body: {b: '{{ request.body.b }}'}}}\n")
    assert errors_of(path, spec) == [
        f"{path}:2: rules[0].reply.body.b: {{{{ request.body.b }}}}: the request body of POST /closed: 'b' is not "
        "declared (declared: a); add `off_contract: true` to this rule to serve it anyway"]


# GET /notes answers text/plain only.
TEXT_ONLY = (
    'openapi: 3.1.0\ninfo: {title: Notes, version: "1"}\n'
    'paths: {/notes: {get: {responses: {"200": {description: a note, content: {text/plain: {schema: {type: string}}}}}}}}\n'
)


def test_a_json_body_where_only_text_is_declared_is_named_as_json(tmp_path):
    spec = load_spec(write(tmp_path, "notes.yaml", TEXT_ONLY))
    path = write(tmp_path, "json.yaml", "rules:\n  - match: {path: /notes}\n    reply: {body: {note: hi}}\n")
    with pytest.raises(ScenarioError) as raised:
        load_scenario_file(path, spec)
    assert str(raised.value) == (
        f"{path}:3: rules[0].reply.body: a JSON body is sent as application/json, which GET /notes response 200"
        " does not declare (declared: text/plain); set a Content-Type header or add `off_contract: true` to this"
        " rule to serve it anyway"
    )
    write(tmp_path, "text.yaml", "rules:\n  - match: {path: /notes}\n    reply: {body: hi}\n")
    assert load_scenario_file(tmp_path / "text.yaml", spec).rules[0].replies[0].body == "hi"
