#!/usr/bin/env bash
# The instructions (valgrind's cachegrind) of one Claude Code status-line turn: TRANSCRIPT is cut
# after its second-to-last assistant row and metered once (the memo), then grown by the rows up
# to its last assistant row and metered again under cachegrind, as Claude Code runs it after a
# message (docs/bench/notebook.md, "claudegrow"). Deterministic, so two builds compare on a loaded
# machine.
#
#   docs/bench/statusline_count.sh SHAKE TRANSCRIPT WORKDIR [MORE ARGS]   # WORKDIR is emptied first
set -euo pipefail
S=$1 T=$2 W=$3
shift 3
rm -rf "$W" && mkdir -p "$W"
python3 - "$T" "$W" <<'PY'
import json, sys
lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)
ends = [i + 1 for i, l in enumerate(lines) if l.startswith(b"{") and json.loads(l).get("type") == "assistant"]
open(sys.argv[2] + "/old.jsonl", "wb").writelines(lines[: ends[-2]])
open(sys.argv[2] + "/turn.jsonl", "wb").writelines(lines[ends[-2] : ends[-1]])
PY
cp "$W/old.jsonl" "$W/t.jsonl"
export SHAKE_DIR=$W/store NO_COLOR=1
input="{\"session_id\":\"bench\",\"transcript_path\":\"$W/t.jsonl\",\"cwd\":\"$W\"}"
echo "$input" | "$S" meter --statusline "$@" >/dev/null
cat "$W/turn.jsonl" >>"$W/t.jsonl"
echo "$input" | valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$S" meter --statusline "$@" 2>&1 >/dev/null |
  awk '/I *refs/ { gsub(",", "", $NF); printf "turn %.1f M instructions\n", $NF / 1e6 }'
