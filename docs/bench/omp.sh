#!/usr/bin/env bash
# `shake meter --host omp` against OMP 18.2.11's own `/shake` preview (collectShakeRegions with
# its Tokenizer, docs/bench/omp-regions.ts under Bun) on the same OMP session files, in one run:
# the OMP fixture in tests/ and generated OMP sessions (`shake --host omp generate-session --model MODEL`).
# Each file's model is the one shake reads from it; OMP is given the same.
#
#   docs/bench/omp.sh                      # the fixture, generated 10 MiB and 100 MiB sessions
#   docs/bench/omp.sh FILE...              # given OMP session files
#   SHAKE_BIN=... RUNS=5 WORK=DIR docs/bench/omp.sh
#
# Prints, per file: shake's meter cold (empty store: read, parse, tokenize, regions), warm
# (nothing new: the memo), touched (same bytes, modified just now: the memo re-proves them) and
# after one appended entry; OMP in one Bun process (median of RUNS: warm, its best case) and in
# a fresh process (`bun` start, load, one run). Wall, CPU (user + system) and max RSS from
# /usr/bin/time (10 ms resolution), medians of RUNS. Not a test: read the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SHAKE=${SHAKE_BIN:-$ROOT/target/release/shake}
RUNS=${RUNS:-3}
BUN=$ROOT/tests/omp-oracle/node_modules/.bin/bun
[ -x "$SHAKE" ] || cargo build --release --bin shake
[ -e tests/omp-oracle/node_modules/.omp-oracle-ready ] || bash tests/omp-oracle/setup.sh
WORK=${WORK:-$(mktemp -d /tmp/shake-omp-bench.XXXXXX)}
mkdir -p "$WORK"
MODEL_GEN=${MODEL_GEN:-anthropic/claude-sonnet-4-5}

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=("$ROOT/tests/fixtures/omp/omp-large-session.jsonl")
  for size in 10M 100M; do
    f=$WORK/omp-$size.jsonl
    [ -e "$f" ] || "$SHAKE" --host omp generate-session --seed 1 --size $size --model "$MODEL_GEN" -o "$f"
    files+=("$f")
  done
fi

# One timed run: prints "wall cpu rss_kb". (time's report goes to a file of its own: the command
# runs once, its output discarded.)
timed() {
  local tf=$WORK/time.out
  /usr/bin/time -o "$tf" -f "%e %U %S %M" "$@" >/dev/null 2>&1
  awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$tf"
}

# The median (by CPU) of RUNS runs of a command, each after SETUP (a shell snippet, untimed).
median() {
  local setup=$1
  shift
  local rows=()
  for _ in $(seq "$RUNS"); do
    eval "$setup"
    rows+=("$(timed "$@")")
  done
  printf '%s\n' "${rows[@]}" | sort -k2 -n | sed -n "$(((RUNS + 1) / 2))p"
}

row() { # what "wall cpu rss_kb"
  read -r wall cpu rss <<<"$2"
  printf '| | %s | %s s | %s s | %d MB |\n' "$1" "$wall" "$cpu" $((rss / 1024))
}

echo "shake $("$SHAKE" --version | cut -d' ' -f2), OMP 18.2.11 under Bun $("$BUN" --version), runs $RUNS, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| session (bytes; model) | what | wall | CPU | max RSS |"
echo "|---|---|---:|---:|---:|"
for src in "${files[@]}"; do
  d=$WORK/run-$(basename "$src" .jsonl)
  rm -rf "$d"
  mkdir -p "$d"
  f=$d/s.jsonl
  cp "$src" "$f"
  touch -d '-1 hour' "$f"
  export SHAKE_DIR=$d/store SHAKE_QUIET=1
  reading=$("$SHAKE" meter --host omp --json "$f")
  model=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["model"] or "")' "$reading")
  freed=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("~{:,} tokens, {}".format(r["tokens"], r["tokenizer"]))' "$reading")
  printf '| %s (%s B; %s) | shake meter reads %s | | | |\n' "$(basename "$src")" "$(stat -c %s "$f" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')" "$model" "$freed"
  row "shake meter --host omp, cold (empty store)" "$(median "rm -rf $d/store" "$SHAKE" meter --host omp "$f")"
  row "shake meter --host omp, warm (nothing new)" "$(median ":" "$SHAKE" meter --host omp "$f")"
  row "shake meter --host omp, file touched" "$(median "touch $f" "$SHAKE" meter --host omp "$f")"
  touch -d '-1 hour' "$f"
  "$SHAKE" meter --host omp "$f" >/dev/null
  row "shake meter --host omp, one entry appended" \
    "$(median "python3 $ROOT/docs/bench/shapes.py append $f" "$SHAKE" meter --host omp "$f")"
  cp "$src" "$f"
  omp=$("$BUN" "$ROOT/docs/bench/omp-regions.ts" "$f" "$model" 5 | tail -1)
  ms=$(sed -E 's/median total ([0-9.]+) ms, cpu ([0-9.]+) ms.*/\1 \2/' <<<"$omp")
  read -r owall ocpu <<<"$ms"
  printf '| | OMP collectShakeRegions + Tokenizer, in Bun (median of 5; %s) | %.2f s | %.2f s ¹ | |\n' \
    "$(sed -E 's/.*freed ([0-9]+).*/~\1 tokens/' <<<"$omp")" "$(echo "$owall / 1000" | bc -l)" "$(echo "$ocpu / 1000" | bc -l)"
  row "OMP, the same in a fresh Bun process" "$(median ":" "$BUN" "$ROOT/docs/bench/omp-regions.ts" "$f" "$model" 1)"
done
echo
echo "¹ process.cpuUsage() in Bun; the fresh-process row is /usr/bin/time's (all threads)."
