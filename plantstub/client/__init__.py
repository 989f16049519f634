"""Clients of a running stub: its admin API driven over HTTP (`RemoteStub`, `Stub.connect`), with no aiohttp, yaml or
spec loader imported, so a test worker on a sidecar never pays for them."""
