#!/usr/bin/env bash
# The "Meter" benchmark of docs/benchmarks.md, side by side in one run on one session file:
#   shake meter cold (empty store), warm (nothing new), after one appended entry;
#   pi's own open + project + estimate (docs/bench/pi-meter.mjs);
#   tiktoken's raw time on the same text (plumbing/examples/tokenize_raw.rs).
#
#   cargo build --release --bins --examples -p shake -p shake-plumbing
#   docs/bench/meter.sh SESSION.jsonl [TOKENIZER]        (TOKENIZER: o200k, the default, or pi, cl100k)
#
# Works on a private copy of SESSION in a temporary folder, with a private store. Each timing is
# the median of 3 runs, in seconds (the machine is shared: read ratios, not digits).
set -euo pipefail
cd "$(dirname "$0")/../.."
session=$1
tok=${2:-o200k}
shake=target/release/shake
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -p keeps the modification time: a session pi is not writing right now.
cp -p "$session" "$tmp/s.jsonl"
export SHAKE_DIR=$tmp/store SHAKE_QUIET=1

# Median of 3 runs of a command: "wall s (cpu s)", CPU = user + system; $prepare runs before
# each run, untimed. On a loaded machine wall time includes waiting for a core: CPU is steadier.
median3() {
  local prepare=$1; shift
  local walls=() cpus=()
  for _ in 1 2 3; do
    eval "$prepare"
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" >/dev/null
    read -r wall user sys < "$tmp/time"
    walls+=("$wall")
    cpus+=("$(echo "$user + $sys" | bc)")
  done
  local w c
  w=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
  c=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n 2p)
  echo "$w s wall ($c s cpu)"
}

# Appends one tool-result entry (2 KB) after the last entry, as pi would.
append_one() {
  python3 - "$tmp/s.jsonl" <<'PY'
import json, sys, uuid
path = sys.argv[1]
last = None
with open(path, encoding="utf-8") as f:
    for line in f:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") != "session" and "id" in e:
            last = e["id"]
new_id = uuid.uuid4().hex[:8]
# New text every time: a repeat would be a cache hit, not new bytes.
text = "".join(f"line {i} of {new_id}: appended build output\n" for i in range(64))
entry = {"type": "message", "id": new_id, "parentId": last, "timestamp": "2026-11-30T12:00:00.000Z",
         "message": {"role": "toolResult", "toolCallId": "bench", "toolName": "bash", "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 0}}
with open(path, "a", encoding="utf-8") as f:
    f.write(json.dumps(entry, separators=(",", ":")) + "\n")
PY
}

bytes=$(stat -c %s "$session")
echo "session: $session ($bytes bytes), tokenizer $tok"
echo "figure:  $($shake meter "$tmp/s.jsonl" --tokenizer "$tok" --json)"
echo "shake meter cold (empty store):       $(median3 'rm -rf "$SHAKE_DIR"' "$shake" meter "$tmp/s.jsonl" --tokenizer "$tok")"
echo "shake meter warm (nothing new):       $(median3 ':' "$shake" meter "$tmp/s.jsonl" --tokenizer "$tok")"
# Touched: the bytes are unchanged but the file was modified moments ago, so the meter may not
# trust its memo and reads, parses and plans again (every count still comes from the cache).
echo "shake meter warm, file just touched:  $(median3 'touch "$tmp/s.jsonl"' "$shake" meter "$tmp/s.jsonl" --tokenizer "$tok")"
echo "shake meter after one appended entry: $(median3 'append_one' "$shake" meter "$tmp/s.jsonl" --tokenizer "$tok")"
echo "pi open + project + estimate (Node, one process, 5 runs):"
node docs/bench/pi-meter.mjs "$tmp/s.jsonl" 5 | sed 's/^/  /'
echo "pi in a fresh node process (start + load pi + one run): $(median3 ':' node docs/bench/pi-meter.mjs "$tmp/s.jsonl" 1)"
if [ "$tok" != pi ]; then
  echo "tiktoken raw on the text the meter counts:"
  target/release/examples/tokenize_raw "$tmp/s.jsonl" "$tok" | sed 's/^/  /'
fi
