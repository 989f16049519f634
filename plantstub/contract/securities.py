"""Security requirements as a document states them: the schemes each alternative needs, and those it names
but never declares (not enforced; one warning each). Also the two small readers every part of loading uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from plantstub._json import MAX_SHOWN, cut, shown
from plantstub._words import did_you_mean
from plantstub.contract.model import SecurityScheme
from plantstub.errors import SpecError

_D = TypeVar("_D", dict, list)  # dict or list: what a document holds there


def expect(kind: type[_D], node: object, where: str, what: str) -> _D:
    """`node` if it is a `kind` (dict or list); absent (None) reads as empty."""
    if node is None:
        return kind()
    if not isinstance(node, kind):
        raise SpecError(f"{where}: expected {what}, found {type(node).__name__} {shown(node)}")
    return node


def suggest(name: str, declared: dict) -> str:
    """` (did you mean 'x'?)` when a name is close to one declared, else the names declared."""
    names = [str(n) for n in declared]
    hint = did_you_mean(name, names)
    if hint:
        return f" ({hint})"
    return f" (declared: {cut(', '.join(names), 3 * MAX_SHOWN)})" if names else " (none are declared)"


class Securities:
    """The `security` lists of one document, read against its `components.securitySchemes`."""

    def __init__(self, schemes: dict, deref: Callable[[object, str], tuple[object, str]]) -> None:
        """`deref(node, where)`: a scheme's `$ref`s followed, from the document's own file."""
        self.schemes = schemes
        self.deref = deref
        self.undeclared: dict[str, list[str]] = {}  # security scheme named but not declared -> where it is named

    def read(self, raw: object, where: str) -> tuple[tuple[SecurityScheme, ...], ...]:
        """The alternatives of a `security` list; a scheme `components.securitySchemes` lacks is not enforced.

        An undeclared scheme cannot be checked, so it counts as met: it drops out of its requirement (the
        others of it still hold), and a requirement left with none is met by any request, as `{}` is.
        """
        if raw is None:
            return ()
        alternatives = []
        met = False  # a requirement naming only undeclared schemes: no request can be shown to fail it
        for i, requirement in enumerate(expect(list, raw, where, "a list of security requirements")):
            requirement = expect(dict, requirement, f"{where}[{i}]", "a mapping of scheme names to scopes")
            if not requirement:  # {} is an alternative that needs nothing: security is optional
                met = True
            schemes = []
            for name in requirement:
                if name not in self.schemes:
                    places = self.undeclared.setdefault(str(name), [])
                    if f"{where}[{i}]" not in places:
                        places.append(f"{where}[{i}]")
                    continue
                scheme, _ = self.deref(self.schemes[name], f"components.securitySchemes.{name}")
                scheme = expect(dict, scheme, f"components.securitySchemes.{name}", "a Security Scheme mapping")
                kind, word = str(scheme.get("type", "")), str(scheme.get("scheme", "")).lower()
                where_sent, param = str(scheme.get("in", "")), str(scheme.get("name", ""))
                schemes.append(SecurityScheme(str(name), kind, word, where_sent, param))
            if schemes:
                alternatives.append(tuple(schemes))
            else:
                met = True
        return () if met else tuple(alternatives)

    def warnings(self) -> list[str]:
        """One warning per security scheme that requirements name but the document never declares."""
        out = []
        for name, places in self.undeclared.items():
            more = f" (and {len(places) - 1} more {'place' if len(places) == 2 else 'places'})" if len(places) > 1 else ""
            out.append(f"{places[0]}{more}: security scheme {shown(name)} is not declared in components.securitySchemes"
                       f"{suggest(name, self.schemes)}; not enforced")
        return out
