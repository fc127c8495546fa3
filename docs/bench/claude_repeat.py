#!/usr/bin/env python3
"""A big Claude Code transcript from a small real one, for docs/benchmarks.md.

    docs/bench/claude_repeat.py SRC COPIES OUT

Writes SRC's lines COPIES times to OUT as one session: in each copy every uuid but the session
id, and every `msg_` and `toolu_` id, is renamed (so no two copies share a name), and each copy's
root row is chained to the last row of the copy before. The rows stay Claude Code's own (SRC is
a transcript the real Claude Code wrote, e.g. tests/fixtures/claude/bash-read/transcript.jsonl).
"""
import hashlib
import json
import re
import sys

UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ROW_UUID = re.compile(rb'"uuid":"([0-9a-f-]{36})"')
API_ID = re.compile(rb"\b(msg|toolu)_[0-9A-Za-z]+")


def renamed(copy, name):
    """`name`'s stand-in in copy `copy`: same shape, fixed for a given (copy, name)."""
    digest = hashlib.blake2b(b"%d:" % copy + name, digest_size=16).hexdigest().encode()
    if UUID.fullmatch(name):
        return b"-".join((digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32]))
    return name.split(b"_", 1)[0] + b"_" + digest[:24]


def main(src, copies, out):
    lines = open(src, "rb").read().splitlines()
    session = next(json.loads(l)["sessionId"] for l in lines if b'"sessionId"' in l).encode()
    last = None  # the uuid of the last row written
    with open(out, "wb") as w:
        for copy in range(copies):
            names = {}

            def name(m):
                old = m.group(0)
                if old == session or copy == 0:
                    return old
                return names.setdefault(old, renamed(copy, old))

            chained = False
            for line in lines:
                line = API_ID.sub(name, UUID.sub(name, line))
                if last is not None and not chained and line.startswith(b'{"parentUuid":null'):
                    line = b'{"parentUuid":"' + last + b'"' + line[len(b'{"parentUuid":null') :]
                    chained = True
                row = ROW_UUID.search(line)
                last = row.group(1) if row else last
                w.write(line + b"\n")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
