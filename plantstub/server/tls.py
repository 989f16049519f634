"""HTTPS: the listening socket's TLS context from --tls-cert/--tls-key, and the throwaway CA and certificate of
`Stub(tls=True)` (made with trustme, an optional dependency)."""

from __future__ import annotations

import shutil
import ssl
import tempfile
from pathlib import Path

from plantstub.config import Settings
from plantstub.errors import ConfigError


def server_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context the stub listens with; None: plain HTTP.

    :raises ConfigError: the certificate or key cannot be read, or do not belong together.
    """
    if settings.tls_cert is None or settings.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(settings.tls_cert, settings.tls_key)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{settings.name_of('tls_cert')}={str(settings.tls_cert)!r}, "
                          f"{settings.name_of('tls_key')}={str(settings.tls_key)!r}: cannot load "
                          f"the certificate and key ({reason}); expected PEM files, the key the certificate's") from None
    return context


class Throwaway:
    """A CA made for this stub alone and a certificate it signed for 127.0.0.1, ::1, localhost and `host`, as PEM
    files in a temporary folder (`ca_file` is the one a client trusts); `close()` removes them."""

    def __init__(self, host: str, asked: str = "tls=True (pytest: --plantstub-tls)") -> None:
        """`asked`: the option that asked for it, as the user gave it (the CLI's `--tls`), named when trustme is
        missing."""
        try:
            import trustme
        except ImportError:
            raise ConfigError(f"{asked} needs the trustme package to make a throwaway certificate: "
                              "pip install 'plantstub[tls]'") from None
        ca = trustme.CA(organization_name="plantstub throwaway CA")
        names = list(dict.fromkeys(("127.0.0.1", "::1", "localhost", host)))
        issued = ca.issue_cert(*[name for name in names if name not in ("0.0.0.0", "::", "")])
        self.folder = Path(tempfile.mkdtemp(prefix="plantstub-tls-"))
        self.ca_file = self.folder / "ca.pem"
        self.cert_file = self.folder / "cert.pem"
        self.key_file = self.folder / "key.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        issued.private_key_pem.write_to_path(str(self.key_file))
        for i, blob in enumerate(issued.cert_chain_pems):
            blob.write_to_path(str(self.cert_file), append=i > 0)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
