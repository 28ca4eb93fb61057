"""Where the round trips of a `probe.py` run went: per link and method, the requests by kind.

    python3 drafts/bench/results/2026-12-02-s7/remote/requests.py requests-humaneval-tree6-10-60.json

The probe logs every request the client engine sent (its kind, drafted nodes, tokens accepted,
the verifier's own time) and marks each generation's start and end; generations come in the
order the benchmark ran them: the warm-up of each engine, then per link the prompts, methods
rotating. A request sent ``pipelined`` rides on the round trip of one in flight.
"""

from __future__ import annotations

import json
import sys
from collections import Counter


def generations(rows: list[dict]) -> list[dict]:
    gens: list[dict] = []
    current: dict | None = None
    for row in rows:
        if row["type"] == "GEN":
            current = {"prompt": row["prompt"], "requests": [], "t0": row["t0"]}
            gens.append(current)
        elif row["type"] == "END" and current is not None:
            current.update(new=row["new"], wall_s=row["t0"] - current["t0"])
            current = None
        elif current is not None:
            current["requests"].append(row)
    return gens


def describe(gen: dict) -> str:
    reqs = gen["requests"]
    kinds = Counter(r["type"] for r in reqs)
    trips = sum(not r.get("pipelined", False) for r in reqs)
    verify = [r for r in reqs if r["type"] == "Verify"]
    accepted = sum(r.get("accepted", 0) for r in verify)
    nodes = sorted({r["nodes"] for r in verify})
    server = [r["server_ms"] for r in verify if "server_ms" in r]
    tau = (accepted + len(verify)) / len(verify) if verify else 0.0
    return (
        f"prompt {gen['prompt']:>4}  new {gen.get('new', 0):>3}  round trips {trips:>3}  requests {dict(kinds)}  "
        f"prefill chunks {[r['nodes'] for r in reqs if r['type'] == 'Prefill']}  nodes sent {nodes}  "
        f"tau {tau:.2f}  verifier ms/round {sum(server) / max(len(server), 1):.0f}  wall {gen.get('wall_s', 0):.1f} s"
    )


def main(path: str) -> None:
    with open(path) as f:
        rows = json.load(f)
    for gen in generations(rows):
        print(describe(gen))


if __name__ == "__main__":
    main(sys.argv[1])
