"""Bearer tokens: read from a file, compared exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from drafts.errors import ConfigError
from server_stub.auth import authorized, bearer, read_token

TOKEN = "s3cret-token-of-reasonable-length"


def test_only_the_exact_bearer_token_is_authorized() -> None:
    assert authorized(bearer(TOKEN), TOKEN)
    assert not authorized(None, TOKEN)
    assert not authorized(TOKEN, TOKEN)  # no scheme
    assert not authorized(bearer(TOKEN + "x"), TOKEN)
    assert not authorized("Basic " + TOKEN, TOKEN)


def test_the_token_file_is_stripped_and_a_short_token_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n")
    assert read_token(path) == TOKEN

    path.write_text("short\n")
    with pytest.raises(ConfigError, match="token_urlsafe"):
        read_token(path)
