// shake-meter.ts: the oh-my-pi extension for `shake` (OMP 18.x). It does two things, and never
// changes the session:
//   - a footer meter, `✂ ~27k shakeable · pays back in 2 turns`: what OMP's own manual `/shake`
//     would free now, computed by the running agent's own collectShakeRegions and Tokenizer (so
//     it is OMP's number, for every model family), with `shake meter --json` as the fallback
//     outside OMP; the verdict is that reading's (`cache.verdict`: what the fold costs with the
//     prompt cache, priced from the session's recorded usage, docs/meter.md);
//   - the undo for OMP's destructive `/shake`: every refresh runs `shake meter --json` on the
//     session file, which imports it (`shake import` when the meter fails), so the store holds the
//     file as it was before each shake, and `shake restore <file> --version N` puts it back byte
//     for byte (docs/omp.md).
// Refreshes on session start, switch, compaction, turn end, agent end and a 3-second tick
// (`/shake` emits no event). Dim below 10k, warning from 10k, error from 25k. Each change of the
// reading is logged as one JSON line to $OMP_SHAKE_METER_LOG, else ~/.omp/logs/shake-meter.jsonl.
// Install: copy to ~/.omp/agent/extensions/ (or `omp -e shake-meter.ts`). $SHAKE_BIN names the CLI.
import { appendFileSync, mkdirSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const BIN = process.env.SHAKE_BIN || "shake";
const STATUS_KEY = "shake";
const TICK_MS = 3_000;
/** shake-meter-omp's sample placeholder: its count stands for each region's placeholder. */
const SAMPLE_PLACEHOLDER = "[shaken ~1234 tokens — recover: artifact://62 (region 12)]";

/** What the meter shows: the tokens a no-argument `/shake` would free, and where the figure came from. */
export type Reading = { tokens: number; toolResults: number; blocks: number; source: "omp" | "shake" };

/** The footer text and its colour for a shakeable figure (shake-meter-omp's thresholds), with the
 * verdict from 1k on as `shake meter` prints it (`✂ ~27k shakeable · pays back in 2 turns`). */
export function meterLabel(tokens: number, verdict?: string): { text: string; color: "dim" | "warning" | "error" } {
	const figure = tokens < 1000 ? "✂ <1k shakeable" : `✂ ~${Math.round(tokens / 1000).toLocaleString("en-US")}k shakeable`;
	const text = verdict && tokens >= 1000 ? `${figure} · ${verdict}` : figure;
	return { text, color: tokens >= 25_000 ? "error" : tokens >= 10_000 ? "warning" : "dim" };
}

/** OMP's `/shake` figure on `branch`: the newest compaction's boundary, the manual preset, and
 * Σ max(0, region − placeholder) with the running agent's own tokenizer for `model`. */
export function ompReading(core: any, branch: any[], model: unknown): Reading {
	const compaction = [...branch].reverse().find((e) => e.type === "compaction");
	const tokenizer = new core.Tokenizer(model ?? null);
	const regions = core.collectShakeRegions(branch, tokenizer, {
		...core.AGGRESSIVE_SHAKE_CONFIG,
		keepBoundaryId: compaction?.firstKeptEntryId,
	});
	const p = tokenizer.countTokens(SAMPLE_PLACEHOLDER);
	return {
		tokens: regions.reduce((sum: number, r: any) => sum + Math.max(0, r.tokens - p), 0),
		toolResults: regions.filter((r: any) => r.kind === "toolResult").length,
		blocks: regions.filter((r: any) => r.kind === "block").length,
		source: "omp",
	};
}

function logPath(): string {
	return process.env.OMP_SHAKE_METER_LOG || path.join(os.homedir(), ".omp", "logs", "shake-meter.jsonl");
}

function log(record: Record<string, unknown>): void {
	try {
		const file = logPath();
		mkdirSync(path.dirname(file), { recursive: true });
		appendFileSync(file, `${JSON.stringify({ ts: new Date().toISOString(), ...record })}\n`);
	} catch {}
}

export default function shakeMeter(pi: any) {
	let core: any = null;
	let timer: ReturnType<typeof setInterval> | undefined;
	let last: any;
	let shown = "";
	let logged = "";
	let busy = false;

	async function loadCore(): Promise<void> {
		if (core) return;
		try {
			// Inside OMP a bare import resolves to the running agent's own module.
			core = await import("@oh-my-pi/pi-agent-core");
		} catch (error) {
			log({ event: "fallback", error: String(error) });
		}
	}

	/** `shake meter --json` on the file (which imports it), or `shake import` when it fails. */
	async function shakeMeterJson(file: string): Promise<any> {
		const r = await pi.exec(BIN, ["meter", "--json", file]);
		if (r.code === 0) return JSON.parse(r.stdout);
		await pi.exec(BIN, ["import", file]);
		return null;
	}

	async function refresh(ctx: any): Promise<void> {
		last = ctx ?? last;
		if (!last?.hasUI || busy) return;
		busy = true;
		try {
			const file: string | undefined = last.sessionManager.getSessionFile?.();
			// Keep this version of the file before OMP may rewrite it (the undo for /shake), and
			// take the verdict of shake's reading (its figure is OMP's /shake figure too).
			const m = file ? await shakeMeterJson(file) : null;
			const reading: Reading | null = core
				? ompReading(core, last.sessionManager.getBranch(), last.model)
				: m
					? { tokens: m.tokens, toolResults: m.toolResults ?? 0, blocks: m.blocks ?? 0, source: "shake" }
					: null;
			if (!reading) return;
			const { text, color } = meterLabel(reading.tokens, m?.cache?.verdict);
			if (text + color !== shown) {
				shown = text + color;
				last.ui.setStatus(STATUS_KEY, last.ui.theme.fg(color, text));
			}
			const record = { session: file, model: last.model?.id, ...reading };
			if (JSON.stringify(record) !== logged) {
				logged = JSON.stringify(record);
				log(record);
			}
		} catch {
			// A meter never breaks the session.
		} finally {
			busy = false;
		}
	}

	pi.on("session_start", async (_event: unknown, ctx: any) => {
		await loadCore();
		timer ??= setInterval(() => void refresh(undefined), TICK_MS);
		timer.unref?.();
		await refresh(ctx);
	});
	for (const event of ["session_switch", "session_compact", "turn_end", "agent_end"]) {
		pi.on(event, async (_event: unknown, ctx: any) => refresh(ctx));
	}
	pi.on("session_shutdown", async () => {
		if (timer) clearInterval(timer);
		timer = undefined;
	});
}
