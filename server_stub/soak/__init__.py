"""The verifier's soak suite: a real server hammered by real clients, with every answer checked.

    python -m server_stub.soak --frames 10000 --clients 32 --minutes 10 --cuts 100

runs ``moa-server`` as a subprocess (so its memory, file descriptors and log are its own) and:

    malformed   frames by the thousand (random, bit-flipped, truncated, lying lengths, shapes and
                dtypes, out of order, text frames, frames over the limits), a correct client's
                round checked every 100 frames: crashes, hangs, tracebacks in the log
    crowd       N clients for M minutes, each round checked against the target's own greedy
                output, beside an attacker sending poisoned verifies: errors, wrong answers,
                round latency (p50/p99), the server's memory over time
    burst       32 new connections at once beside clients already verifying: their first-token
                wait and the running clients' round latency (does a prefill starve a verify?)
    cuts        clients through the link shaper, cut at random points and resumed: divergences
    cancel      Cancel and Bye during a Generate: steps run after it, time until the session closes

The drafts are *oracle* drafts: the client knows the target's greedy continuation, drafts the
next few tokens of it, corrupting one at random, and checks the server accepts exactly up to the
corruption and answers the reference token after it. So every round is checked, not just the
output at the end. ``tests/server_stub/test_soak.py`` runs the same phases, small, in-process.
"""
