#!/usr/bin/env bash
# The cold OMP meter beside OMP's own code, on one session file, in ONE run: shake's first
# `meter` of the file (a fresh store each time: read, import, count every text, regions) and
# OMP 18.2.11's `collectShakeRegions` with its own Tokenizer in a fresh Bun process
# (tests/omp-oracle/regions.ts: Bun's start, loading OMP, reading and parsing the file, one run),
# taken in turn (A B A B …) so both see the same machine; the ratio A/B is taken pair by pair.
# CPU is user + system of the whole process (/usr/bin/time, 10 ms resolution): on a shared
# machine wall time is mostly waiting for a core, so CPU is the steadier figure. With
# INSTR=1 it also counts the instructions of one cold meter under valgrind's callgrind, which
# do not depend on the load (about a minute per 5 MB).
#
#   cargo build --release --bin shake
#   shake --host omp generate-session --seed 1 --size 30M --model anthropic/claude-sonnet-4-5 -o omp30.jsonl
#   docs/bench/omp-cold.sh omp30.jsonl [RUNS]            # RUNS pairs, default 5
#   SHAKE_BIN=path/to/shake INSTR=1 docs/bench/omp-cold.sh omp30.jsonl
#
# The file's model is the one shake reads from it; OMP is given the same. Not a test: read the
# figures (docs/bench/notebook.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SHAKE=${SHAKE_BIN:-$ROOT/target/release/shake}
BUN=$ROOT/tests/omp-oracle/node_modules/.bin/bun
[ -e tests/omp-oracle/node_modules/.omp-oracle-ready ] || bash tests/omp-oracle/setup.sh
src=$1
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src" "$work/s.jsonl"
touch -d '-1 hour' "$work/s.jsonl"
export SHAKE_DIR=$work/store SHAKE_QUIET=1

reading=$("$SHAKE" meter --host omp --json "$work/s.jsonl")
model=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["model"] or "")' "$reading")
omp=$("$BUN" tests/omp-oracle/regions.ts "$work/s.jsonl" --model "$model")
python3 - "$reading" "$omp" <<'PY'
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"shake: ~{ours['tokens']:,} tokens ({ours['tokenizer']}); OMP: ~{theirs['freed']:,} ({theirs['encoding']})")
if ours["tokens"] != theirs["freed"]:
    sys.exit("the figures differ: fix that before timing anything")
PY

# One timed run of a command: "wall cpu".
timed() {
  /usr/bin/time -o "$work/time" -f "%e %U %S" "$@" >/dev/null 2>&1
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/time"
}

echo "$(basename "$src") ($(stat -c %s "$src") bytes; $model), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
for i in $(seq "$runs"); do
  rm -rf "$work/store"
  a=$(timed "$SHAKE" meter --host omp "$work/s.jsonl")
  b=$(timed "$BUN" tests/omp-oracle/regions.ts "$work/s.jsonl" --model "$model")
  echo "$i $a $b"
done | awk '
  { n++; aw[n] = $2; ac[n] = $3; bw[n] = $4; bc[n] = $5
    rc[n] = ($5 > 0) ? $3 / $5 : 0; rw[n] = ($4 > 0) ? $2 / $4 : 0
    printf "pair %d: shake cold %s s wall, %s s CPU; OMP fresh Bun %s s wall, %s s CPU; A/B CPU %.2f, wall %.2f\n", n, $2, $3, $4, $5, rc[n], rw[n] }
  function median(v, n,   i, j, t, w) { for (i = 1; i <= n; i++) w[i] = v[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t }
    return (n % 2) ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2 }
  END { printf "median: shake cold %.2f s wall, %.2f s CPU; OMP %.2f s wall, %.2f s CPU; A/B (pair by pair) CPU %.2f, wall %.2f\n",
    median(aw, n), median(ac, n), median(bw, n), median(bc, n), median(rc, n), median(rw, n) }'

if [ "${INSTR:-0}" = 1 ]; then
  rm -rf "$work/store"
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$SHAKE" meter --host omp "$work/s.jsonl" 2>"$work/cg.err" >/dev/null
  # Python formats the count: some awks print past 2^31 as 2147483647.
  n=$(grep -o 'Collected : [0-9]*' "$work/cg.err" | awk '{ print $3 }')
  echo "shake cold meter: $(python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$n") instructions (callgrind)"
fi
