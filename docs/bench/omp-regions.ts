// What OMP 18.2.11's own `/shake` preview costs on a session file, timed with its own code under
// Bun: read the file and take the current branch (tests/omp-oracle/branch.ts, as OMP's session
// reader does), build OMP's Tokenizer for the session's model, `collectShakeRegions` with the
// manual /shake config (AGGRESSIVE_SHAKE_CONFIG, each region counted by that tokenizer), and the
// placeholder's count, as tests/omp-oracle/regions.ts computes the figure shake's meter prints.
// docs/bench/omp.sh compares it with `shake meter --host omp` (docs/benchmarks.md).
//
//   bun docs/bench/omp-regions.ts FILE MODEL [runs]     (needs tests/omp-oracle: setup.sh there)
//
// Prints one line per run and the medians, in milliseconds (wall, and CPU: user + system), and
// the figure. Runs happen in one process, so the first is cold (JIT, tokenizer, page cache) and
// the rest are warm: the best case for OMP.

import { AGGRESSIVE_SHAKE_CONFIG, Tokenizer, collectShakeRegions } from "../../tests/omp-oracle/node_modules/@oh-my-pi/pi-agent-core/src/index.ts";
import { bundledModel, readBranch } from "../../tests/omp-oracle/branch.ts";

const SAMPLE_PLACEHOLDER = "[shaken ~1234 tokens — recover: artifact://62 (region 12)]";
const [file, modelName, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const model = bundledModel(modelName);

const rows: { read: number; regions: number; total: number; cpu: number; freed: number }[] = [];
for (let i = 0; i < runs; i++) {
	const c0 = process.cpuUsage();
	const t0 = performance.now();
	const branch = readBranch(file);
	const t1 = performance.now();
	const compaction = [...branch].reverse().find(e => e.type === "compaction");
	const tokenizer = new Tokenizer(model);
	const regions = collectShakeRegions(branch, tokenizer, { ...AGGRESSIVE_SHAKE_CONFIG, keepBoundaryId: compaction?.firstKeptEntryId });
	const placeholder = tokenizer.countTokens(SAMPLE_PLACEHOLDER);
	const freed = regions.reduce((s: number, r: any) => s + Math.max(0, r.tokens - placeholder), 0);
	const t2 = performance.now();
	const c = process.cpuUsage(c0);
	const cpu = (c.user + c.system) / 1000;
	rows.push({ read: t1 - t0, regions: t2 - t1, total: t2 - t0, cpu, freed });
	console.log(
		`run ${i + 1}: read ${(t1 - t0).toFixed(1)} ms, regions ${(t2 - t1).toFixed(1)} ms, total ${(t2 - t0).toFixed(1)} ms, cpu ${cpu.toFixed(1)} ms (${regions.length} regions, ~${freed} tokens, ${tokenizer.encoding ?? model?.tokenizer ?? "bytes/4"})`,
	);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
	`median total ${median(rows.map(r => r.total)).toFixed(1)} ms, cpu ${median(rows.map(r => r.cpu)).toFixed(1)} ms, read ${median(rows.map(r => r.read)).toFixed(1)} ms, regions ${median(rows.map(r => r.regions)).toFixed(1)} ms over ${runs} runs; freed ${rows[0].freed}; rss ${(process.memoryUsage().rss / 1048576).toFixed(0)} MB`,
);
