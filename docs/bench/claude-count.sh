#!/usr/bin/env bash
# Cold counts with Claude's tokenizer beside o200k's, and the OMP meter on a Claude-model session
# beside OMP's own code counting the same regions (docs/tokens.md, "Speed"). CPU seconds (user +
# sys) and wall seconds of each, each in a fresh private store (no token cache).
#
#   docs/bench/claude-count.sh SHAKE PI_SESSION.jsonl OMP_SESSION.jsonl WORKDIR
set -euo pipefail
S=$1 P=$2 O=$3 W=$4
ORACLE=$(cd "$(dirname "$0")/../../tests/omp-oracle" && pwd)
rm -rf "$W" && mkdir -p "$W"
run() { # label, command...
  local t=$W/time
  /usr/bin/time -f '%U %S %e' -o "$t" "${@:2}" >/dev/null 2>&1
  awk -v l="$1" '{ printf "%-28s cpu %.2f s  wall %.2f s\n", l, $1 + $2, $3 }' "$t"
}
for tok in o200k claude-v3; do
  run "count-tokens $tok (cold)" env SHAKE_DIR="$W/store-$tok" "$S" count-tokens "$P" --tokenizer "$tok"
  run "count-tokens $tok (warm)" env SHAKE_DIR="$W/store-$tok" "$S" count-tokens "$P" --tokenizer "$tok"
done
run "omp meter (cold)" env SHAKE_DIR="$W/store-omp" "$S" meter --json "$O"
run "omp regions.ts (OMP's code)" "$ORACLE/node_modules/.bin/bun" "$ORACLE/regions.ts" "$O" --model anthropic/claude-sonnet-4-5
