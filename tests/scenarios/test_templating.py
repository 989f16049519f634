"""Templating: lone placeholders keep their JSON type, text gets text, nothing is ever evaluated."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from plantstub._json import NO_BODY
from plantstub.scenarios.templating import Placeholder, TemplateError, compile_template, placeholder_paths, render

VIEW = {
    "method": "POST",
    "path": "/plants",
    "body": {"name": "Cactus", "id": 7, "price": 2.5, "spiky": True, "tag": None,
             "pots": [{"size": 3}, {"size": 5}], "info": {"origin": "Mexico"}},
    "headers": {"X-Tenant": "acme", "Content-Type": "application/json"},
    "query": {"dry_run": "1"},
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ request.body.name }}", "Cactus"),
        ("{{ request.body.id }}", 7),
        ("{{ request.body.price }}", 2.5),
        ("{{ request.body.spiky }}", True),
        ("{{ request.body.tag }}", None),
        ("{{ request.body.pots }}", [{"size": 3}, {"size": 5}]),
        ("{{ request.body.info }}", {"origin": "Mexico"}),
        ("{{ request.body.pots[1].size }}", 5),
        ("{{ request.body.pots.0.size }}", 3),
        ("{{request.body.name}}", "Cactus"),
        ("{{ request.body }}", VIEW["body"]),
        ("{{ request.path }}", "/plants"),
        ("{{ request.method }}", "POST"),
        ("{{ request.query.dry_run }}", "1"),
        ("{{ request.headers.X-Tenant }}", "acme"),
    ],
    ids=["string", "integer", "number", "boolean", "null", "list", "object", "index", "dotted-index",
         "no-spaces", "whole-body", "path", "method", "query", "header"],
)
def test_render_lone_placeholder_keeps_json_type(template, expected):
    assert render(template, VIEW) == expected
    assert type(render(template, VIEW)) is type(expected)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Hello {{ request.body.name }}!", "Hello Cactus!"),
        ("#{{ request.body.id }}", "#7"),
        ("spiky={{ request.body.spiky }}", "spiky=true"),
        ("tag={{ request.body.tag }}", "tag=null"),
        ("pots: {{ request.body.pots }}", 'pots: [{"size":3},{"size":5}]'),
        ("{{ request.method }} {{ request.path }}", "POST /plants"),
        (" {{ request.body.id }}", " 7"),
        ("{{ request.body.name }}{{ request.body.id }}", "Cactus7"),
    ],
    ids=["string", "integer", "boolean", "null", "list-as-json", "two", "leading-space", "adjacent"],
)
def test_render_placeholder_in_text_inserts_text(template, expected):
    assert render(template, VIEW) == expected


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ request.body.colour }}", None),
        ("{{ request.body.pots[9].size }}", None),
        ("{{ request.body.name.first }}", None),
        ("{{ request.headers.X-Missing }}", None),
        ("{{ request.query.page }}", None),
        ("colour: {{ request.body.colour }}.", "colour: ."),
        ("{{ request.headers.X-Missing }}/{{ request.query.page }}", "/"),
    ],
    ids=["key", "index", "below-a-string", "header", "query", "in-text", "two-in-text"],
)
def test_render_missing_value_is_null_alone_and_empty_in_text(template, expected):
    assert render(template, VIEW) == expected


@pytest.mark.parametrize("name", ["x-tenant", "X-TENANT", "X-Tenant", "x-TeNaNt"])
def test_render_header_names_are_case_insensitive(name):
    assert render(f"{{{{ request.headers.{name} }}}}", VIEW) == "acme"
    view = {**VIEW, "headers": CIMultiDict({"x-tenant": "acme"})}
    assert render(f"{{{{ request.headers.{name} }}}}", view) == "acme"


def test_render_leaves_out_the_keys_of_missing_values():
    view = {**VIEW, "body": NO_BODY}
    template = {"name": "{{ request.body.name }}", "all": "{{ request.body }}", "kept": 1}
    assert render(template, view) == {"kept": 1}  # an optional field stays optional, not null
    assert render({"tag": "{{ request.body.colour }}", "name": "{{ request.body.name }}"}, VIEW) == {"name": "Cactus"}
    assert render(["{{ request.body.colour }}", "{{ request.body.id }}"], VIEW) == [None, 7]  # a list keeps its length
    assert render("{{ request.body }}", view) is None
    assert render({"tag": "{{ request.body.tag }}"}, VIEW) == {"tag": None}  # sent as null: echoed as null


def test_render_walks_dicts_and_lists_and_keeps_keys_literal():
    template = {
        "{{ request.body.name }}": "{{ request.body.name }}",
        "items": [{"id": "{{ request.body.id }}"}, "fixed", 3],
        "note": "made by {{ request.method }}",
    }
    assert render(template, VIEW) == {
        "{{ request.body.name }}": "Cactus",
        "items": [{"id": 7}, "fixed", 3],
        "note": "made by POST",
    }


def test_compile_template_returns_static_values_without_copying():
    value = {"name": "Fern", "pots": [1, 2], "deep": {"a": "{ not a placeholder }"}}
    template = compile_template(value)
    assert template.static
    assert template.render(VIEW) is value


def test_compile_template_shares_untemplated_parts():
    fixed = {"origin": "Mexico"}
    template = compile_template({"name": "{{ request.body.name }}", "fixed": fixed})
    assert not template.static
    first, second = template.render(VIEW), template.render({**VIEW, "body": {"name": "Fern"}})
    assert (first["name"], second["name"]) == ("Cactus", "Fern")
    assert first["fixed"] is fixed


def test_compile_template_text_mode_renders_lone_placeholder_as_text():
    assert compile_template("{{ request.body.id }}", text=True).render(VIEW) == "7"
    assert compile_template("{{ request.body.colour }}", text=True).render(VIEW) == ""
    assert compile_template("{{ request.body.spiky }}", text=True).render(VIEW) == "true"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ config.x }}",
         "unknown template root 'config' in '{{ config.x }}' (expected request.body, request.headers,"
         " request.query, request.path or request.method)"),
        ("{{ __import__('os').system('echo hi') }}",
         "unknown template root '__import__' in \"{{ __import__('os').system('echo hi') }}\" (expected"
         " request.body, request.headers, request.query, request.path or request.method)"),
        ("{{ request.bodyy.name }}",
         "unknown request field 'bodyy' in '{{ request.bodyy.name }}' (did you mean 'request.body'?)"),
        ("{{ request.__class__ }}",
         "unknown request field '__class__' in '{{ request.__class__ }}' (expected request.body,"
         " request.headers, request.query, request.path or request.method)"),
        ("{{ request.body.name() }}",
         "'{{ request.body.name() }}' is not a placeholder plantstub understands (expected request.body,"
         " request.headers, request.query, request.path or request.method, then .name or [0] steps)"),
        ("{{ request.body.name | upper }}",
         "'{{ request.body.name | upper }}' is not a placeholder plantstub understands (expected request.body,"
         " request.headers, request.query, request.path or request.method, then .name or [0] steps)"),
        ("{{ request.path.x }}", "request.path is text and has no parts, in '{{ request.path.x }}'"),
        ("{{ }}", "empty placeholder '{{ }}' (expected e.g. {{ request.body.name }})"),
    ],
    ids=["unknown-root", "python-expression", "misspelt-field", "dunder-field", "call", "filter",
         "below-path", "empty"],
)
def test_compile_template_rejects_what_it_does_not_understand(template, message):
    with pytest.raises(TemplateError) as caught:
        compile_template({"body": [template]})
    assert str(caught.value) == message


def test_render_python_expression_is_never_evaluated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TemplateError):
        render("{{ __import__('pathlib').Path('pwned').touch() }}", VIEW)
    assert list(tmp_path.iterdir()) == []
    # Attribute-looking steps are dictionary keys, never attributes.
    assert render("{{ request.body.__class__ }}", VIEW) is None
    assert render("{{ request.body.name.__len__ }}", VIEW) is None


@pytest.mark.parametrize(
    "text",
    ["{{ request.body.name", "request.body.name }}", "{ request.body.name }", "{{}", "plain text"],
    ids=["unclosed", "unopened", "single-braces", "stray", "plain"],
)
def test_render_leaves_text_without_complete_placeholder_alone(text):
    assert render(text, VIEW) == text


def test_placeholder_paths_reports_location_loneness_and_problems():
    value = {
        "name": "{{ request.body.name }}",
        "note": "for {{ request.body.name }} at {{ config.x }}",
        "pots": [1, "{{ request.body.id }}"],
        "plain": "no placeholder",
    }
    assert placeholder_paths(value) == [
        Placeholder(("name",), "{{ request.body.name }}", True),
        Placeholder(("note",), "{{ request.body.name }}", False),
        Placeholder(("note",), "{{ config.x }}", False,
                    "unknown template root 'config' in '{{ config.x }}' (expected request.body, request.headers,"
                    " request.query, request.path or request.method)"),
        Placeholder(("pots", 1), "{{ request.body.id }}", True),
    ]
