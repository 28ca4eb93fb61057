"""``python -m server_stub``: the same as ``moa-server``."""

from server_stub.cli import main

raise SystemExit(main())
