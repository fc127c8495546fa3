#!/usr/bin/env bash
# shake's fold and undo beside pi's own open + project + estimate of the same session, in CPU
# (user + system), interleaved so both see the same machine: each run takes a fresh copy and a
# fresh store, imports it and dry-runs it first (the token cache warm), then times pi in a fresh
# Node process (docs/bench/pi-meter.mjs), shake's fold, and the undo right after it. Prints each
# run and the least of each (docs/bench/notebook.md, "Issue 12's targets, each as it ends").
#
#   docs/bench/cmp.sh SHAKE SESSION.jsonl WORKDIR [RUNS]     # WORKDIR is emptied first; RUNS 5
set -euo pipefail
S=$1 F=$2 W=$3 N=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$here/../../tests/oracle/node_modules" ] || (cd "$here/../../tests/oracle" && npm ci --no-audit --no-fund)
export SHAKE_QUIET=1
cpu() { { /usr/bin/time -f '%U %S' "$@" >/dev/null; } 2>&1 | tail -1 | awk '{ printf "%.2f", $1 + $2 }'; }
for r in $(seq "$N"); do
  rm -rf "$W" && mkdir -p "$W" && cp "$F" "$W/s.jsonl" && touch -d '-1 hour' "$W/s.jsonl"
  export SHAKE_DIR=$W/store
  "$S" import "$W/s.jsonl" >/dev/null && "$S" fold --dry-run "$W/s.jsonl" >/dev/null
  echo "$(cpu node "$here/pi-meter.mjs" "$F" 1) $(cpu "$S" fold "$W/s.jsonl") $(cpu "$S" undo "$W/s.jsonl")"
done | awk '
  { printf "run %d: pi %s s, shake fold %s s, shake undo %s s\n", NR, $1, $2, $3
    for (i = 1; i <= 3; i++) if (NR == 1 || $i < least[i]) least[i] = $i }
  END { printf "least: pi %.2f s, fold %.2f s, undo %.2f s (undo / pi %.2f)\n", least[1], least[2], least[3], least[3] / least[1] }'
