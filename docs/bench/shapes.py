#!/usr/bin/env python3
"""Session shapes for docs/bench/run.sh that `shake generate-session` does not make.

  shapes.py tiny N OUT          a chain of N tiny entries (~400 bytes a line): user, assistant with
                                a tool call, its tool result, assistant answer, over and over
  shapes.py grow N FILE         appends N tiny entries after FILE's last entry
  shapes.py line BYTES OUT      one tool result of BYTES bytes (a single huge line) in a short chain
  shapes.py lines BYTES K OUT   the same text as `line` in K tool results of BYTES/K bytes each
                                (ordinary lines: what the single line is compared with)
  shapes.py leaves K IN OUT     IN plus K rewinds: a new user message under an earlier message,
                                as pi's /tree then a prompt writes it (K branch tips)
  shapes.py append OUT          appends one new 2 KB tool result after the file's last entry

Every file is what pi 1.6.0 writes: a v3 header, 8-hex ids, ISO timestamps, `JSON.stringify`
spacing (checked by loading it with pi's own code in run.sh). Deterministic: the same arguments
give the same bytes (ids from a counter, not random), except `append`, which must be new text.
"""

import json
import os
import sys
import time

HEADER = {"type": "session", "version": 3, "id": "019eed19-0000-7000-8000-000000000001",
          "timestamp": "2026-06-22T02:11:53.527Z", "cwd": "/home/dev/proj"}


def dumps(obj):
    # JSON.stringify: no spaces, non-ASCII kept.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class Chain:
    """Writes entries chained by parentId with ids from a counter."""

    def __init__(self, out, parent=None, first_id=1):
        self.out = out
        self.parent = parent
        self.n = first_id
        self.written = 0

    def entry(self, message=None, **fields):
        eid = f"{self.n:08x}"
        self.n += 1
        ms = 1782094318000 + self.n * 1000
        secs, milli = divmod(ms, 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{milli:03d}Z"
        e = {"type": "message", "id": eid, "parentId": self.parent, "timestamp": stamp}
        e.update(fields)
        if message is not None:
            message["timestamp"] = ms
            e["message"] = message
        self.out.write(dumps(e) + "\n")
        self.parent = eid
        self.written += 1
        return eid


USAGE = {"input": 120, "output": 30, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 150,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def assistant(content):
    return {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4-5", "usage": USAGE, "stopReason": "stop"}


def turns(c, n, turn=0):
    """Writes `n` tiny entries through chain `c`: four-entry turns of a few hundred bytes each."""
    stop = c.written + n
    while c.written < stop:
        turn += 1
        c.entry({"role": "user", "content": f"step {turn}: check the build and tell me what failed"})
        if c.written >= stop:
            break
        call = f"toolu_{c.n:020d}"
        c.entry(assistant([{"type": "toolCall", "id": call, "name": "bash",
                            "arguments": {"command": f"cargo test -p core step_{turn}"}}]))
        if c.written >= stop:
            break
        text = "".join(f"test step_{turn}::case_{i} ... {'ok' if i % 5 else 'FAILED'}\n" for i in range(8))
        c.entry({"role": "toolResult", "toolCallId": call, "toolName": "bash",
                 "content": [{"type": "text", "text": text}], "isError": False})
        if c.written >= stop:
            break
        c.entry(assistant([{"type": "text", "text": f"Step {turn}: one case failed; the others pass."}]))


def tiny(n, path):
    """N tiny entries in one chain."""
    with open(path, "w", encoding="utf-8") as out:
        out.write(dumps(HEADER) + "\n")
        turns(Chain(out), n)


def grow(n, path):
    """Appends `n` tiny entries continuing the file's last entry (ids after the file's line count)."""
    with open(path, "rb") as f:
        lines = f.read().count(b"\n")
    with open(path, "a", encoding="utf-8") as out:
        turns(Chain(out, parent=last_id(path), first_id=0x40000000 + lines), n, turn=lines)


def build_output(size):
    """`size` bytes of build output: numbered rows with spaces, as a real log has (every row
    differs, so no two slices of it are the same text for the token cache)."""
    rows, n, total = [], 0, 0
    while total < size:
        n += 1
        row = f"error[E0308]: mismatched types at src/lib.rs:{n}:5 expected `u64`, found `usize` ...\n"
        rows.append(row)
        total += len(row)
    return "".join(rows)[:size]


def line(size, path):
    """One tool result of `size` bytes of build output, inside a four-entry chain."""
    lines(size, 1, path)


def lines(size, k, path):
    """The text of `line(size)` in `k` tool results (one turn each), then the same closing turn,
    so both shapes put the same bytes of tool output before the protected tail."""
    text = build_output(size)
    step = -(-len(text) // k)
    with open(path, "w", encoding="utf-8") as out:
        out.write(dumps(HEADER) + "\n")
        c = Chain(out)
        for n, at in enumerate(range(0, len(text), step)):
            call = "toolu_huge" if k == 1 else f"toolu_{n:08d}"
            c.entry({"role": "user", "content": "build it"})
            c.entry(assistant([{"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "cargo build"}}]))
            c.entry({"role": "toolResult", "toolCallId": call, "toolName": "bash",
                     "content": [{"type": "text", "text": text[at:at + step]}], "isError": True})
            c.entry(assistant([{"type": "text", "text": "The build fails with a type error."}]))
        c.entry({"role": "user", "content": "fix it " + "and explain " * 2000})
        c.entry(assistant([{"type": "text", "text": "Done."}]))


def leaves(k, src, path):
    """`src` plus `k` rewinds, spread evenly over its message entries."""
    ids = []
    with open(src, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as out:
        for l in f:
            out.write(l)
            try:
                e = json.loads(l)
            except ValueError:
                continue
            if e.get("type") == "message" and e.get("message", {}).get("role") in ("user", "assistant"):
                ids.append(e["id"])
        step = max(1, len(ids) // (k + 1))
        c = Chain(out, first_id=0x70000000)
        for i in range(k):
            c.parent = ids[min(len(ids) - 1, (i + 1) * step)]
            c.entry({"role": "user", "content": [{"type": "text", "text": f"rewind {i}: try another way"}]})


def last_id(path):
    """The id of the file's last entry (read from its last MiB)."""
    last = None
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - (1 << 20)))
        for l in f.read().split(b"\n"):
            try:
                e = json.loads(l)
            except ValueError:
                continue
            if e.get("type") != "session" and "id" in e:
                last = e["id"]
    return last


def append(path):
    """One new tool result after the last entry (new text every time: a cache miss)."""
    last = last_id(path)
    new_id = os.urandom(4).hex()
    text = "".join(f"line {i} of {new_id}: appended build output\n" for i in range(48))
    e = {"type": "message", "id": new_id, "parentId": last, "timestamp": "2026-11-30T12:00:00.000Z",
         "message": {"role": "toolResult", "toolCallId": "bench", "toolName": "bash",
                     "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 0}}
    with open(path, "a", encoding="utf-8") as f:
        f.write(dumps(e) + "\n")


if __name__ == "__main__":
    kind, *rest = sys.argv[1:]
    if kind == "tiny":
        tiny(int(rest[0]), rest[1])
    elif kind == "grow":
        grow(int(rest[0]), rest[1])
    elif kind == "line":
        line(int(rest[0]), rest[1])
    elif kind == "lines":
        lines(int(rest[0]), int(rest[1]), rest[2])
    elif kind == "leaves":
        leaves(int(rest[0]), rest[1], rest[2])
    elif kind == "append":
        append(rest[0])
    else:
        sys.exit(__doc__)
