"""Markdown rows for the README from moa-bench JSON files: python runs/md_table.py FILE.json ..."""
import json, sys
print("| dataset | T | dtype | draft shape | prompts × tokens | method | tau | tok/s | speedup vs ar | pos-1 accept | draft ms/round | verify ms/round | identical to ar |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sys.argv[1:]:
    d = json.load(open(f)); c = d["config"]
    for m, s in d["methods"].items():
        if m == "ar":
            ms = f"{1000 / s['tokens_per_s']:.1f} ms/token"
        p1 = s["per_position_acceptance"].get("1")
        ident = {True: "yes", False: "**no**", None: "-"}[s["identical_to_ar"]]
        row = [c["dataset"], f"{c['temperature']:g}", c["dtype"], c["draft_shape"], f"{c['prompts']} × {c['max_new_tokens']}", m,
               f"{s['tau']:.2f}", f"{s['tokens_per_s']:.1f}", f"{s['speedup']:.2f}x", "-" if p1 is None else f"{p1:.2f}",
               f"{s['draft_ms_per_round'] or 0:.1f}", f"{s['verify_ms_per_round'] or 0:.1f}", ident]
        print("| " + " | ".join(row) + " |")
