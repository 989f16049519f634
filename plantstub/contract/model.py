"""The model of an OpenAPI document as a stub needs it: Spec, Operation, Parameter, MediaType, Response."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from plantstub._fields import ByFields
from plantstub._json import MISSING

if TYPE_CHECKING:
    from plantstub.contract.property_map import PropertyMap

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
METHODS_32 = (*METHODS, "query")  # OpenAPI 3.2's Path Item adds QUERY (and `additionalOperations` for any other)


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Parameter(ByFields):
    """One declared parameter: where it lives, whether it is required, its bundled schema."""

    name: str
    location: str  # path, query, header, cookie; querystring (OpenAPI 3.2: the whole query, read as `media`)
    required: bool
    schema: dict | bool | None
    explode: bool = True
    style: str = ""  # as declared, or the location's default: form (query, cookie), simple (path, header)
    media: str = ""  # declared with `content` instead of `schema`: its one media type, e.g. application/json


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class MediaType(ByFields):
    """A media type under a request body or response: schema and examples; `item_schema` (OpenAPI 3.2) holds each
    item of a sequential media type (contract/streams.py)."""

    name: str
    schema: dict | bool | None
    example: object = MISSING
    examples: dict[str, object] = field(default_factory=dict)
    item_schema: dict | bool | None = None


_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HTTP_OWN = frozenset({"content-type", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
                       "te", "trailer", "proxy-connection", "date", "server"})


def unsent_header(name: str) -> str | None:
    """Why a required response header `name` is never sent (HTTP's own framing and hop-by-hop headers, which the
    server writes, or a name HTTP cannot carry), else None."""
    if not name or not set(name) <= _TOKEN_CHARS:
        return "it is not a name an HTTP header can have"
    if name.lower() in _HTTP_OWN:
        return "HTTP's own header, which the server writes"
    return None


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Response(ByFields):
    """A declared response: status key as written ("200", "4XX", "default") and its content."""

    status: str
    description: str
    content: dict[str, MediaType]
    headers: dict[str, dict | bool | None]
    required_headers: tuple[str, ...] = ()  # of `headers`, the ones marked `required: true`: every answer sends them


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class SecurityScheme(ByFields):
    """A security scheme as it matters to a stub: what a request must carry."""

    name: str
    type: str  # http, apiKey, oauth2, openIdConnect, mutualTLS
    scheme: str = ""  # for http: bearer, basic, ...
    location: str = ""  # for apiKey: header, query, cookie
    param: str = ""  # for apiKey: the header, query or cookie name


@dataclass(frozen=True, slots=True, eq=False)
class Operation:
    """One method on one path template, with everything needed to check and answer it.

    Compared and hashed by identity: each is one place in one document, and the key of its runtime.
    """

    method: str
    path: str
    operation_id: str | None
    parameters: tuple[Parameter, ...]
    body_required: bool
    body: dict[str, MediaType] | None
    responses: dict[str, Response]
    security: tuple[tuple[SecurityScheme, ...], ...]  # alternatives; () means none needed
    callbacks: tuple[Webhook, ...] = ()  # the operation's `callbacks`, one per (name, expression, method)

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    def response_for(self, status: int) -> Response | None:
        """The declared response covering `status`: exact code, then nXX, then default."""
        text = str(status)
        return (
            self.responses.get(text)
            or self.responses.get(text[0] + "XX")
            or self.responses.get(text[0] + "xx")
            or self.responses.get("default")
        )


@dataclass(frozen=True, slots=True, eq=False)
class Webhook:
    """A request the API sends: an entry of the spec's `webhooks` (3.1), or an operation's callback.

    `operation` holds what is sent (method, request body) and the answers the receiver may give;
    `expression` is a callback's URL template (`{$request.body#/callbackUrl}`), "" for a webhook.
    """

    name: str
    operation: Operation
    expression: str = ""

    @property
    def label(self) -> str:
        return self.name if not self.expression else f"callback {self.name} ({self.expression})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Spec(ByFields):
    """A loaded OpenAPI document: its operations in document order."""

    source: str
    openapi: str
    title: str
    version: str
    operations: tuple[Operation, ...]
    # What the loader set aside and why, one sentence each (paths no request can reach, unknown dialects).
    warnings: tuple[str, ...] = ()
    webhooks: tuple[Webhook, ...] = ()  # the document's `webhooks`, one per (name, method)
    annotated: frozenset[str] = frozenset(("readOnly", "writeOnly"))  # of those, the ones some schema says
    # Its shared validator's property map (contract/property_map.py), when the spec cache wrote or read it.
    property_map: PropertyMap | None = field(default=None, compare=False, repr=False)
