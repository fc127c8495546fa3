"""Writes shake's Claude vocabularies (`pieces-v3.bin`, `pieces-v4_7.bin`) from ctok's wheel.

Run once per ctok release, from the unpacked wheels of ctok 1.3.0 and of ctok 1.0.0 (the
vocabulary oh-my-pi 18.2.11's native port carries; `pip download --no-deps ctok==1.3.0`, unzip):
`python3 extract.py WHEEL_DIR_1_3_0 WHEEL_DIR_1_0_0`. ctok 1.3.0 is MIT (Sander Land; LICENSE.ctok beside
this file). Not used at run time: shake embeds the files this writes.

Each file is the family's tiling vocabulary in ctok's internal marked form (markers as the
noncharacters U+FDD0 bow, U+FDD1 eow, U+FDD3 shift, U+FDD4 caps; byte atoms decoded), every
piece's UTF-8 followed by 0xFF, sorted; the glued contraction spellings (`'s` + eow) included.
Then 0xFE and the byte-fallback prefixes, each as its raw bytes followed by 0xFF. Then 0xFE and
the pieces of 1.3.0 that 1.0.0 lacks (and so OMP's count), then 0xFE and the byte-fallback
prefixes it lacks, the same way. Neither 0xFE nor
0xFF occurs in UTF-8.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from ctok.notation import parse_marked  # noqa: E402
from ctok.constants import EOW_G  # noqa: E402

def vocabulary(root, name):
    doc = json.loads((Path(root) / "ctok" / "data" / name).read_text(encoding="utf-8"))
    tokens = doc["tokens"]
    vocab = {parse_marked(p) for group, ps in tokens.items() if group != "bytes_fallback" for p in ps}
    return doc, vocab | {c + EOW_G for c in tokens["contractions"]}


for name, out in (("pieces_v3.json", "pieces-v3.bin"), ("pieces_v4_7.json", "pieces-v4_7.bin")):
    doc, vocab = vocabulary(sys.argv[1], name)
    tokens = doc["tokens"]
    _, older = vocabulary(sys.argv[2], name)
    blob = bytearray()
    for piece in sorted(vocab):
        data = piece.encode("utf-8")
        assert b"\xff" not in data and b"\xfe" not in data
        blob += data + b"\xff"
    blob += b"\xfe"
    for hexed in sorted(tokens["bytes_fallback"]):
        blob += bytes.fromhex(hexed) + b"\xff"
    blob += b"\xfe"
    for piece in sorted(vocab - older):
        blob += piece.encode("utf-8") + b"\xff"
    blob += b"\xfe"
    old_bytes = json.loads((Path(sys.argv[2]) / "ctok" / "data" / name).read_text(encoding="utf-8"))
    for hexed in sorted(set(tokens["bytes_fallback"]) - set(old_bytes["tokens"]["bytes_fallback"])):
        blob += bytes.fromhex(hexed) + b"\xff"
    (Path(__file__).parent / out).write_bytes(bytes(blob))
    print(out, len(vocab), len(tokens["bytes_fallback"]), len(vocab - older), len(older - vocab), len(blob))
