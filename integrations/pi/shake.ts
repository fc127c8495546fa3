// shake.ts: the pi extension for `shake` (pi 1.6.0). A footer meter (`✂ ~27k shakeable`) and
// `/shake [elide|thinking|images] [--profile P] | undo | status | dry-run` inside a running session.
//
// The `shake` CLI computes every plan; pi writes it, so the very next request sees the change:
//   idle  -> pi's own SessionManager.appendContextEdit (the live object behind ctx.sessionManager)
//   busy  -> the same writer, at the next turn boundary (turn_end), before the next request
//   no pi writer -> the CLI writes at pi's leaf, then ctx.switchSession re-reads the file
// The footer asks one long-lived `shake meter --serve` child per session (tokenizer built once,
// ~2 ms of CPU per turn after an append), and falls back to single `shake meter` runs if it dies.
// Install: `shake pi-extension --install`, or copy this file to ~/.pi/agent/extensions/, or `pi -e shake.ts`.
// Loaded by pi through jiti: TypeScript, no build step. Facts behind it: docs/pi.md.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";

/** The CLI to run: $SHAKE_BIN, else `shake` on PATH. */
const BIN = process.env.SHAKE_BIN || "shake";
/** `SHAKE_PI_WRITER=cli` skips pi's writer: the CLI writes and pi reloads the session. */
const CLI_WRITES = process.env.SHAKE_PI_WRITER === "cli";
const STATUS_KEY = "shake";
/** How long a meter reading may take (ms; `SHAKE_METER_TIMEOUT_MS`): past it the footer shows its
 * last figure marked stale. */
const METER_TIMEOUT = Number(process.env.SHAKE_METER_TIMEOUT_MS) || 60_000;
const SCOPES = ["elide", "thinking", "images"];
const PROFILES = ["default", "conservative", "aggressive"];
const VERBS: Record<string, string> = {
	elide: "fold stale tool output and big blocks (the default)",
	thinking: "drop thinking blocks",
	images: "replace images with a short marker",
	undo: "restore everything shake folded on this branch",
	status: "what is folded now",
	"dry-run": "what /shake would fold, changing nothing",
};

type Replacement = null | { content: string | unknown[] };
type Edit = { targetId: string; replacement: Replacement };
/** `shake fold --plan --json` / `shake undo --plan --json` (contract: docs/pi.md). */
type Plan = { edits: Edit[]; log: unknown; tokensFreed?: number; tokensRestored?: number; message: string };
/** `shake meter --json` (`cache.verdict`: what a fold costs with the prompt cache, issue 31). */
type Meter = { tokens: number; severity?: string; tokenizer?: string; cache?: { verdict?: string } | null };
/** A plan and pi's leaf when it was asked for (null: the session has no entries). */
type Planned = { plan: Plan; leaf: string | null };
/** Why `appendViaPi` wrote nothing when pi's leaf moved while the CLI planned. */
const MOVED = "the session changed while shake planned";
/** How many times a plan is made again when pi's leaf moved under the CLI. */
const REPLANS = 2;
/** A /shake or /shake undo that came while pi was busy. */
type Queued = { verb: "fold" | "undo"; cliArgs: string[] };
/** What a command line asks for. */
type Request = { verb: "fold" | "undo" | "status" | "dry-run"; cliArgs: string[] } | { error: string };
type Level = "info" | "warning" | "error";

/** Splits `/shake` arguments into a verb and the CLI flags it maps to. */
export function parseArgs(text: string): Request {
	const words = text.trim().split(/\s+/).filter(Boolean);
	let verb: "fold" | "undo" | "status" | "dry-run" = "fold";
	const cliArgs: string[] = [];
	for (let i = 0; i < words.length; i++) {
		const w = words[i];
		if (i === 0 && (w === "undo" || w === "status" || w === "dry-run")) verb = w;
		else if (SCOPES.includes(w) && verb !== "undo" && verb !== "status") cliArgs.push("--scope", w);
		else if (w === "--profile" && i + 1 < words.length && verb !== "undo" && verb !== "status") cliArgs.push("--profile", words[++i]);
		else if (w.startsWith("--profile=") && verb !== "undo" && verb !== "status") cliArgs.push(w);
		else return { error: `unknown argument "${w}". Usage: /shake [${SCOPES.join("|")}] [--profile P] | undo | status | dry-run` };
	}
	return { verb, cliArgs };
}

/** Argument completions: pi replaces the whole argument text with the item's value. */
export function completions(prefix: string): { value: string; label: string; description?: string }[] | null {
	const words = prefix.split(/\s+/);
	const last = words.pop() ?? "";
	const head = words.filter(Boolean);
	let options: [string, string | undefined][];
	if (head.length === 0) options = Object.entries(VERBS);
	else if (head.at(-1) === "--profile") options = PROFILES.map((p) => [p, `profile ${p}`]);
	else if (head[0] === "undo" || head[0] === "status") options = [];
	else options = [["--profile", "tail and block minimum: default, conservative, aggressive"]];
	const items = options
		.filter(([v]) => v.startsWith(last))
		.map(([v, description]) => ({ value: [...head, v].join(" "), label: v, description }));
	return items.length > 0 ? items : null;
}

/** The footer text and its colour for a shakeable figure: the label `shake meter` prints (with
 * its verdict from 1k on: `✂ ~27k shakeable · pays back in 2 turns`), coloured by the meter's
 * `severity` (low/warning/alert), else by its thresholds (10k, 25k). */
export function meterLabel(tokens: number, severity?: string, verdict?: string): { text: string; color: "dim" | "warning" | "error" } {
	const figure = tokens < 1000 ? "✂ <1k shakeable" : `✂ ~${Math.round(tokens / 1000).toLocaleString("en-US")}k shakeable`;
	const text = verdict && tokens >= 1000 ? `${figure} · ${verdict}` : figure;
	const level = severity ?? (tokens >= 25_000 ? "alert" : tokens >= 10_000 ? "warning" : "low");
	return { text, color: level === "alert" ? "error" : level === "warning" ? "warning" : "dim" };
}

/** The footer text of a figure no reading could refresh: the last one, marked stale and dimmed. */
export function staleLabel(tokens: number, severity?: string): { text: string; color: "dim" } {
	return { text: `${meterLabel(tokens, severity).text} (stale)`, color: "dim" };
}

/** One `shake meter --serve` child: a request is one revision line, the answer one JSON line, in
 * order. A reading that takes longer than `timeout` kills the child (it may be stuck); once dead
 * it answers `undefined` to everything, and the caller runs single `shake meter`s instead. */
export class MeterServer {
	private child: ChildProcessWithoutNullStreams | undefined;
	private buffer = "";
	private waiting: ((line: string | undefined) => void)[] = [];
	dead = false;

	constructor(bin: string, cwd: string) {
		try {
			this.child = spawn(bin, ["meter", "--serve"], { cwd, stdio: ["pipe", "pipe", "pipe"] });
		} catch {
			this.dead = true;
			return;
		}
		const child = this.child;
		// Never keep pi running for the meter's sake.
		child.unref();
		for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as unknown as { unref?: () => void }).unref?.();
		child.stderr.resume();
		child.stdout.on("data", (chunk: Buffer) => {
			this.buffer += chunk.toString("utf8");
			let nl: number;
			while ((nl = this.buffer.indexOf("\n")) >= 0) {
				const line = this.buffer.slice(0, nl);
				this.buffer = this.buffer.slice(nl + 1);
				this.waiting.shift()?.(line);
			}
		});
		const die = () => this.stop();
		child.on("error", die);
		child.on("exit", die);
		child.stdin.on("error", die);
	}

	/** The answer line to one request, or `undefined` (dead, died meanwhile, or timed out). */
	ask(rev: string, timeout: number): Promise<string | undefined> {
		if (this.dead || !this.child) return Promise.resolve(undefined);
		return new Promise((resolve) => {
			const timer = setTimeout(() => this.stop(), timeout);
			this.waiting.push((line) => {
				clearTimeout(timer);
				resolve(line);
			});
			this.child?.stdin.write(`${rev}\n`);
		});
	}

	/** Ends the child; every pending request gets `undefined`. */
	stop(): void {
		if (!this.dead) {
			this.dead = true;
			this.child?.stdin.end();
			this.child?.kill();
		}
		for (const w of this.waiting.splice(0)) w(undefined);
	}
}

/** The log entry's data with each target's `edit` set to the id pi gave the edit of that target
 * (the CLI cannot know pi's ids; contract in docs/pi.md). */
export function withEditIds(log: unknown, ids: Map<string, string>): unknown {
	const data = log as { targets?: { id: string }[] } | null;
	if (!data || !Array.isArray(data.targets)) return log;
	return { ...data, targets: data.targets.map((t) => (ids.has(t.id) ? { ...t, edit: ids.get(t.id) } : t)) };
}

export default function (pi: ExtensionAPI) {
	/** Commands that came while pi was busy, planned again and written at the next turn boundary. */
	let pending: Queued[] = [];
	/** Said once per session: the binary is missing. */
	let missingSaid = false;
	/** Meter runs started; only the latest one's figure reaches the footer. */
	let meterRuns = 0;
	/** The tokenizer of the figure in the footer: plans and dry runs count with it too, so the
	 * figure a fold reports is the one the footer showed. */
	let tokenizer: string | undefined;
	/** The figure in the footer, shown stale when a reading fails. */
	let shown: Meter | undefined;
	/** This session's meter child; after it dies, single runs until the next session. */
	let server: MeterServer | undefined;

	/** Tells the user: a toast with a UI, stderr in print and json mode. */
	function say(ctx: ExtensionContext, message: string, level: Level = "info"): void {
		if (ctx.hasUI) ctx.ui.notify(`shake: ${message}`, level);
		else process.stderr.write(`shake: ${message}\n`);
	}

	/** The session file, or why there is none. */
	function sessionFile(ctx: ExtensionContext): { file: string } | { why: string } {
		const file = ctx.sessionManager.getSessionFile();
		if (!file) return { why: "this session is not saved (pi --no-session), so there is nothing to shake" };
		// pi writes the file only once the first reply arrives.
		if (!existsSync(file)) return { why: "this session is not on disk yet: pi writes it after the first reply" };
		return { file };
	}

	/** `<file>:<pi's leaf>`, the revision every command acts on, or why there is none. */
	function revision(ctx: ExtensionContext): { rev: string } | { why: string } {
		const where = sessionFile(ctx);
		if ("why" in where) return where;
		// pi's leaf lives in memory and differs from the file's last line after /tree. `FILE:ID`
		// names a leaf for every command (`--leaf` is only on the reading ones); the meter still
		// takes its append shortcut when the id is the file's last entry.
		const leaf = ctx.sessionManager.getLeafId();
		return { rev: leaf ? `${where.file}:${leaf}` : where.file };
	}

	/** Runs `shake <args> <file>:<pi's leaf>`; returns stdout, or undefined after telling why. */
	async function cli(ctx: ExtensionContext, args: string[], quiet = false, timeout = 60_000): Promise<string | undefined> {
		const where = revision(ctx);
		if ("why" in where) {
			if (!quiet) say(ctx, where.why, "warning");
			return undefined;
		}
		const r = await pi.exec(BIN, [...args, where.rev], { cwd: ctx.cwd, timeout });
		if (r.code === 0) return r.stdout;
		// pi.exec reports a failed spawn as exit 1 with the spawn error as stderr.
		if (/^spawn .*\b(ENOENT|EACCES)\b/.test(r.stderr)) {
			if (!quiet || !missingSaid) {
				say(ctx, `the \`${BIN}\` binary was not found; install shake or set SHAKE_BIN to its path`, "error");
			}
			missingSaid = true;
			if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, undefined);
		} else if (!quiet) {
			say(ctx, r.stderr.trim().replace(/^shake: (error: )?/, "") || `\`shake ${args[0]}\` exited with ${r.code}`, "error");
		}
		return undefined;
	}

	async function cliJson<T>(ctx: ExtensionContext, args: string[], quiet = false, timeout?: number): Promise<T | undefined> {
		const out = await cli(ctx, [...args, "--json"], quiet, timeout);
		if (out === undefined) return undefined;
		try {
			return JSON.parse(out) as T;
		} catch {
			if (!quiet) say(ctx, `\`shake ${args.join(" ")} --json\` printed something that is not JSON`, "error");
			return undefined;
		}
	}

	/** One meter reading at pi's leaf: from this session's `meter --serve` child, else (it died or
	 * timed out) from a single `shake meter` run; undefined when neither answered. */
	async function read(ctx: ExtensionContext): Promise<Meter | undefined> {
		const where = revision(ctx);
		if ("why" in where) return undefined;
		if (!server && !missingSaid) server = new MeterServer(BIN, ctx.cwd);
		const line = await server?.ask(where.rev, METER_TIMEOUT);
		if (line !== undefined) {
			try {
				const m = JSON.parse(line) as Meter & { error?: string };
				return typeof m.tokens === "number" ? m : undefined;
			} catch {
				return undefined;
			}
		}
		return cliJson<Meter>(ctx, ["meter"], true, METER_TIMEOUT);
	}

	/** Refreshes the footer meter (never without a UI). Runs may overlap: a slower, older figure
	 * never overwrites a newer one. A reading that fails leaves the last figure, marked stale. */
	async function refresh(ctx: ExtensionContext): Promise<void> {
		if (!ctx.hasUI) return;
		const run = ++meterRuns;
		const m = await read(ctx);
		if (run !== meterRuns || missingSaid) return;
		if (!m) {
			if (!shown) return;
			const { text, color } = staleLabel(shown.tokens, shown.severity);
			ctx.ui.setStatus(STATUS_KEY, ctx.ui.theme.fg(color, text));
			return;
		}
		shown = m;
		tokenizer = m.tokenizer;
		const { text, color } = meterLabel(m.tokens, m.severity, m.cache?.verdict);
		ctx.ui.setStatus(STATUS_KEY, ctx.ui.theme.fg(color, text));
	}

	/** Why pi would refuse an edit, checked for the whole batch before anything is written. */
	function refusal(ctx: ExtensionContext, e: Edit): string | undefined {
		const target = ctx.sessionManager.getEntry(e.targetId) as { type: string; message?: { role: string } } | undefined;
		if (!target) return `entry ${e.targetId} not found`;
		if (!ctx.sessionManager.getBranch().some((x) => x.id === e.targetId)) return `entry ${e.targetId} is not on the current branch`;
		const role = target.message?.role;
		const editable = target.type === "custom_message" || (target.type === "message" && (role === "user" || role === "assistant" || role === "toolResult"));
		return editable ? undefined : `entry ${e.targetId} has no editable content`;
	}

	/** pi's own writer, when this pi exposes it: ctx.sessionManager is typed read-only but is the live
	 * SessionManager in pi 1.6.0. Undefined when it is not reachable (or SHAKE_PI_WRITER=cli). */
	function piWriter(ctx: ExtensionContext): ((id: string, r: Replacement) => string) | undefined {
		const sm = ctx.sessionManager as unknown as { appendContextEdit?: (id: string, r: Replacement) => string };
		if (CLI_WRITES || typeof sm.appendContextEdit !== "function") return undefined;
		return sm.appendContextEdit.bind(sm);
	}

	/** A plan from `shake <verb> --plan` at pi's leaf, and that leaf; undefined after telling why
	 * not (unless quiet). */
	async function planAt(ctx: ExtensionContext, verb: "fold" | "undo", cliArgs: string[], quiet = false): Promise<Planned | undefined> {
		// Read before the CLI starts: `cli` names the same leaf in the same tick.
		const leaf = ctx.sessionManager.getLeafId();
		const plan = await cliJson<Plan>(ctx, [verb, "--plan", ...cliArgs], quiet);
		return plan && { plan, leaf };
	}

	/** Writes a plan through pi: the edits, then the log entry naming the ids pi gave them. Returns
	 * undefined when written, else why not (nothing is written then): `MOVED` when pi's leaf is no
	 * longer the one the plan was made at (pi appended or compacted while the CLI planned, so the
	 * plan may edit entries no longer in context and claim tokens it cannot free). */
	function appendViaPi(ctx: ExtensionContext, { plan, leaf }: Planned): string | undefined {
		const write = piWriter(ctx);
		if (!write) return "pi's writer is not reachable";
		if (ctx.sessionManager.getLeafId() !== leaf) return MOVED;
		const why = plan.edits.map((e) => refusal(ctx, e)).find(Boolean);
		if (why) return why;
		const ids = new Map(plan.edits.map((e) => [e.targetId, write(e.targetId, e.replacement)]));
		pi.appendEntry("shake", withEditIds(plan.log, ids));
		return undefined;
	}

	/** Plans `verb` now and writes it through pi, planning again (up to `REPLANS` times) while pi's
	 * leaf moves under the CLI. `planned` is a plan already made, tried first. Returns the plan
	 * written, or why nothing was: `empty` (nothing to do; its message says why) or a reason. */
	async function planAndWrite(ctx: ExtensionContext, verb: "fold" | "undo", cliArgs: string[], planned?: Planned): Promise<{ written: Plan } | { empty: Plan } | { why: string }> {
		for (let attempt = 0; ; attempt++) {
			const p = planned ?? (await planAt(ctx, verb, cliArgs, true));
			planned = undefined;
			if (!p) return { why: "the CLI gave no plan" };
			// No edits but a log: the log entry repairs a half-written batch.
			if (p.plan.edits.length === 0 && !p.plan.log) return { empty: p.plan };
			const why = appendViaPi(ctx, p);
			if (!why) return { written: p.plan };
			if (why !== MOVED || attempt >= REPLANS) return { why };
		}
	}

	/** Writes the commands queued while pi was busy, each planned again now: since it was queued,
	 * the run added entries and pi may have compacted (pi 1.6.0 runs its threshold compaction
	 * before `agent_settled`), so the plan made then could edit entries summarised away and claim
	 * tokens never freed. Says what happened to each. */
	async function writePending(ctx: ExtensionContext, when: string): Promise<void> {
		const queued = pending;
		pending = [];
		const again = `planned again ${when.replace(/^applied /, "")}`;
		for (const q of queued) {
			const r = await planAndWrite(ctx, q.verb, q.cliArgs);
			if ("written" in r) say(ctx, `${r.written.message} (${when})`);
			else if ("empty" in r) say(ctx, `${r.empty.message || "nothing to shake"} (${again}: the session changed since /shake)`);
			else say(ctx, `a /shake that came while pi was busy was not applied (${again}: ${r.why}); run /shake again`, "warning");
		}
	}

	/** /shake and /shake undo: plan with the CLI, then write through pi. */
	async function apply(ctx: ExtensionCommandContext, verb: "fold" | "undo", cliArgs: string[]): Promise<void> {
		// A second plan would be made from the file without the first one's edits.
		if (pending.length > 0) {
			say(ctx, "pi is busy and a /shake is already queued for the end of this turn; try again when it is applied", "warning");
			return;
		}
		const planned = await planAt(ctx, verb, cliArgs);
		if (!planned) return;
		const { plan } = planned;
		// No edits but a log: the log entry repairs a half-written batch.
		if (plan.edits.length === 0 && !plan.log) {
			say(ctx, plan.message || (verb === "undo" ? "nothing to undo" : "nothing to shake"));
			return;
		}
		// Checked after the plan arrives: a run may have started or settled meanwhile.
		if (!ctx.isIdle()) {
			if (!piWriter(ctx)) {
				say(ctx, "pi is busy, and without pi's writer shake must reload the session: run /shake again when pi is idle", "warning");
				return;
			}
			pending.push({ verb, cliArgs });
			say(ctx, `pi is busy: ${plan.message} (applies at the end of this turn, planned again then)`);
			return;
		}
		if (piWriter(ctx)) {
			const r = await planAndWrite(ctx, verb, cliArgs, planned);
			if ("written" in r) say(ctx, r.written.message);
			else if ("empty" in r) say(ctx, `${r.empty.message} (planned again: the session changed while shake planned)`);
			else say(ctx, `pi refused the plan (${r.why}); nothing was written. Try /shake status`, "error");
			await refresh(ctx);
			return;
		}
		// No pi writer: the CLI appends at pi's leaf, then pi re-reads the file. This ctx is stale afterwards.
		// `--force`: pi is idle and reloads the file right after, and pi's leaf is where pi is (so
		// neither pi's own last write nor a leaf other than the last line is a reason to refuse).
		const file = ctx.sessionManager.getSessionFile() as string;
		const out = await cli(ctx, [verb, "--force", ...cliArgs]);
		if (out === undefined) return;
		await ctx.switchSession(file, {
			withSession: async (fresh) => {
				say(fresh, `${out.trim()} (session reloaded)`);
			},
		});
	}

	pi.registerCommand("shake", {
		description: "Fold stale heavy content: /shake [elide|thinking|images] [--profile P] | undo | status | dry-run",
		getArgumentCompletions: completions,
		handler: async (args, ctx) => {
			const req = parseArgs(args);
			if ("error" in req) return say(ctx, req.error, "error");
			const counted = tokenizer ? [...req.cliArgs, "--tokenizer", tokenizer] : req.cliArgs;
			if (req.verb === "fold" || req.verb === "undo") return apply(ctx, req.verb, counted);
			const out = await cli(ctx, req.verb === "status" ? ["status"] : ["fold", "--dry-run", ...counted]);
			if (out !== undefined) say(ctx, out.trim());
			await refresh(ctx);
		},
	});

	// Plans made mid-run are written when the turn ends: its messages are persisted, and every
	// provider request rebuilds its context from the session manager, so the next request of the
	// same run sees them. (Boundary drafts would be the documented route, but pi assigns the edits'
	// ids only when it commits them, and the log entry must name them.)
	pi.on("turn_end", async (_event, ctx) => {
		if (pending.length > 0) await writePending(ctx, "applied at the turn boundary");
	});

	pi.on("session_start", async (_e, ctx) => {
		pending = [];
		shown = undefined;
		server?.stop();
		server = undefined;
		await refresh(ctx);
	});
	pi.on("session_shutdown", async () => {
		pending = [];
		server?.stop();
		server = undefined;
	});
	pi.on("agent_settled", async (_e, ctx) => {
		// A plan that arrived after the run's last turn boundary: pi is idle now.
		if (pending.length > 0) await writePending(ctx, "applied when pi settled");
		await refresh(ctx);
	});
	pi.on("session_compact", async (_e, ctx) => refresh(ctx));
	pi.on("session_tree", async (_e, ctx) => refresh(ctx));
}
