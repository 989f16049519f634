"""Rules turned into requests (plantstub/verify/build.py), without a service: values from the match, matchers met,
the rest from the spec's examples or generated values; a rule made to catch a broken request sends it; and every
rule that is not sent says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from plantstub._json import NO_BODY
from plantstub.contract.load import load_spec
from plantstub.contract.operations import serve
from plantstub.contract.router import Router
from plantstub.matching import matcher_mismatches
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.load import load_scenario_file
from plantstub.verify.build import plan
from plantstub.verify.request import NOT_SENT, NOT_VERIFIABLE, Request, Unsent
from tests.helpers import write

AUTH = (("Authorization", "Bearer t0ken-value"),)

# A spec with what a request needs beyond a body: a path parameter with an example, a required query parameter and
# a required header, a bearer scheme.
SHOP = """\
openapi: 3.1.0
info: {title: Shop, version: "1"}
security: [{bearer: []}]
components:
  securitySchemes: {bearer: {type: http, scheme: bearer}}
paths:
  /shops/{shopId}/plants:
    parameters:
      - {name: shopId, in: path, required: true, schema: {type: string, pattern: "^s-[0-9]+$", example: s-42}}
    get:
      parameters:
        - {name: size, in: query, required: true, schema: {type: integer, minimum: 5}}
        - {name: X-Tenant, in: header, required: true, schema: {type: string, enum: [acme, globex]}}
      responses:
        "200":
          description: plants
          content: {application/json: {schema: {type: array, items: {type: object}}}}
        "404": {description: no such shop}
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [name, pot]
              properties:
                name: {type: string, minLength: 2}
                code: {type: string, pattern: "^[A-Z]{3}$"}
                pot: {type: object, required: [size], properties: {size: {type: integer}, colour: {type: string}}}
            example: {name: Fern, pot: {size: 3}}
      responses:
        "201": {description: made, content: {application/json: {schema: {type: object}}}}
        "400": {description: refused, content: {application/json: {schema: {type: object}}}}
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> ScenarioContract:
    spec = load_spec(write(tmp_path_factory.mktemp("spec"), "shop.yaml", SHOP))
    served = serve(spec)
    return ScenarioContract(spec, served, Router(spec))


@pytest.fixture(scope="module")
def plant_store() -> ScenarioContract:
    spec = load_spec("plant-store-full")
    served = serve(spec)
    return ScenarioContract(spec, served, Router(spec))


def planned(tmp_path: Path, contract: ScenarioContract, rules: str, *, writes: bool = True,
            extra: tuple[tuple[str, str], ...] = AUTH, head: str = "") -> list[Request | Unsent]:
    scenario = load_scenario_file(write(tmp_path, "rules.yaml", f"{head}rules:\n{rules}"), contract.spec, contract)
    return [plan(rule, scenario, contract, extra, writes) for rule in scenario.rules]


def test_a_regex_matcher_sends_a_value_it_matches_and_the_rest_from_the_spec_example(tmp_path, shop):
    (request,) = planned(tmp_path, shop, """\
  - match: {method: POST, path: "/shops/{id}/plants", body: {name: {$regex: "^Cact"}, code: {$present: true}}}
    reply: {status: 201, body: {}}
""")
    assert isinstance(request, Request)
    assert (request.method, request.path) == ("POST", "/shops/s-42/plants")  # the path parameter's example
    assert request.body["name"].startswith("Cact") and request.body["pot"] == {"size": 3}  # the spec's example
    assert request.body["code"] == "AAA"  # built for the schema's own pattern
    assert request.breaks == () and ("Content-Type", "application/json") in request.headers


def test_nested_objects_the_match_names_are_filled_to_keep_the_schema(tmp_path, shop):
    (request,) = planned(tmp_path, shop, """\
  - match: {method: POST, path: /shops/s-1/plants, body: {pot: {colour: {$regex: "^(red|blue)$"}}}}
    reply: {status: 201, body: {}}
""")
    assert isinstance(request, Request)
    assert request.path == "/shops/s-1/plants" and request.body == {"name": "Fern", "pot": {"size": 3, "colour": "red"}}


def test_required_query_and_header_parameters_come_from_the_spec_and_matchers_from_the_match(tmp_path, shop):
    (request,) = planned(tmp_path, shop, """\
  - match: {method: GET, path: /shops/s-7/plants, query: {size: {$regex: "^1[0-9]$"}}}
    reply: {status: 200, body: []}
""")
    assert isinstance(request, Request)
    assert request.shown == "GET /shops/s-7/plants?size=10"
    assert request.headers == (("X-Tenant", "acme"),) and request.body is NO_BODY


def test_a_header_given_with_header_is_kept_when_it_meets_the_rule(tmp_path, shop):
    rules = """\
  - match: {method: GET, path: /shops/s-7/plants, headers: {Authorization: {$regex: "^Bearer "}, X-Tenant: globex}}
    reply: {status: 200, body: []}
"""
    (request,) = planned(tmp_path, shop, rules)
    assert isinstance(request, Request)
    assert dict(request.incoming(AUTH).headers) == {"Authorization": "Bearer t0ken-value", "X-Tenant": "globex"}


def test_a_4xx_rule_whose_match_breaks_the_contract_sends_that_broken_request(tmp_path, plant_store):
    (request,) = planned(tmp_path, plant_store, """\
  - match: {method: POST, path: /plants, body: {id: "seven"}}
    reply: {status: 400, body: {error: 400, message: bad id}}
""")
    assert isinstance(request, Request)
    assert request.body == {"id": "seven", "name": "string"}
    assert request.breaks == ("body.id: 'seven' is not of type 'integer'",)


def test_an_absent_matcher_leaves_the_field_out_even_when_required(tmp_path, plant_store):
    (request,) = planned(tmp_path, plant_store, """\
  - match: {method: POST, path: /plants, body: {id: {$absent: true}}}
    reply: {status: 400, body: {error: 400, message: no id}}
""")
    assert isinstance(request, Request)
    assert "id" not in request.body and request.breaks == ("body: 'id' is a required property",)


@pytest.mark.parametrize(("rules", "outcome", "reason"), [
    ("  - match: {method: GET, path: /plants}\n    times: 1\n    reply: {status: 200, body: []}\n",
     NOT_VERIFIABLE, "`times: 1`: whether it answers depends on the calls before"),
    ("  - match: {method: GET, path: /plants}\n    replies: [{status: 200, body: []}, {status: 400, body: {error: 1, "
     "message: m}}]\n", NOT_VERIFIABLE, "2 replies in sequence: which one answers depends on the calls before"),
    ("  - match: {method: POST, path: /plants}\n    reply: {fault: connection_reset}\n",
     NOT_VERIFIABLE, "`fault: connection_reset`: the stub failing on purpose is no claim about the service"),
    ("  - match: {method: GET, path: /plants}\n    reply: {status: 200, body: [], delay_ms: 300}\n",
     NOT_VERIFIABLE, "`delay_ms: 300`: the stub waiting on purpose is no claim about the service"),
    ("  - match: {path: /nowhere}\n    off_contract: true\n    reply: {status: 500, body: oops}\n",
     NOT_VERIFIABLE, "`off_contract: true`: the rule breaks the contract on purpose; that is no claim about the service"),
    ("  - match: {method: POST, path: /plants, body: {id: \"x\"}}\n    reply: {status: 200, body: {name: x}}\n",
     NOT_VERIFIABLE, "a request it matches breaks the contract (body.id: 'x' is not of type 'integer'), and the stub "
                     "answers such a request 400 before any rule, not 200"),
    ("  - match: {method: POST, path: /plants, body: {name: {$regex: \"^(?=a)b\"}}}\n    reply: {status: 200, body: "
     "{name: x}}\n", NOT_VERIFIABLE, "no request meets its match: body.name: no value found that meets {'$regex': "
                                     "'^(?=a)b'}"),
    ("  - match: {method: DELETE, path: /plants/3}\n    reply: {status: 204}\n",
     NOT_SENT, "DELETE changes the service's state; --allow-writes sends it"),
], ids=["times", "replies", "fault", "delay", "off contract", "no valid request", "no value", "write"])
def test_a_rule_not_sent_says_why(tmp_path, plant_store, rules, outcome, reason):
    (unsent,) = planned(tmp_path, plant_store, rules, writes=False)
    assert isinstance(unsent, Unsent)
    assert (unsent.outcome, unsent.reason) == (outcome, reason)


def test_a_rule_the_stub_answers_without_validation_sends_its_broken_request(tmp_path, plant_store):
    (request,) = planned(tmp_path, plant_store, head="validate_requests: false\n", rules="""\
  - match: {method: POST, path: /plants, body: {id: "x"}}
    reply: {status: 200, body: {name: x}}
""")
    assert isinstance(request, Request) and request.breaks == ("body.id: 'x' is not of type 'integer'",)


def test_without_credentials_a_secured_operation_is_not_sent_and_says_how_to_give_them(tmp_path, plant_store):
    (unsent,) = planned(tmp_path, plant_store, "  - match: {method: GET, path: /plants}\n    reply: {status: 200, body: "
                                               "[]}\n", extra=())
    assert isinstance(unsent, Unsent) and unsent.outcome == NOT_SENT
    assert unsent.reason == ("GET /plants needs credentials (headers.Authorization: missing; expected 'Bearer "
                             "<credentials>' (bearerAuth)); give them with --header 'NAME: VALUE' or PLANTSTUB_HEADER")


def test_a_rule_without_method_is_verified_with_an_operation_that_takes_its_body(tmp_path, plant_store):
    (request,) = planned(tmp_path, plant_store, "  - match: {path: /plants, body: {tag: poison}}\n    reply: {status: "
                                                "200, body: {name: x}}\n")
    assert isinstance(request, Request)
    assert (request.method, request.body) == ("POST", {"id": 0, "name": "string", "tag": "poison"})


def test_path_parameters_are_percent_encoded_and_stay_one_segment(tmp_path, plant_store):
    (request,) = planned(tmp_path, plant_store, "  - match: {method: DELETE, path: '/plants/{id}'}\n    reply: {status: "
                                                "204}\n")
    assert isinstance(request, Request) and (request.path, request.raw_path) == ("/plants/0", "/plants/0")


@pytest.mark.parametrize("pattern", ["^Cact", "^[a-f0-9]{8}$", "^(red|green)-[0-9]+$", "ab?c+$"])
def test_regex_matchers_in_bodies_get_values_they_match(tmp_path, plant_store, pattern):
    (request,) = planned(tmp_path, plant_store, f"  - match: {{method: POST, path: /plants, body: {{tag: {{$regex: "
                                                f"'{pattern}'}}}}}}\n    reply: {{status: 200, body: {{name: x}}}}\n")
    assert isinstance(request, Request)
    assert not matcher_mismatches({"$regex": pattern}, request.body["tag"], "body.tag")


def test_a_header_the_rule_wants_absent_is_not_sent_even_when_given_with_header(tmp_path, plant_store):
    (request,) = planned(tmp_path, plant_store, head="validate_requests: false\n", rules="""\
  - match: {method: GET, path: /plants, headers: {Authorization: {$absent: true}}}
    reply: {status: 400, body: {error: 401, message: who are you?}}
""")
    assert isinstance(request, Request) and "Authorization" not in request.incoming(AUTH).headers
    assert request.breaks == ("headers.Authorization: missing; expected 'Bearer <credentials>' (bearerAuth)",)
