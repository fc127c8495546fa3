#!/usr/bin/env python3
"""The harness behind docs/bench/run.sh (run that, not this): generates every input, runs every
shake command on it and pi 1.6.0's own code on the same bytes in the same run, and prints the
tables of docs/benchmarks.md with the ratios and the targets of issue 12.

Each figure is the median of REPEATS runs (1 for files over 200 MB): wall time, CPU time (user +
system, from wait4 with microsecond resolution) and the peak RSS `/usr/bin/time -v` reports.
Every run of a command that changes the file starts from a fresh copy (the copy is not timed).

The doubling tables use the least CPU of the runs (another tenant only ever adds time: on this
VM one command's CPU varies by up to ±40% between runs, idle or not) and, with --instructions,
the instructions each command executes (valgrind's cachegrind, one more run each), which do not
vary between runs at all: the growth they show is the algorithm's.
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# $SHAKE_BIN: another build to measure (e.g. a copy of the one before a change).
SHAKE = os.environ.get("SHAKE_BIN") or os.path.join(ROOT, "target", "release", "shake")
SHAPES = os.path.join(ROOT, "docs", "bench", "shapes.py")
PI_METER = os.path.join(ROOT, "docs", "bench", "pi-meter.mjs")
MB = 1 << 20


def sh(*argv, **kw):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kw)


class Run:
    """One timed process: wall seconds, CPU seconds, peak RSS bytes, exit code, stderr tail."""

    def __init__(self, argv, env):
        t0 = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-v", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=env)
        err = p.stderr.read().decode("utf-8", "replace")
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        self.wall = time.perf_counter() - t0
        self.cpu = ru.ru_utime + ru.ru_stime
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
        self.rss = int(m.group(1)) * 1024 if m else 0
        self.code = p.returncode
        inner = re.search(r"Command exited with non-zero status (\d+)", err)
        if inner:
            self.code = int(inner.group(1))
        self.err = [l for l in err.splitlines() if not l.startswith("\t") and "Command exited" not in l]
        self.least = self.cpu
        self.instructions = None


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.work
        self.rows = []  # (shape, what, figures)
        self.sizes = {}

    def env(self, store):
        e = dict(os.environ, SHAKE_DIR=store, SHAKE_QUIET="1")
        return e

    def repeats(self, path):
        return 1 if os.path.getsize(path) > 200 * MB else self.args.repeats

    def measure(self, argv, store, n, setup=None, count=False):
        """The median run of `n` (each after `setup()`), or the failing run; with `count` (and
        --instructions) one more run under cachegrind gives its instructions."""
        runs = []
        for _ in range(n):
            if setup:
                setup()
            r = Run(argv, self.env(store))
            if r.code not in (0, 1):
                return r
            runs.append(r)
        runs.sort(key=lambda r: r.cpu)
        med = runs[len(runs) // 2]
        med.wall = statistics.median(r.wall for r in runs)
        med.least = runs[0].cpu
        if count and self.args.instructions:
            # Repacked first, so the counted run never pays the store's merge of its packs (which
            # a write does once more than 16 have piled up: a cost spread over those 16 writes).
            if os.path.isdir(store):
                subprocess.run([SHAKE, "gc"], env=self.env(store), check=True, stdout=subprocess.DEVNULL)
            if setup:
                setup()
            med.instructions = instructions(argv, self.env(store))
        return med

    def row(self, shape, what, r, note=""):
        self.rows.append((shape, what, r, note))
        if self.args.verbose:
            instr = f" | {count(r.instructions)} instructions" if r.instructions else ""
            print(f"  {shape:<14} {what:<34} {fmt_run(r)}{instr} {note}", file=sys.stderr, flush=True)

    # --- inputs -------------------------------------------------------------------------------

    def make(self, name, build):
        path = os.path.join(self.work, name + ".jsonl")
        if not os.path.exists(path):
            t0 = time.perf_counter()
            build(path)
            print(f"made {name}: {os.path.getsize(path):,} bytes in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
        # An old modification time: a session pi is not writing right now (the meter trusts its memo).
        os.utime(path, (time.time() - 3600, time.time() - 3600))
        self.sizes[name] = os.path.getsize(path)
        return path

    def generated(self, name, size):
        return self.make(name, lambda p: sh(SHAKE, "generate-session", "--seed", "1", "--size", str(size), "-o", p))

    def tiny(self, n, kind="tiny"):
        return self.make(f"{kind}-{count_name(n)}", lambda p: sh(sys.executable, SHAPES, "tiny", str(n), p))

    def line(self, size, k=1):
        """One tool result of `size` bytes, or (k > 1) the same text in k results."""
        if k == 1:
            return self.make(f"line-{size_name(size)}", lambda p: sh(sys.executable, SHAPES, "line", str(size), p))
        return self.make(f"lines-{size_name(size)}", lambda p: sh(sys.executable, SHAPES, "lines", str(size), str(k), p))

    def leaves(self, k, base):
        return self.make(f"leaves-{k}", lambda p: sh(sys.executable, SHAPES, "leaves", str(k), base, p))

    # --- one shape, every command -------------------------------------------------------------

    def shape(self, name, orig, commands):
        """Runs the commands of `commands` on a private copy of `orig` with a private store."""
        d = os.path.join(self.work, "run-" + name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        w = os.path.join(d, "s.jsonl")
        store = os.path.join(d, "store")
        n = self.repeats(orig)
        env = self.env(store)

        def fresh():
            shutil.copy2(orig, w)

        def imported():
            fresh()
            subprocess.run([SHAKE, "import", w], env=env, check=True, stdout=subprocess.DEVNULL)

        def folded():
            imported()
            subprocess.run([SHAKE, "fold", w], env=env, check=True, stdout=subprocess.DEVNULL)

        def appended():
            subprocess.run([sys.executable, SHAPES, "append", w], check=True)

        def settle():
            os.utime(w, (time.time() - 60, time.time() - 60))

        S = [SHAKE]
        if "import" in commands:
            self.row(name, "shake import, cold", self.measure(S + ["import", w], store, n,
                                                              lambda: (shutil.rmtree(store, True), fresh())))
            self.row(name, "shake import, one entry appended", self.measure(S + ["import", w], store, n,
                                                                            lambda: (imported(), appended())))
        imported()
        if "dry" in commands or "fold" in commands:
            # The token cache warm, as for every later fold: the dry run and the fold then count
            # the same way (the cold cost is the meter's "cold" row).
            subprocess.run(S + ["fold", "--dry-run", w], env=env, check=True, stdout=subprocess.DEVNULL)
        for what, argv in [("project", ["project", w, "--json"]), ("dry", ["fold", "--dry-run", w])]:
            if what in commands:
                label = {"project": "shake project --json", "dry": "shake fold --dry-run"}[what]
                self.row(name, label, self.measure(S + argv, store, n, count=True))
        if "fold" in commands:
            self.row(name, "shake fold", self.measure(S + ["fold", w], store, n, imported, True))
        if "status" in commands or "undo" in commands:
            folded()
            if "status" in commands:
                self.row(name, "shake status (after the fold)", self.measure(S + ["status", w], store, n, count=True))
            if "log" in commands:
                self.row(name, "shake log", self.measure(S + ["log", w], store, n, count=True))
            if "undo" in commands:
                self.row(name, "shake undo (after the fold)", self.measure(S + ["undo", w], store, n, folded, True))
        if "meter" in commands:
            fresh()
            self.row(name, "shake meter, cold (empty store)",
                     self.measure(S + ["meter", w], store, n, lambda: shutil.rmtree(store, True)))
            subprocess.run(S + ["meter", w], env=env, stdout=subprocess.DEVNULL)
            self.row(name, "shake meter, warm (nothing new)", self.measure(S + ["meter", w], store, n))
            self.row(name, "shake meter, file touched", self.measure(S + ["meter", w], store, n,
                                                                     lambda: os.utime(w), True))
            settle()
            subprocess.run(S + ["meter", w], env=env, stdout=subprocess.DEVNULL)
            self.row(name, "shake meter, one entry appended", self.measure(S + ["meter", w], store, n, appended))
        if "rewind" in commands:
            fresh()
            self.row(name, "shake audit rewind", self.measure(S + ["audit", "rewind", w], store, n, count=True))
        if "pi" in commands:
            fresh()
            self.pi(name, w, n)

    def pi(self, name, w, n):
        """pi's open + project + estimate: median in one Node process, and one fresh process."""
        if self.args.no_pi:
            return
        p = subprocess.run(["node", PI_METER, w, str(max(n, 3))], capture_output=True, text=True)
        m = re.search(r"median total ([\d.]+) ms, cpu ([\d.]+) ms", p.stdout)
        if m:
            r = Fig(float(m.group(1)) / 1000, float(m.group(2)) / 1000, 0)
            self.row(name, "pi open + project + estimate, in Node", r)
        r = Run(["node", PI_METER, w, "1"], os.environ.copy())
        self.row(name, "pi, the same in a fresh Node process", r)

    # --- the meter in a host's footer ---------------------------------------------------------

    def serve(self, name, orig, turns=50, tokenizer="o200k"):
        """`shake meter --serve` as the pi extension runs it: one child, pi's FILE:LEAF per turn
        after each appended entry. CPU per turn: the child's user + system time (/proc/PID/stat,
        all its threads) from its first answer to its last, over `turns`."""
        d = os.path.join(self.work, "serve-" + name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        w = os.path.join(d, "s.jsonl")
        store = os.path.join(d, "store")
        shutil.copy2(orig, w)
        p = subprocess.Popen([SHAKE, "meter", "--serve", "--tokenizer", tokenizer], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=self.env(store), text=True)

        def cpu():
            with open(f"/proc/{p.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        walls = []
        for i in range(turns + 1):
            if i:
                subprocess.run([sys.executable, SHAPES, "append", w], check=True)
            leaf = json.loads(subprocess.run([sys.executable, "-c", LAST_ID, w], capture_output=True,
                                             text=True).stdout)
            t0 = time.perf_counter()
            p.stdin.write(f"{w}:{leaf}\n")
            p.stdin.flush()
            answer = json.loads(p.stdout.readline())
            walls.append(time.perf_counter() - t0)
            assert "error" not in answer, answer
            if i == 0:
                first = cpu()
        per = (cpu() - first) / turns
        p.stdin.close()
        p.wait()
        self.row(name, f"shake meter --serve, per turn after an append ({tokenizer})",
                 Fig(statistics.median(walls[1:]), per, 0), f"first reading {secs(walls[0])} wall")

    # --- many small files ---------------------------------------------------------------------

    def small(self, count):
        d = os.path.join(self.work, f"small-{count}")
        if not os.path.isdir(d):
            os.makedirs(d)
            for i in range(1, count + 1):
                sh(SHAKE, "generate-session", "--seed", str(i), "-o", os.path.join(d, f"{i}.jsonl"))
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        name = f"small-{count}"
        self.sizes[name] = size
        store = os.path.join(self.work, "run-small", "store")
        self.row(name, "shake import, cold", self.measure([SHAKE, "import", d], store, self.args.repeats,
                                                           lambda: shutil.rmtree(store, True)))
        self.row(name, "shake import, unchanged", self.measure([SHAKE, "import", d], store, self.args.repeats))


def instructions(argv, env):
    """The instructions one run of `argv` executes (cachegrind's `I refs`; no cache simulation)."""
    p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *argv],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    return int(m.group(1).replace(",", "")) if m else None


# Prints the id of a session file's last entry as JSON (what pi's leaf is after it appends).
LAST_ID = """
import json, os, sys
sys.path.insert(0, os.path.dirname(%r))
from shapes import last_id
print(json.dumps(last_id(sys.argv[1])))
""" % SHAPES


class Fig:
    def __init__(self, wall, cpu, rss):
        self.wall, self.cpu, self.rss, self.code, self.err = wall, cpu, rss, 0, []
        self.least, self.instructions = cpu, None


def count_name(n):
    """1000000 -> 1M, 100000 -> 100k, 1250 -> 1250."""
    for unit, div in (("M", 1_000_000), ("k", 1000)):
        if n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def size_name(n):
    """1 << 30 -> 1G, 40 MiB -> 40M, 4,194,304 -> 4M (whole MiB, rounded down)."""
    return f"{n >> 30}G" if n % (1 << 30) == 0 else f"{n // MB}M"


def secs(s):
    return f"{s * 1000:.1f} ms" if s < 0.1 else f"{s:.2f} s"


def count(n):
    """An instruction count: 1.234 G, 56.7 M."""
    return f"{n / 1e9:.3f} G" if n >= 1e9 else f"{n / 1e6:.1f} M"


def fmt_run(r):
    if r.code not in (0, 1):
        why = (r.err[-1] if r.err else "")[:70]
        return f"fails (exit {r.code}: {why})"
    rss = f"{r.rss / MB:,.0f} MB" if r.rss else "-"
    return f"{secs(r.wall)} | {secs(r.cpu)} | {rss}"


def table(b):
    print("| shape (bytes) | what | wall | CPU | max RSS | RSS / file | pi / shake (CPU) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    pi = {s: r for s, w, r, _ in b.rows if w == "pi open + project + estimate, in Node"}
    last = None
    for shape, what, r, note in b.rows:
        size = b.sizes.get(shape, 0)
        label = f"{shape} ({size:,})" if shape != last else ""
        last = shape
        ratio = ""
        if r.rss and size and not what.startswith("pi") and not shape.startswith("small"):
            ratio = f"{r.rss / size:.2f}×"
        vs = ""
        p = pi.get(shape)
        if p and r.code in (0, 1) and r.cpu > 0 and not what.startswith("pi") and ("project" in what or "meter" in what):
            vs = f"{p.cpu / r.cpu:.1f}×"
        print(f"| {label} | {what} | {fmt_run(r)} | {ratio} | {vs} |".replace(" | - |", " | - |"))


def get(b, shape, what):
    """The figure of `what` (a row label, or its start up to a comma or parenthesis) on `shape`."""
    for s, w, r, _ in b.rows:
        if s == shape and (w == what or re.match(re.escape(what) + r"(,| \()", w)):
            return r
    return None


def doubling(b, title, shapes, whats):
    """Two tables of each command's growth as `title` doubles: the least CPU of the runs, and
    (with --instructions) the instructions, each cell with its ratio to the row above."""
    if not shapes:
        return
    kinds = [("least CPU of the runs", lambda r: r.least, secs)]
    if b.args.instructions:
        kinds.append(("instructions, cachegrind", lambda r: r.instructions, count))
    for kind, figure, show in kinds:
        print(f"\n**Doubling {title}** ({kind}; ratio to the row above, target ≤ 2.2)\n")
        print("| " + title + " | " + " | ".join(whats) + " |")
        print("|---|" + "---:|" * len(whats))
        prev = [None] * len(whats)
        worst = 0.0
        for shape in shapes:
            cells = []
            for i, what in enumerate(whats):
                r = get(b, shape, what)
                x = figure(r) if r is not None and r.code in (0, 1) else None
                if not x:
                    cells.append("-")
                    prev[i] = None
                    continue
                cell = show(x)
                if prev[i]:
                    q = x / prev[i]
                    worst = max(worst, q)
                    cell += f" (×{q:.2f})"
                cells.append(cell)
                prev[i] = x
            print(f"| {shape} | " + " | ".join(cells) + " |")
        print(f"\nworst doubling ratio: ×{worst:.2f} ({'met' if worst <= 2.2 else 'NOT met'}; ≤ 2.2)")


def targets(b, tiny, large):
    print("\n**Targets (issue 12)**\n")
    for what in ["shake project --json", "shake fold --dry-run", "shake fold", "shake status", "shake undo",
                 "shake meter, file touched", "shake meter, one entry appended", "shake import, cold"]:
        t, l = get(b, tiny, what), get(b, large, what)
        if t and l and l.cpu > 0:
            q = t.cpu / l.cpu
            print(f"- {what}: {tiny} {secs(t.cpu)} vs {large} {secs(l.cpu)} CPU: ×{q:.2f} "
                  f"({'met' if q <= 1.5 else 'NOT met'}; ≤ 1.5)")
    u = get(b, tiny, "shake undo")
    if u:
        print(f"- undo on {tiny}: {secs(u.wall)} wall, {secs(u.cpu)} CPU ({'met' if u.wall < 0.5 else 'NOT met'}; < 0.5 s)")


def long_targets(b):
    """The 1,000,000-entry chain, the 100 MB line and the footer meter (issue 12, targets 1, 4)."""
    print("\n**Targets: long paths, huge lines, the footer (issue 12)**\n")
    chain = next((s for s in b.sizes if s.startswith("chain")), None)
    tiny = [s for s in b.sizes if s.startswith("tiny")]
    if chain:
        size = b.sizes[chain]
        p = get(b, chain, "shake project --json")
        if p and p.code in (0, 1):
            ok = p.cpu <= 5 and p.rss <= 1.2 * size
            print(f"- project on {chain}: {secs(p.wall)} wall, {secs(p.cpu)} CPU, {p.rss / size:.2f}× the file "
                  f"({'met' if ok else 'NOT met'}; a few seconds (≤ 5 s CPU) within 1.2× the file)")
        entries = lambda s: int(s.split("-")[1].replace("M", "000000").replace("k", "000"))
        if tiny:
            base = tiny[-1]
            n = entries(chain) / entries(base)
            # Linear: each doubling ≤ 2.2, so n times the entries ≤ 2.2^log2(n).
            bound = 2.2 ** math.log2(max(n, 1))
            for what in ["shake fold", "shake fold --dry-run", "shake project --json", "shake undo", "shake status"]:
                c, t = get(b, chain, what), get(b, base, what)
                if c and t and t.cpu > 0 and c.code in (0, 1):
                    q = c.cpu / t.cpu
                    print(f"- {what}: {chain} {secs(c.cpu)} vs {base} {secs(t.cpu)} CPU for {n:.0f}× the entries: "
                          f"×{q:.1f} ({'met' if q <= bound else 'NOT met'}; linear: ≤ ×{bound:.1f})")
    line = next((s for s in b.sizes if s.startswith("line-")), None)
    lines = next((s for s in b.sizes if s.startswith("lines-")), None)
    if line and lines:
        for what in ["shake import, cold", "shake project --json", "shake fold --dry-run", "shake fold",
                     "shake meter, cold", "shake meter, file touched"]:
            l, o = get(b, line, what), get(b, lines, what)
            if l and o and o.cpu > 0 and l.code in (0, 1):
                q, qw = l.cpu / o.cpu, l.wall / o.wall
                print(f"- {what}: {line} {secs(l.cpu)} CPU ({secs(l.wall)} wall) vs {lines} {secs(o.cpu)} "
                      f"({secs(o.wall)}): ×{q:.2f} CPU, ×{qw:.2f} wall ({'met' if q <= 1.5 else 'NOT met'}; ≤ 1.5)")
    for shape, what, r, _ in b.rows:
        if what.startswith("shake meter --serve"):
            print(f"- footer meter on {shape}: {r.cpu * 1000:.1f} ms CPU per turn "
                  f"({'met' if r.cpu <= 0.010 else 'NOT met'}; ≤ 10 ms)")
    for shape in dict.fromkeys(s for s, _, _, _ in b.rows):
        f, d = get(b, shape, "shake fold"), get(b, shape, "shake fold --dry-run")
        if f and d and d.cpu > 0 and f.code in (0, 1):
            q = f.cpu / d.cpu
            by = ""
            # Counted instructions decide when there are some: one command's CPU moves by up to
            # ±40% between runs on this VM, its instructions do not.
            if f.instructions and d.instructions:
                q = f.instructions / d.instructions
                by = f", ×{q:.2f} in instructions, which decide"
            print(f"- fold / dry run, {shape}: ×{f.cpu / d.cpu:.2f} CPU{by} ({'met' if q <= 1.3 else 'NOT met'}; ≤ 1.3)")
    worst = []
    for shape, what, r, _ in b.rows:
        size = b.sizes.get(shape, 0)
        if r.rss and size > 20 * MB and not what.startswith("pi") and not shape.startswith("small"):
            worst.append((r.rss / size, shape, what))
    if worst:
        q, shape, what = max(worst)
        print(f"- memory: the most any command holds is {q:.2f}× its file ({what}, {shape}; target ≤ 1.2)")
    s = get(b, next((x for x in b.sizes if x.startswith("small")), ""), "shake import, cold")
    if s:
        size = next(v for k, v in b.sizes.items() if k.startswith("small"))
        print(f"- cold import of many small files: {size / MB / s.wall:.0f} MB/s wall, {size / MB / s.cpu:.0f} MB/s CPU (target ≥ 200 MB/s wall)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="inputs at a tenth of their size, one repeat")
    ap.add_argument("--scale", type=float, help="multiply every input size by this (default 1, quick 0.1)")
    ap.add_argument("--repeats", type=int, help="runs per figure (default 3, quick 1)")
    ap.add_argument("--only", help="comma-separated sections: large,tiny,chain,line,gig,leaves,small,folds,serve")
    ap.add_argument("--work", help="keep inputs in DIR (reused when present)")
    ap.add_argument("--no-pi", action="store_true", help="skip pi's side")
    ap.add_argument("--instructions", action="store_true",
                    help="count the instructions of each doubled command too (valgrind; ~40x a run)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each figure as it is measured")
    args = ap.parse_args()
    scale = args.scale or (0.1 if args.quick else 1.0)
    args.repeats = args.repeats or (1 if args.quick else 3)
    only = set(args.only.split(",")) if args.only else None
    tmp = None
    if not args.work:
        tmp = tempfile.TemporaryDirectory(prefix="shake-bench-")
        args.work = tmp.name
    os.makedirs(args.work, exist_ok=True)
    b = Bench(args)
    want = lambda s: only is None or s in only
    sz = lambda n: max(1, int(n * scale))
    every = {"import", "project", "dry", "fold", "status", "log", "undo", "meter", "rewind", "pi"}
    print(f"shake {subprocess.run([SHAKE, '--version'], capture_output=True, text=True).stdout.strip()}, "
          f"scale {scale}, repeats {args.repeats}, load {open('/proc/loadavg').read().split()[:3]}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n", flush=True)
    large = tiny_top = None
    # `serve` alone measures the footer meter on the large and the biggest tiny session only.
    if want("large") or want("serve"):
        large = f"large-{size_name(sz(40 * MB))}"
        path = b.generated(large, sz(40 * MB))
        if want("large"):
            b.shape(large, path, every)
        if want("serve"):
            b.serve(large, path)
    if want("tiny") or want("serve"):
        for n in [12_500, 25_000, 50_000, 100_000] if want("tiny") else [100_000]:
            path = b.tiny(sz(n))
            tiny_top = os.path.basename(path)[:-6]
            if want("tiny"):
                b.shape(tiny_top, path, every - {"rewind"})
        if want("serve"):
            b.serve(tiny_top, path)
    if want("chain"):
        path = b.tiny(sz(1_000_000), "chain")
        b.shape(os.path.basename(path)[:-6], path, {"import", "project", "dry", "fold", "status", "undo", "meter", "pi"})
    if want("line"):
        # One 100 MB line, and the same text as 1,000 ordinary lines (results of 100 KB).
        for k in [1, 1000]:
            path = b.line(sz(100 * MB), k)
            b.shape(os.path.basename(path)[:-6], path, {"import", "project", "dry", "fold", "meter", "pi"})
    if want("gig"):
        gig = f"gig-{size_name(sz(1 << 30))}"
        path = b.generated(gig, sz(1 << 30))
        b.shape(gig, path, {"import", "project", "dry", "fold", "meter", "pi"})
        b.serve(gig, path)
    if want("leaves"):
        base = b.generated("base-200M", sz(200 * MB))
        for k in [125, 250, 500]:
            b.shape(f"leaves-{k}", b.leaves(k, base), {"rewind", "status", "meter"})
    if want("folds"):
        for k in [max(2, int(k * min(1.0, scale * 2))) for k in [25, 50, 100, 200]]:
            b.shape(f"folds-{k}", b.make(f"folds-{k}", lambda p, k=k: many_folds(p, k, b)),
                    {"status", "log", "undo", "dry", "meter"})
    if want("small"):
        b.small(max(10, int(1000 * min(1.0, scale))))
    print()
    table(b)
    doubling(b, "entries", [s for s in b.sizes if s.startswith("tiny")],
             ["shake project --json", "shake fold --dry-run", "shake fold", "shake status", "shake undo",
              "shake meter, file touched"])
    doubling(b, "leaves", [s for s in b.sizes if s.startswith("leaves")],
             ["shake audit rewind", "shake status", "shake meter, file touched"])
    doubling(b, "folds", [s for s in b.sizes if s.startswith("folds")],
             ["shake status", "shake log", "shake undo", "shake fold --dry-run", "shake meter, file touched"])
    if tiny_top and large:
        targets(b, tiny_top, large)
    long_targets(b)


def many_folds(path, k, b):
    """A chain of tiny entries folded `k` times: 40 new entries, then `shake fold`, k times."""
    store = tempfile.mkdtemp(prefix="folds-", dir=b.work)
    env = b.env(store)
    sh(sys.executable, SHAPES, "tiny", "400", path)
    for _ in range(k):
        sh(sys.executable, SHAPES, "grow", "40", path)
        subprocess.run([SHAKE, "fold", path], env=env, check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(store, True)


if __name__ == "__main__":
    main()
