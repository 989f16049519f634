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
