"""`plantstub coverage` refused by a stub's --admin-token says where the command reads the token from.

Found by a new user's trial: the refusal said `answered 401: Authorization: is missing; this stub's admin API needs
'Bearer <token>' with the token of --admin-token`, and `plantstub coverage` has no option for a token.
"""

from __future__ import annotations

from plantstub import Stub
from plantstub.cli import main


def test_a_refusal_for_want_of_the_token_names_the_variable(capsys, monkeypatch):
    monkeypatch.delenv("PLANTSTUB_ADMIN_TOKEN", raising=False)
    with Stub(admin_token="s3cret") as stub:
        base = stub.url.rstrip("/")
        assert main(["coverage", base]) == 1
        assert capsys.readouterr().err.endswith(
            "with the token of --admin-token (plantstub coverage reads it from PLANTSTUB_ADMIN_TOKEN)\n")
        monkeypatch.setenv("PLANTSTUB_ADMIN_TOKEN", "s3cret")
        assert main(["coverage", base]) == 0
