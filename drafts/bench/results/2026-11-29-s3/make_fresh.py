"""ShareGPT train conversations at positions [START, START+N) of the seed-0 epoch-0 order: the
conversations the 1M-token drafts have not seen yet (their runs stopped at cursor 2368)."""
import json, random, sys
from drafts.training.data import load_training_conversations
start, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
convs = load_training_conversations("sharegpt")
order = list(range(len(convs)))
random.Random(0 * 1000 + 0).shuffle(order)
FROM = {"user": "human", "assistant": "gpt", "system": "system"}
with open(out, "w") as f:
    for i in order[start:start + n]:
        c = convs[i]
        f.write(json.dumps({"id": c.id, "conversations": [{"from": FROM[t.role], "value": t.content} for t in c.turns]}) + "\n")
back = load_training_conversations(out)
assert [c.turns for c in back] == [convs[i].turns for i in order[start:start + n]], "round trip differs"
print(len(back), "conversations written to", out)
