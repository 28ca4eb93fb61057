"""moa-chat client (TUI and remote engine)."""
