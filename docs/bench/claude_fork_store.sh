#!/bin/sh
# What a fork of a Claude Code transcript costs the store (docs/bench/notebook.md, "Claude Code: a
# fork in the store"): a fresh store imports the transcript, `shake fold` writes the fork, and a
# second fresh store imports the source, then the fork alone, so the fork's own objects and pack
# bytes show.
#   docs/bench/claude_fork_store.sh SHAKE TRANSCRIPT WORKDIR
# TRANSCRIPT is copied to WORKDIR/.claude/projects/-w/<its session id>.jsonl (HOME is WORKDIR,
# so nothing of yours is read or written).
set -eu
S=$1 T=$2 W=$3
rm -rf "$W" && mkdir -p "$W/.claude/projects/-w"
SID=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except ValueError: continue
    if isinstance(r, dict) and isinstance(r.get("sessionId"), str): print(r["sessionId"]); break' "$T")
F="$W/.claude/projects/-w/$SID.jsonl"
cp "$T" "$F"
packs() { du -sb "$1/packs" | cut -f1; }
objects() { python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["newObjects"])'; }
echo "source: $(wc -c <"$F") bytes, $(wc -l <"$F") lines"
HOME=$W SHAKE_DIR=$W/s1 "$S" fold --json "$F" >"$W/fold.json"
FORK=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fork"]["path"])' "$W/fold.json")
echo "fork: $(wc -c <"$FORK") bytes, $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["toolResults"])' "$W/fold.json") results folded"
N1=$(HOME=$W SHAKE_DIR=$W/s2 "$S" import --json "$F" | objects); P1=$(packs "$W/s2")
N2=$(HOME=$W SHAKE_DIR=$W/s2 "$S" import --json "$FORK" | objects); P2=$(packs "$W/s2")
echo "import of the source: $N1 objects, $P1 pack bytes"
echo "import of the fork after it: $N2 objects, $((P2 - P1)) pack bytes"
HOME=$W SHAKE_DIR=$W/s2 "$S" fsck
HOME=$W SHAKE_DIR=$W/s2 "$S" restore --version 1 -o - "$FORK" | cmp - "$FORK" && echo "restore of the fork: exact"
