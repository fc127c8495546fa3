#!/usr/bin/env bash
# Import benchmark (docs/bench/notebook.md, "Import"): shake import of one big session (cold, then
# unchanged, then after an append) and of a folder of small sessions, next to `cat` of the same
# bytes and pi's own SessionManager.open in Node, in the same run. Not a test: read the numbers.
#
# usage: docs/bench/import.sh [BIG.jsonl SMALL_DIR [REPEATS]]
#   BIG.jsonl  a ~50 MB pi session; SMALL_DIR  a folder of ~1,000 small sessions. Without them,
#   both are generated: `shake generate-session --seed 1 --size 50M` and seeds 1..1000.
# Needs a release build (cargo build --release) and `npm ci` in tests/oracle.
set -euo pipefail
cd "$(dirname "$0")/../.."
shake=$PWD/target/release/shake
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export SHAKE_QUIET=1
if [ $# -ge 2 ]; then
  big=$(realpath "$1"); small=$(realpath "$2")
else
  big=$work/big.jsonl; small=$work/small; mkdir -p "$small"
  "$shake" generate-session --seed 1 --size 50M -o "$big"
  for i in $(seq 1000); do "$shake" generate-session --seed "$i" -o "$small/$i.jsonl"; done
fi
repeats=${3:-5}

# Runs "$@" `repeats` times ($setup first, untimed) and prints "WALL_MS CPU_MS", the medians of
# wall-clock and user+system time. The machine is shared: CPU time is the steadier figure.
median() {
  local walls=() cpus=()
  for _ in $(seq "$repeats"); do
    eval "${setup:-true}"
    /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null
    read -r e u s <"$work/time"
    walls+=("$e"); cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')")
  done
  local w c
  w=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.0f", a[int((NR+1)/2)] * 1000}')
  c=$(printf '%s\n' "${cpus[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.0f", a[int((NR+1)/2)] * 1000}')
  echo "$w $c"
}
rate() { awk -v b="$1" -v ms="$2" 'BEGIN {if (ms > 0) printf "%.0f MB/s", b / 1e6 / (ms / 1000); else print "-"}'; }
# row LABEL "WALL CPU" BYTES: a table row with both times and both rates.
row() {
  local w c; read -r w c <<<"$2"
  if [ -n "${3:-}" ]; then
    printf '| %s | %s ms | %s ms | %s | %s |\n' "$1" "$w" "$c" "$(rate "$3" "$w")" "$(rate "$3" "$c")"
  else
    printf '| %s | %s ms | %s ms | | |\n' "$1" "$w" "$c"
  fi
}

bytes_big=$(stat -c %s "$big")
bytes_small=$(cat "$small"/*.jsonl | wc -c)
files_small=$(ls "$small"/*.jsonl | wc -l)
cat "$big" "$small"/*.jsonl >/dev/null   # warm the page cache

pi_open=$work/pi-open.mjs
cat >"$pi_open" <<JS
const { SessionManager } = await import("$PWD/tests/oracle/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
const { readdirSync, statSync } = await import("node:fs");
const target = process.argv[2];
const files = statSync(target).isDirectory() ? readdirSync(target).map((f) => target + "/" + f) : [target];
// Open read-only copies' worth: SessionManager.open loads and builds the tree; time only that.
const t0 = performance.now();
let entries = 0;
for (const f of files) entries += SessionManager.open(f, "$work/pi-sessions").getEntries().length;
console.error(JSON.stringify({ ms: performance.now() - t0, entries }));
JS
# pi's time is measured inside Node around SessionManager.open (Node's own start-up excluded);
# printed as "WALL_MS -" (no CPU split).
pi_ms() {
  local times=()
  for _ in $(seq "$repeats"); do times+=($(node "$pi_open" "$1" 2>&1 >/dev/null | sed 's/.*"ms":\([0-9.]*\).*/\1/')); done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.0f -", a[int((NR+1)/2)]}'
}

echo "big: $bytes_big bytes; small: $files_small files, $bytes_small bytes; repeats: $repeats (median)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| what | wall | CPU | rate (wall) | rate (CPU) |"
echo "|---|---:|---:|---:|---:|"
row "cat, big session" "$(median cat "$big")" "$bytes_big"
row "shake import, big session, cold" "$(setup="rm -rf $work/store" median "$shake" --store "$work/store" import "$big")" "$bytes_big"
row "shake import, big session, unchanged" "$(median "$shake" --store "$work/store" import "$big")"
tail -n 100 "$big" | sed 's/"id":"/"id":"x/; s/"parentId":"/"parentId":"x/' >"$work/tail.jsonl"
row "shake import, big session + $(stat -c %s "$work/tail.jsonl") appended bytes" \
  "$(setup="cp $big $work/grow.jsonl; $shake --store $work/store import $work/grow.jsonl >/dev/null; cat $work/tail.jsonl >>$work/grow.jsonl" median "$shake" --store "$work/store" import "$work/grow.jsonl")"
row "pi SessionManager.open, big session (in Node)" "$(pi_ms "$big")" "$bytes_big"
row "cat, small sessions" "$(median sh -c "cat $small/*.jsonl")" "$bytes_small"
row "shake import, small sessions, cold" "$(setup="rm -rf $work/store2" median "$shake" --store "$work/store2" import "$small")" "$bytes_small"
row "shake import, small sessions, unchanged" "$(median "$shake" --store "$work/store2" import "$small")"
row "pi SessionManager.open, small sessions (in Node)" "$(pi_ms "$small")" "$bytes_small"
echo
echo "store after the big session and its appends: $("$shake" --store "$work/store" count-objects --json)"
echo "store after the small sessions: $("$shake" --store "$work/store2" count-objects --json)"
