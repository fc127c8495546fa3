"""ctok 1.3.0's counts: `python3 count.py TEXTS.json` prints, for each text of the JSON array,
[v3, v4.7, v4.8] as ctok.token_count gives them (content plus the message frame)."""

import json
import sys

import ctok

texts = json.load(open(sys.argv[1], encoding="utf-8"))
print(json.dumps([[ctok.token_count(t, v) for v in ("3.0", "4.7", "4.8")] for t in texts]))
