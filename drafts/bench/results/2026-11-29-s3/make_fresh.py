"""ShareGPT train conversations at positions [START, START+N) of the seed-0 epoch-0 order.

These are the conversations the 1M-token drafts have not seen yet (their runs stopped at cursor
2368). Usage: python make_fresh.py START N OUT.jsonl
"""

import json
import random
import sys

from drafts.training.data import load_training_conversations

FROM = {"user": "human", "assistant": "gpt", "system": "system"}


def main(start: int, n: int, out: str) -> None:
    convs = load_training_conversations("sharegpt")
    order = list(range(len(convs)))
    random.Random(0 * 1000 + 0).shuffle(order)
    chosen = order[start : start + n]
    with open(out, "w") as f:
        for i in chosen:
            turns = [{"from": FROM[t.role], "value": t.content} for t in convs[i].turns]
            f.write(json.dumps({"id": convs[i].id, "conversations": turns}) + "\n")
    back = load_training_conversations(out)
    assert [c.turns for c in back] == [convs[i].turns for i in chosen], "round trip differs"
    print(len(back), "conversations written to", out)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
