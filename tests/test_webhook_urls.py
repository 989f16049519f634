"""Webhook URLs: shown without their password, refused with control characters; the stub's own addresses."""

from __future__ import annotations

import pytest

from plantstub.config import shown_url, webhook_url
from plantstub.webhooks.own import OwnAddresses


@pytest.mark.parametrize(("url", "shown"), [
    ("http://user:s3cret@host:8000/hook?q=1", "http://user:***@host:8000/hook?q=1"),
    ("https://u:p@ss@host/", "https://u:***@host/"),  # the last @ ends the user part, as URL parsers read it
    ("http://token@host/", "http://token@host/"),
    ("http://host/a@b:c", "http://host/a@b:c"),
    ("not a url", "not a url"),
], ids=["password", "at-in-password", "user-only", "at-in-path", "not-a-url"])
def test_shown_url_hides_the_password(url: str, shown: str) -> None:
    assert shown_url(url) == shown


@pytest.mark.parametrize(("url", "message"), [
    ("http://h/a\r\nX: 1", r"'http://h/a\r\nX: 1' holds a control character ('\r' at 10); a URL cannot"),
    ("http://h/\x00", r"'http://h/\x00' holds a control character ('\x00' at 9); a URL cannot"),
    ("http://h/\n", r"'http://h/\n' holds a control character ('\n' at 9); a URL cannot"),
    ("ftp://u:pw@h/", "'ftp://u:***@h/' is not an http:// or https:// URL with a host"),
], ids=["crlf", "nul", "trailing-lf", "password-in-refusal"])
def test_webhook_url_refuses_control_characters(url: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        webhook_url(url)
    assert str(refused.value) == message


@pytest.mark.parametrize(("bound", "host", "port", "reaches"), [
    ("127.0.0.1", "127.0.0.1", 4010, True),
    ("127.0.0.1", "127.0.0.1", 4011, False),
    ("127.0.0.1", "127.0.0.2", 4010, True),
    ("127.0.0.1", "::1", 4010, True),
    ("127.0.0.1", "::ffff:127.0.0.1", 4010, True),
    ("127.0.0.1", "0.0.0.0", 4010, True),
    ("127.0.0.1", "192.0.2.1", 4010, False),
    ("0.0.0.0", "127.0.0.1", 4010, True),
    ("0.0.0.0", "192.0.2.1", 4010, False),  # TEST-NET: no machine's own address
    ("192.0.2.7", "192.0.2.7", 4010, True),
    ("192.0.2.7", "127.0.0.1", 4010, False),
    ("127.0.0.1", "localhost", 4010, False),  # a name: checked where aiohttp resolves it
])
def test_own_addresses_reach(bound: str, host: str, port: int, reaches: bool) -> None:
    own = OwnAddresses()
    own.listen([(bound, 4010)])
    assert own.reaches(host, port) is reaches
