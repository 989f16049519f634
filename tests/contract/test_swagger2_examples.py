"""The 14 Swagger 2.0 examples of `@readme/oas-examples` start and answer as their swagger2openapi conversions do
(tests/data/specs/oas-examples-2.0/README.md says where both come from; tests/benchmarks/swagger2_compare.py makes
the conversions again with node)."""

from __future__ import annotations

import pytest

from plantstub.contract.load import load_spec
from tests.helpers import SPECS
from tests.spec_shape import differences, spec_answers, spec_shape

EXAMPLES = SPECS / "oas-examples-2.0"
DOCUMENTS = sorted([*EXAMPLES.glob("json/*.json"), *EXAMPLES.glob("yaml/*.yaml")])


def test_every_example_is_here():
    assert len(DOCUMENTS) == 14


@pytest.mark.parametrize("document", DOCUMENTS, ids=[f"{d.parent.name}/{d.name}" for d in DOCUMENTS])
def test_swagger2_example_serves_as_its_swagger2openapi_conversion(document):
    ours = load_spec(document, cache=False)
    theirs = load_spec(EXAMPLES / "swagger2openapi" / f"{document.name}.openapi.json", cache=False)
    assert ours.openapi == "2.0" and theirs.openapi == "3.0.0"
    assert ours.warnings == theirs.warnings == ()
    assert [op.label for op in ours.operations] == [op.label for op in theirs.operations]
    assert differences(spec_shape(ours), spec_shape(theirs)) == []
    assert differences(spec_answers(ours), spec_answers(theirs)) == []


SERVED = [*DOCUMENTS, *sorted((SPECS / "swagger2").glob("*.yaml"))]


@pytest.mark.parametrize("document", SERVED, ids=[f"{d.parent.name}/{d.name}" for d in SERVED])
def test_swagger2_every_answer_keeps_its_schema(document):
    """Each declared response of each operation, as plantstub answers it, checked by the jsonschema library."""
    import json

    import jsonschema

    from plantstub._json import is_json
    from plantstub.contract.operations import serve

    spec = load_spec(document, cache=False)
    served = serve(spec, seed=1)
    checked = 0
    for op in spec.operations:
        for key, response in op.responses.items():
            out = served[op].answer(key).build(None)
            if not out.payload or out.content_type is None or not is_json(out.content_type):
                continue
            media = next(m for name, m in response.content.items() if name == "*/*" or is_json(name))
            if media.schema is not None:
                jsonschema.validate(json.loads(out.payload), media.schema)
                checked += 1
    declared = [m for op in spec.operations for r in op.responses.values() for name, m in r.content.items()
                if m.schema is not None and (name == "*/*" or is_json(name))]
    assert checked > 0 or not declared
