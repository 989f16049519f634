"""oneOf branches that overlap: a generated answer matches exactly one branch where one exists, else 501 says why.

tests/data/specs/overlapping-oneof.yaml holds the shapes (written for these tests): branches told apart only
deep inside (`cells[0].view`), two identical branches beside a third (a discriminator naming each), every branch
a twin, and a required property its object forbids.
"""

from __future__ import annotations

import jsonschema
import pytest

from plantstub import create_app
from plantstub.contract.load import load_spec
from tests.helpers import SPECS

SPEC = SPECS / "overlapping-oneof.yaml"
UNANSWERABLE = ("plantstub cannot answer GET {path}: plantstub finds no value that satisfies the schema of its"
                " response 200 (application/json): {why}; a scenario rule with `off_contract: true` can answer it")


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(SPEC), scenarios=str(tmp_path)))


def branches_taking(body: object, path: str) -> list[str]:
    """The oneOf branches the reference validator (jsonschema) finds `body` valid under."""
    schema = next(op for op in load_spec(SPEC).operations if op.path == path).responses["200"].content[
        "application/json"].schema
    return [branch["$ref"].rsplit("/", 1)[-1] for branch in schema["oneOf"]
            if jsonschema.Draft202012Validator({**branch, "$defs": schema["$defs"]}).is_valid(body)]


@pytest.mark.parametrize(
    ("path", "body", "branch"),
    [
        # `view: {}` lacks the `kind` a CellWithView requires: a Board, not a BoardWithViews.
        ("/boards", {"name": "string", "cells": [{"id": "string", "view": {}}]}, "Board"),
        # ScanReport and VideoReport are one schema; a breakdown they refuse makes a FaceReport, named by `kind`.
        ("/reports", {"id": "string", "kind": "face", "breakdown": {"document": None}}, "FaceReport"),
    ],
)
async def test_overlapping_one_of_answer_matches_exactly_one_branch(client, path, body, branch):
    response = await client.get(path)
    assert (response.status, await response.json()) == (200, body)
    assert branches_taking(body, path) == [branch]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/twins", "oneOf branches ScanReport and VideoReport are the same schema, so every value matches both"
                   " (a discriminator does not choose a oneOf branch in JSON Schema)"),
        ("/closed", "a required property is one its object forbids (body.account.id: not among its properties,"
                    " and additionalProperties is false)"),
    ],
)
async def test_truly_impossible_answers_stay_501_saying_why(client, path, why):
    response = await client.get(path)
    assert (response.status, await response.json()) == (
        501, {"error": 501, "message": UNANSWERABLE.format(path=path, why=why)})
