#!/usr/bin/env python3
"""The cost of `shake meter --statusline` per Claude Code turn (docs/bench/notebook.md, "Claude Code
status line").

Replays a real transcript turn by turn: the file is cut after an assistant row, and each step
appends the rows up to the next assistant row (what Claude Code has written when it runs the
status line after a message), then runs the status line once with Claude Code's JSON on stdin,
as Claude Code does: a new process per message.

  cold       a fresh store (no token cache, no memo): the first call, or after `shake gc`
  turn       the store kept from the step before: the file grew by one turn's rows
  unchanged  the same file again at once (modified < 2 s ago: the memo re-hashes the bytes)
  settled    the same file again 2 s later (the memo answers from one stat)

Usage: statusline.py SHAKE TRANSCRIPT [STEPS [MORE ARGS]]   (default 20 steps, at the end of the
file; MORE ARGS go to `shake meter --statusline`, e.g. `--tokenizer pi`)
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(shake, store, path, more):
    """Runs the status line once; returns (wall s, CPU s, line)."""
    stdin = json.dumps({"session_id": "bench", "transcript_path": path, "cwd": os.path.dirname(path)})
    env = {**os.environ, "SHAKE_DIR": store, "NO_COLOR": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([shake, "meter", "--statusline", *more], input=stdin, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0 or out.stderr:
        sys.exit(f"status line failed: {out.returncode} {out.stderr}")
    return wall, cpu, out.stdout.strip()


def main():
    shake, transcript = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    more = sys.argv[4:]
    lines = open(transcript, "rb").read().splitlines(keepends=True)
    ends = [i + 1 for i, l in enumerate(lines) if l.startswith(b"{") and json.loads(l).get("type") == "assistant"]
    cuts = ends[-(steps + 1):]
    work = tempfile.mkdtemp(prefix="shake-statusline-")
    path = os.path.join(work, "transcript.jsonl")
    with open(path, "wb") as f:
        f.writelines(lines[: cuts[0]])
    cold = run(shake, os.path.join(work, "cold"), path, more)
    store = os.path.join(work, "store")
    run(shake, store, path, more)
    rows = {"turn": [], "unchanged": [], "settled": []}
    line = cold[2]
    for a, b in zip(cuts, cuts[1:]):
        with open(path, "ab") as f:
            f.writelines(lines[a:b])
        rows["turn"].append(run(shake, store, path, more))
        rows["unchanged"].append(run(shake, store, path, more))
    time.sleep(2.1)
    for _ in range(5):
        rows["settled"].append(run(shake, store, path, more))
    line = rows["turn"][-1][2]
    size = os.path.getsize(path)
    print(f"{transcript} {' '.join(more)}: {len(cuts) - 1} turns replayed, file {cuts[0]}..{cuts[-1]} lines, {size:,} B at the end; last line {line!r}")
    print(f"| cold (fresh store) | {cold[0] * 1000:.0f} ms | {cold[1] * 1000:.0f} ms |")
    for name, r in rows.items():
        walls, cpus = [x[0] * 1000 for x in r], [x[1] * 1000 for x in r]
        print(
            f"| {name} (median of {len(r)}, min-max wall) | {statistics.median(walls):.0f} ms"
            f" ({min(walls):.0f}-{max(walls):.0f}) | {statistics.median(cpus):.0f} ms |"
        )


if __name__ == "__main__":
    main()
