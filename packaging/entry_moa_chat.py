"""The frozen ``moa-chat`` launcher: the same entry point as the ``moa-chat`` script."""

from app.cli import main

raise SystemExit(main())
