"""``moa-bench-remote``: the remote engine measured over shaped links against a moa-server on loopback.

remote.py  run_remote_benchmark: links x prompts x methods, interleaved; the disconnection study
cli.py     the command line: loads the drafts, starts moa-server in a subprocess, prints a table
"""
