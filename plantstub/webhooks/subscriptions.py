"""Subscriptions: which URL receives which webhook (`*`: every one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from plantstub._words import did_you_mean
from plantstub.config import shown_url, webhook_url
from plantstub.errors import SubscriptionError


class Subscriptions:
    """Webhook name (or `*`) -> URL; the start-up ones (--webhook) come back on reset()."""

    def __init__(self, names: list[str], initial: tuple[tuple[str, str], ...] = (), given_as: str = "--webhook") -> None:
        self.names = names
        self.initial: dict[str, str] = {}
        for name, url in initial:  # `given_as`: how the start-up ones were given, for a refusal
            self.initial[self.checked_name(name, given_as)] = url
        self._urls: dict[str, str] = dict(self.initial)
        self._targets: dict[str, tuple[str, ...]] = {}  # name -> targets(name), until the subscriptions change
        self.on_change: Callable[[dict[str, str]], None] | None = None  # told the new subscriptions when they change

    @property
    def urls(self) -> dict[str, str]:
        """Name (or `*`) -> URL, as sent (read only: change them with the methods below)."""
        return self._urls

    @urls.setter
    def urls(self, urls: dict[str, str]) -> None:
        self._urls = urls
        self._targets = {}
        if self.on_change is not None:
            self.on_change(urls)

    def checked_name(self, name: Any, where: str) -> str:
        """`name` when it is a webhook of the spec, or `*` (every one) when the spec declares any: a subscription that
        could never be sent to is refused, not kept in silence (callbacks go to the URL their request names)."""
        if not self.names:
            raise SubscriptionError(f"{where}: {name!r}: the spec declares no webhooks, so nothing would ever be sent "
                                    "there (the bundled plant-store-full declares one)")
        if name == "*" or name in self.names:
            return str(name)
        hint = did_you_mean(str(name), self.names) or f"declared: {', '.join(self.names)}, or * for every one"
        raise SubscriptionError(f"{where}: {name!r} is not a webhook of the spec ({hint})")

    def subscribe(self, url: Any, name: Any = "*", where: str = "url", name_where: str = "name") -> None:
        """Send webhook `name` (`*`: each) to `url`, replacing that name's URL; a refusal names `where` the URL was
        given, or `name_where` the name was (the webhook's name is no URL: `name: '/plants/hook' is not ...`)."""
        key = self.checked_name(name, name_where)
        try:
            self.urls = {**self._urls, key: webhook_url(url)}
        except ValueError as exc:
            raise SubscriptionError(f"{where}: {exc}") from None

    def replace(self, mapping: Mapping[Any, Any], where: str = "body") -> None:
        """Replace every subscription at once (admin PUT); nothing changes when one of them is refused."""
        fresh = Subscriptions(self.names)
        for name, url in mapping.items():
            kept = self.urls.get(str(name))
            if kept is not None and url == shown_url(kept):  # as GET showed it: the password it stands for stays
                url = kept
            fresh.subscribe(url, name, f"{where}.{name}", where)  # a name is a key: wrong in the mapping itself
        self.urls = fresh.urls

    def shown(self) -> dict[str, str]:
        """Name (or `*`) -> URL, each password shown as `***` (it is sent as given)."""
        return {name: shown_url(url) for name, url in self.urls.items()}

    def reset(self) -> None:
        self.urls = dict(self.initial)

    def targets(self, name: str) -> tuple[str, ...]:
        """The URLs webhook `name` goes to: its own subscription and the one for every webhook (each once)."""
        found = self._targets.get(name)
        if found is None:
            urls = self._urls
            found = tuple(dict.fromkeys(url for key in (name, "*") if (url := urls.get(key)) is not None))
            if len(self._targets) < 1024:  # names are the spec's and callbacks'; a few
                self._targets[name] = found
        return found
