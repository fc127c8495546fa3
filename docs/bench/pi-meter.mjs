#!/usr/bin/env node
// What a meter inside pi would run each turn, timed with pi 1.6.0's own code: open the session
// file (SessionManager.open), project the leaf (buildSessionProjection), estimate every projected
// message (estimateTokens). docs/benchmarks.md ("Meter") compares it with `shake meter`.
//
//   node docs/bench/pi-meter.mjs <session.jsonl> [runs]      (needs tests/oracle: npm ci there)
//
// Prints one line per run and the medians, in milliseconds (wall, and CPU: user + system). Runs happen in one process, so the
// first is cold (JIT, page cache) and the rest are warm: the best case for pi.

import { performance } from "node:perf_hooks";
import { resolve } from "node:path";
import { loadPi, privateCopy } from "../../tests/oracle/pi-loader.mjs";

const file = resolve(process.argv[2] ?? "");
const runs = Number(process.argv[3] ?? 5);
const pi = await loadPi();
// pi may rewrite a file it opens (v1 migration, a missing final newline): time a private copy.
const { copy } = privateCopy(file);

const rows = [];
for (let i = 0; i < runs; i++) {
	const c0 = process.cpuUsage();
	const t0 = performance.now();
	const sm = pi.SessionManager.open(copy);
	const entries = sm.getEntries();
	const t1 = performance.now();
	const projection = pi.buildSessionProjection(entries, sm.getLeafId());
	const t2 = performance.now();
	let tokens = 0;
	for (const m of projection.messages) tokens += pi.estimateTokens(m);
	const t3 = performance.now();
	const c = process.cpuUsage(c0);
	const cpu = (c.user + c.system) / 1000;
	rows.push({ open: t1 - t0, project: t2 - t1, estimate: t3 - t2, total: t3 - t0, cpu, tokens });
	console.log(
		`run ${i + 1}: open ${(t1 - t0).toFixed(1)} ms, project ${(t2 - t1).toFixed(1)} ms, estimate ${(t3 - t2).toFixed(1)} ms, total ${(t3 - t0).toFixed(1)} ms, cpu ${cpu.toFixed(1)} ms (${tokens} tokens)`,
	);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
	`median total ${median(rows.map((r) => r.total)).toFixed(1)} ms, cpu ${median(rows.map((r) => r.cpu)).toFixed(1)} ms over ${runs} runs`,
);
