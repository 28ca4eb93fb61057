"""The fixed-response twin of a regenerated file: same conversations, same (possibly cut) user
turns, but each assistant turn holds ShareGPT's original reply instead of the target's.

Usage: python pair_fixed.py REGEN.jsonl ORIGINAL.jsonl OUT.jsonl
"""

import json
import sys


def original_replies(path: str) -> dict[str, list[str]]:
    replies: dict[str, list[str]] = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            replies[row["id"]] = [t["value"] for t in row["conversations"] if t["from"] == "gpt"]
    return replies


def main(regen: str, original: str, out: str) -> None:
    replies = original_replies(original)
    written = 0
    with open(regen) as src, open(out, "w") as dst:
        for line in src:
            row = json.loads(line)
            theirs = iter(replies[row["id"]])
            turns = [
                {"from": t["from"], "value": next(theirs) if t["from"] == "gpt" else t["value"]}
                for t in row["conversations"]
            ]
            dst.write(json.dumps({"id": row["id"], "conversations": turns}) + "\n")
            written += 1
    print(written, "conversations written to", out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
