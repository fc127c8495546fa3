// OMP 18.2.11's own /shake regions for a session file's current branch (last entry to the root),
// counted with OMP's own Tokenizer: `bun regions.ts FILE [--model provider/id] [--default]`, or
// `bun regions.ts --jobs JOBS.json` for many files at once ([{file, model?, default?}] in, an array
// of results out; a job OMP's code throws on is {error}). --default uses DEFAULT_SHAKE_CONFIG (auto-shake) instead of
// AGGRESSIVE_SHAKE_CONFIG (manual /shake). NODE_ENV=test makes OMP count bytes/4 for every model,
// PI_TOKENIZER_ACCURATE=1 o200k for models without a tokenizer family (both read at load).
// Derived from shared/tools/omp-oracle/regions.ts; prints regions without their text, and the
// meter's figure: freed = Σ max(0, region.tokens − P), P = tokens of shake-meter-omp's sample
// placeholder, as `preview.ts` computes it.
// Prints {branch, boundary, model, encoding, placeholder, regions: [{kind, entryId, tokens,
// blockIndex?, start?, end?, label}], tokens, freed}.
import { AGGRESSIVE_SHAKE_CONFIG, DEFAULT_SHAKE_CONFIG, Tokenizer, collectShakeRegions } from "@oh-my-pi/pi-agent-core";
import { bundledModel, readBranch } from "./branch";
import { readFileSync } from "node:fs";

const SAMPLE_PLACEHOLDER = "[shaken ~1234 tokens — recover: artifact://62 (region 12)]";


interface Job {
	file: string;
	model?: string | null;
	default?: boolean;
}

const testEnv = process.env.NODE_ENV === "test";
const accurate = process.env.PI_TOKENIZER_ACCURATE === "1" && !testEnv;

function run(job: Job) {
	const config = job.default ? DEFAULT_SHAKE_CONFIG : AGGRESSIVE_SHAKE_CONFIG;
	const branch = readBranch(job.file);
	const compaction = [...branch].reverse().find(e => e.type === "compaction");
	const keepBoundaryId = compaction?.firstKeptEntryId;

	const model = bundledModel(job.model);
	const tokenizer = new Tokenizer(model);
	const regions = collectShakeRegions(branch, tokenizer, { ...config, keepBoundaryId });
	const placeholder = tokenizer.countTokens(SAMPLE_PLACEHOLDER);
	return {
		branch: branch.length,
		boundary: keepBoundaryId ?? null,
		model: model ? `${model.provider}/${model.id}` : null,
		tokenizer: model?.tokenizer ?? null,
		encoding: testEnv ? "bytes/4" : (tokenizer.encoding ?? (accurate ? "o200k" : "bytes/4")),
		placeholder,
		regions: regions.map((r: any) => {
			const { entry, originalText, ...rest } = r;
			return { ...rest, entryId: entry?.id };
		}),
		tokens: regions.reduce((s: number, r: any) => s + r.tokens, 0),
		freed: regions.reduce((s: number, r: any) => s + Math.max(0, r.tokens - placeholder), 0),
	};
}

const args = process.argv.slice(2);
if (args[0] === "--jobs") {
	const jobs: Job[] = JSON.parse(readFileSync(args[1], "utf8"));
	// A file OMP's own code throws on is said, per job, rather than ending the others.
	console.log(JSON.stringify(jobs.map(job => {
		try {
			return run(job);
		} catch (e) {
			return { error: String(e) };
		}
	})));
} else {
	const model = args.includes("--model") ? args[args.indexOf("--model") + 1] : undefined;
	console.log(JSON.stringify(run({ file: args[0], model, default: args.includes("--default") })));
}
