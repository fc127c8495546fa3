// Runs the real Claude Code (2.1.328, from this folder's node_modules) offline against local-api.mjs.
//
// A sandbox is a folder with `home/` (HOME, so transcripts land in home/.claude/projects/<encoded
// cwd>/) and `project/` (the cwd). `claude(sandbox, api, args, steps)` runs one `claude -p ...` with
// the scripted answers `steps` and fails if Claude Code did not consume exactly those.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const claudeBin = join(here, "node_modules/.bin/claude");
export const MODEL = "claude-sonnet-4-5";

/** Claude Code's project folder name for a cwd: every non-alphanumeric character becomes `-`. */
export function encodeCwd(cwd) {
	return cwd.replace(/[^a-zA-Z0-9]/g, "-");
}

/**
 * Creates (or reuses) a sandbox under `root`; returns its paths. (A box may also name
 * `configDir`, Claude Code's CLAUDE_CONFIG_DIR, whose `projects/` then holds the transcripts, and
 * `model`, the `--model` to run with instead of MODEL: a transcript's own model, as the request
 * Claude Code builds depends on it.)
 */
export function sandbox(root) {
	const home = join(root, "home");
	const cwd = join(root, "project");
	mkdirSync(join(home, ".claude"), { recursive: true });
	mkdirSync(cwd, { recursive: true });
	return { root, home, cwd, projectDir: join(home, ".claude/projects", encodeCwd(cwd)) };
}

/** Runs `claude ARGS` in the sandbox; `steps` are the local API's answers for this run. */
export async function claude(box, api, args, steps) {
	api.queue(steps);
	const env = {
		PATH: process.env.PATH,
		HOME: box.home,
		ANTHROPIC_BASE_URL: `http://127.0.0.1:${api.port}`,
		ANTHROPIC_API_KEY: "sk-local",
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
		DISABLE_AUTOUPDATER: "1",
		TZ: "UTC",
	};
	if (box.configDir) env.CLAUDE_CONFIG_DIR = box.configDir;
	// Async: the local API runs in this process and must answer while Claude Code waits.
	const child = spawn(claudeBin, [...args, "--model", box.model ?? MODEL, "--allowedTools", "Bash", "Read", "Agent", "Write", "Edit"], {
		cwd: box.cwd,
		env,
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (c) => (stdout += c));
	child.stderr.on("data", (c) => (stderr += c));
	const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
	const code = await new Promise((r) => child.on("close", r));
	clearTimeout(timer);
	if (code !== 0) throw new Error(`claude ${args.join(" ")} exited ${code}: ${stderr}${stdout}`);
	if (api.left() !== 0) throw new Error(`claude ${args.join(" ")} left ${api.left()} scripted steps unused`);
	return stdout;
}

/** The main transcripts (session ids) in the sandbox's project folder, oldest first. */
export function sessions(box) {
	if (!existsSync(box.projectDir)) return [];
	return readdirSync(box.projectDir)
		.filter((f) => f.endsWith(".jsonl"))
		.map((f) => f.slice(0, -".jsonl".length));
}

/** The messages Claude Code sent on its last /v1/messages call. */
export function lastMessages(api) {
	const calls = api.requests.filter((r) => r.path.startsWith("/v1/messages") && !r.path.includes("count_tokens"));
	if (calls.length === 0) throw new Error("Claude Code made no /v1/messages call");
	return calls[calls.length - 1].body.messages;
}

/**
 * What the transcript projects, from a probe: `claude -p probe --resume <id>`, leaving out the
 * request-time parts (see docs/claude-code.md): the probe turn (the last message) and the
 * `cache_control` markers Claude Code sets per request. The session file is put back byte for
 * byte afterwards, so probing does not change what is probed.
 */
export async function probe(box, api, sessionId, steps = [{ text: "probe answered" }]) {
	const file = join(box.projectDir, `${sessionId}.jsonl`);
	const before = readFileSync(file);
	const seen = api.requests.length;
	try {
		await claude(box, api, ["-p", "probe", "--resume", sessionId], steps);
	} finally {
		writeFileSync(file, before);
	}
	const calls = api.requests.slice(seen).filter((r) => r.path.startsWith("/v1/messages") && !r.path.includes("count_tokens"));
	if (calls.length === 0) throw new Error("the probe made no /v1/messages call");
	return calls.map((c) => withoutProbe(stripCacheControl(c.body.messages)));
}

/**
 * Runs `claude -p probe --continue` (one scripted answer) and returns the id of the transcript
 * Claude Code continued: the one file of the project folder it appended to. Every transcript is
 * put back byte for byte afterwards (with its mtime, to the millisecond), and a file it created
 * is removed. Claude Code keeps state beside the transcripts: one run per sandbox.
 */
export async function continued(box, api) {
	const transcripts = () => readdirSync(box.projectDir).filter((n) => n.endsWith(".jsonl"));
	const before = new Map(transcripts().map((n) => [n, { bytes: readFileSync(join(box.projectDir, n)), stat: statSync(join(box.projectDir, n)) }]));
	const changed = [];
	try {
		await claude(box, api, ["-p", "probe", "--continue"], [{ text: "probe answered" }]);
	} finally {
		for (const name of transcripts()) {
			const file = join(box.projectDir, name);
			const was = before.get(name);
			if (was === undefined) {
				changed.push(name);
				rmSync(file);
			} else if (!was.bytes.equals(readFileSync(file))) {
				changed.push(name);
				writeFileSync(file, was.bytes);
				utimesSync(file, was.stat.atime, was.stat.mtime);
			}
		}
	}
	if (changed.length !== 1) throw new Error(`expected one transcript continued, got ${JSON.stringify(changed)}`);
	return changed[0].replace(/\.jsonl$/, "");
}

/** The messages less the probe turn: the last message, a user message whose last block is "probe". */
export function withoutProbe(messages) {
	const last = messages.at(-1);
	const text = Array.isArray(last?.content) ? last.content.at(-1)?.text : last?.content;
	if (last?.role !== "user" || text !== "probe") throw new Error(`the last message is not the probe turn: ${JSON.stringify(last)}`);
	return messages.slice(0, -1);
}

/** A deep copy without `cache_control` keys. */
export function stripCacheControl(v) {
	return JSON.parse(JSON.stringify(v, (k, x) => (k === "cache_control" ? undefined : x)));
}

/** Runs a shell command in the sandbox (for seeding files), returning stdout. */
export function sh(box, command) {
	return execFileSync("bash", ["-c", command], { cwd: box.cwd, encoding: "utf8" });
}
