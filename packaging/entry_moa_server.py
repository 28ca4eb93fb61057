"""The frozen ``moa-server`` launcher, the verifier ``moa-chat --demo`` starts as a sibling."""

from server_stub.cli import main

raise SystemExit(main())
