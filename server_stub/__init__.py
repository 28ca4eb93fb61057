"""moa-server: the verifier server."""
