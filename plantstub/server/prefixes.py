"""The stub's own URL prefixes and session header, apart from the aiohttp code that serves them: RemoteStub (a
sidecar driven over HTTP) needs them without importing aiohttp."""

from __future__ import annotations

ADMIN_PREFIX = "/__plantstub/"
SESSION_PREFIX = "/__session/"
SESSION_HEADER = "X-Plantstub-Session"
