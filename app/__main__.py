"""``python -m app``: the same as ``moa-chat``."""

from app.cli import main

raise SystemExit(main())
