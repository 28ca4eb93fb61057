"""Bearer-token authorisation: the token file, and the check of a client's Authorization header."""

from __future__ import annotations

import hmac
from pathlib import Path

from drafts.errors import ConfigError

SCHEME = "Bearer "


def read_token(path: Path) -> str:
    """The secret in ``path`` (surrounding whitespace stripped); refuses an empty or short one."""
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise ConfigError(
            f"the token in {path} is {'empty' if not token else 'too short'}; write a long random secret, "
            'e.g. python -c "import secrets; print(secrets.token_urlsafe(32))" > ' + str(path)
        )
    return token


def authorized(header: str | None, token: str) -> bool:
    """Whether ``header`` is ``Bearer <token>`` (compared in constant time)."""
    if header is None or not header.startswith(SCHEME):
        return False
    return hmac.compare_digest(header[len(SCHEME) :].strip().encode(), token.encode())


def bearer(token: str) -> str:
    """The Authorization header value a client sends."""
    return SCHEME + token
