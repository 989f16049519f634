"""The one redaction rule (plantstub/redaction.py): which names and values are secrets, what a message keeps.
Through the user's entry points (--record, import-har, the HAR export, the report): tests/integration/test_record_secrets.py."""

from __future__ import annotations

import pytest

from plantstub.redaction import REDACTED, Redactor, redacted, scrub, secret_name, secret_value

SECRET = ["password", "passwd", "pwd", "pin", "PIN", "pinCode", "PIN_CODE", "passphrase", "auth", "x-auth-token", "jwt",
          "otp", "session", "sessionId", "session_id", "sessionid", "sid", "signature", "cvv", "cvv2", "card_number",
          "cardNumber", "cardnumber", "token", "accessToken", "access_token", "refresh-token", "client_secret",
          "secretKey", "key", "api_key", "apiKey", "X-API-Key", "APIKey", "Authorization", "Proxy-Authorization",
          "Cookie", "Set-Cookie", "cookies", "tokens", "security_code", "credentials", "privatekey", "x-accesskey"]
NOT_SECRET = ["shipping", "pinned", "spin", "author", "authors", "monkey", "keyboard", "turkey", "name", "id", "tag",
              "card", "number", "sessionless", "sidebar", "considered", "Content-Type", "X-Request-Id", "opinion"]


@pytest.mark.parametrize("name", SECRET)
def test_names_that_hold_secrets(name):
    assert secret_name(name)


@pytest.mark.parametrize("name", NOT_SECRET)
def test_names_that_do_not(name):
    assert not secret_name(name)


def test_credential_values_whatever_their_name():
    assert secret_value("Bearer abc.def-ghi") and secret_value("basic dXNlcjpwYXNz==") and secret_value(" BEARER x ")
    assert not secret_value("Basic plan for beginners") and not secret_value("Bearer") and not secret_value(5)


def test_a_value_is_redacted_at_any_depth_and_what_was_taken_is_scrubbed_from_messages():
    redactor = Redactor()
    value = {"name": "Fern", "nested": [{"pin": 1234, "tag": "Bearer t0k"}], "session": {"id": "s-9", "n": [7.5]}}
    assert redactor.value(value) == {"name": "Fern", "nested": [{"pin": REDACTED, "tag": REDACTED}],
                                     "session": REDACTED}
    assert redactor.found == {"1234", "Bearer t0k", "s-9", "7.5"}
    assert redactor.scrub("body.nested[0].pin: 1234 is not a string; got {'id': 's-9'} at http://h/p?api_key=1234") == (
        "body.nested[0].pin: REDACTED is not a string; got {'id': 'REDACTED'} at http://h/p")
    assert redactor.scrub("a12345 and 1234") == "a12345 and REDACTED"  # whole values only
    assert redacted(["Bearer x"]) == [REDACTED] and scrub("see https://x.example/a?token=1#f") == "see https://x.example/a#f"


def test_headers_and_query_parameters():
    redactor = Redactor()
    assert redactor.pairs([("Authorization", "Bearer a"), ("X-Trace", "Basic b"), ("Accept", "*/*")]) == [
        ("Authorization", REDACTED), ("X-Trace", REDACTED), ("Accept", "*/*")]
    assert redactor.mapping({"api_key": ["k1", "k2"], "page": "2"}) == {"api_key": REDACTED, "page": "2"}
    assert {"k1", "k2", "Bearer a", "Basic b"} <= redactor.found
