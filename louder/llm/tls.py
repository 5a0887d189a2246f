"""One TLS context per process for louder's own HTTP clients.

httpx builds a new context for every client and for every one-off ``httpx.get``/``post``, and building one
loads the CA bundle: ~26 ms here, once per model, per preflight and per embeddings request. A context is safe
to share between clients and threads, and this one trusts exactly what httpx's default would
(``httpx.create_ssl_context()``: SSL_CERT_FILE or SSL_CERT_DIR when set, else certifi's bundle)."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def context() -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()
