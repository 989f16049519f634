"""`plantstub health`: exit 0 when a running stub answers its health route ok (a container's HEALTHCHECK)."""

from __future__ import annotations

import argparse
import sys

from plantstub.config import HEALTH_TIMEOUT, Settings, env_name
from plantstub.server.prefixes import ADMIN_PREFIX


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "health", help="exit 0 if a running stub answers its health route (for HEALTHCHECK)",
        description="Ask a running stub for GET /__plantstub/health; exit 0 if it answers ok, else 1.",
    )
    p.add_argument("--url", help=f"base URL of the stub; https:// when {env_name('tls_cert')} or {env_name('tls')} is "
                                 f"set, its certificate not verified on 127.0.0.1 (default: {_health_url()})")
    p.add_argument("--timeout", metavar="SECONDS", type=float, default=HEALTH_TIMEOUT, help=f"seconds to wait (default: {HEALTH_TIMEOUT:g})")


def _health_url() -> str:
    return f"http://127.0.0.1:${env_name('port')}, port {Settings().port} when unset"


def _problem(problem: object) -> str:
    """One health problem as a line: `where: what` (a `{"at", "message"}` record), else as it came."""
    if isinstance(problem, dict) and "at" in problem and "message" in problem:
        return f"{problem['at']}: {problem['message']}"
    return str(problem)


def _is_base_url(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _unreachable(exc: BaseException, timeout: float) -> str:
    """Why no answer came, in our words: urllib wraps the socket's error in its own (`<urlopen error ...>`)."""
    import urllib.error

    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):  # socket.timeout is TimeoutError since Python 3.10
        return f"no answer within {timeout:g} s (--timeout)"
    detail = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
    return f"cannot reach the stub there: {detail}"


def run(args: argparse.Namespace) -> int:
    import json
    import os
    import urllib.error
    import urllib.request

    context = None
    url = args.url
    if url is not None and not _is_base_url(url):
        print(f"plantstub: --url {url!r} is not the base URL of a stub (expected http://HOST:PORT or https://HOST:PORT)",
              file=sys.stderr)
        return 1
    if url is None:
        tls = os.environ.get(env_name("tls_cert")) or os.environ.get(env_name("tls"), "") not in ("", "0", "false", "no",
                                                                                               "off")
        url = f"{'https' if tls else 'http'}://127.0.0.1:{os.environ.get(env_name('port')) or Settings().port}"
        if tls:  # the stub's own certificate names the service, not 127.0.0.1: this probe of our own process trusts it
            import ssl

            context = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(url.rstrip("/") + ADMIN_PREFIX + "health", timeout=args.timeout,
                                    context=context) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as exc:  # 503 degraded carries its problems
        try:
            answer = json.load(exc)
        except ValueError:
            print(f"plantstub: {url} is not healthy: it answered HTTP {exc.code} to GET {ADMIN_PREFIX}health, not "
                  "JSON; is a plantstub listening there?", file=sys.stderr)
            return 1
    except ValueError:  # a 200 whose body is not JSON: something else answers there
        print(f"plantstub: {url} is not healthy: its answer to GET {ADMIN_PREFIX}health is not JSON; is a plantstub "
              "listening there?", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        print(f"plantstub: {url} is not healthy: {_unreachable(exc, args.timeout)}", file=sys.stderr)
        return 1
    status = answer.get("status") if isinstance(answer, dict) else None
    if isinstance(answer, dict) and status is None and isinstance(answer.get("message"), str):  # an Error record
        print(f"plantstub: {url} is not healthy: it answered {answer.get('error')}: {answer['message']}",
              file=sys.stderr)
        return 1
    if status != "ok":
        problems = answer.get("problems") if isinstance(answer, dict) else None
        detail = "".join(f"\n  {_problem(p)}" for p in problems) if isinstance(problems, list) else ""
        print(f"plantstub: {url} answered status {status!r}{detail}", file=sys.stderr)
        return 1
    return 0
