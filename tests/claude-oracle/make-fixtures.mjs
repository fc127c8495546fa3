// Makes real Claude Code transcripts with the real Claude Code (offline, local-api.mjs) and captures,
// for each, what Claude Code sends the model when it resumes it: the fixtures of
// tests/fixtures/claude/<name>/ (see its README.md).
//
//   node make-fixtures.mjs OUT_DIR [NAME...] [--keep]
//
// Each scenario is seeded (file contents come from a fixed PRNG), so a rerun makes the same
// conversation; only uuids, timestamps and the sandbox path differ. For each scenario:
//   transcript.jsonl   the session file as Claude Code left it (before the probe)
//   request.json       {"messages"}: the probe's request, less the probe turn and cache_control
//   meta.json          {"sessionId", "cwd", "scenario"}
//   subagents/, tool-results/   Claude Code's files beside the session, when it wrote some
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { claude, probe, sandbox, sessions } from "./harness.mjs";
import { startApi } from "./local-api.mjs";

/** A small seeded PRNG (mulberry32), so seeded files are the same on every run. */
function rng(seed) {
	return () => {
		seed |= 0;
		seed = (seed + 0x6d2b79f5) | 0;
		let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const WORDS = "alpha beta gamma delta fold shake token context session tool result read bash line value".split(" ");

/** `lines` lines of seeded pseudo-prose, some with non-ASCII text (é, 日本, an emoji). */
function prose(seed, lines) {
	const r = rng(seed);
	const out = [];
	for (let i = 0; i < lines; i++) {
		const n = 3 + Math.floor(r() * 9);
		const w = Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]);
		if (r() < 0.05) w.push("café 日本 🦀");
		out.push(`${i + 1}: ${w.join(" ")}`);
	}
	return out.join("\n") + "\n";
}

/** A valid 8×8 PNG (one colour), built by hand so no image library is needed. */
function png() {
	return Buffer.from(
		"89504e470d0a1a0a0000000d49484452000000080000000808020000004b6d29dc000000114944415478da633811a0" +
			"8115310c2d09006a995001b221efbe0000000049454e44ae426082",
		"hex",
	);
}

const bash = (command, description = "run") => ({ tool: "Bash", input: { command, description } });
const read = (file_path) => ({ tool: "Read", input: { file_path } });

/** The scenarios: each runs its turns in the sandbox and returns the session id. */
const SCENARIOS = {
	// Many Bash and Read outputs of varied size over four resumed turns, an error result, and one
	// output big enough that Claude Code persists it itself (<persisted-output>).
	"bash-read": async (box, api) => {
		writeFileSync(join(box.cwd, "notes.txt"), prose(1, 40));
		writeFileSync(join(box.cwd, "big.log"), prose(2, 1500));
		writeFileSync(join(box.cwd, "small.txt"), "one line\n");
		await claude(box, api, ["-p", "look around"], [read(join(box.cwd, "notes.txt")), bash("seq 1 300", "numbers"), { text: "looked" }]);
		const id = sessions(box)[0];
		await claude(box, api, ["-p", "read the log", "--resume", id], [read(join(box.cwd, "big.log")), bash("seq 1 2500 | paste -sd' ' | fold -w 80", "wide"), { text: "read it" }]);
		await claude(box, api, ["-p", "now fail", "--resume", id], [bash("ls /nonexistent-shake-dir", "fails"), read(join(box.cwd, "small.txt")), { text: "it failed" }]);
		await claude(box, api, ["-p", "a huge one", "--resume", id], [bash("seq 1 12000", "huge"), { text: "huge done" }]);
		return id;
	},
	// Thinking before a tool call and before text, over two turns.
	thinking: async (box, api) => {
		writeFileSync(join(box.cwd, "data.txt"), prose(3, 200));
		await claude(box, api, ["-p", "think first"], [
			{ thinking: "I should read the data file first.", ...read(join(box.cwd, "data.txt")) },
			{ thinking: "The data has 200 lines; now count them.", ...bash("wc -l data.txt", "count") },
			{ thinking: "Done counting.", text: "200 lines" },
		]);
		const id = sessions(box)[0];
		await claude(box, api, ["-p", "again", "--resume", id], [{ thinking: "A short thought.", text: "again done" }]);
		return id;
	},
	// Parallel tool calls: one API message with several tool_use blocks, which Claude Code writes as
	// one row per block sharing message.id, each result in its own row.
	parallel: async (box, api) => {
		writeFileSync(join(box.cwd, "a.txt"), prose(4, 120));
		writeFileSync(join(box.cwd, "b.txt"), prose(5, 60));
		await claude(box, api, ["-p", "read both"], [
			{ tools: [read(join(box.cwd, "a.txt")), read(join(box.cwd, "b.txt")), bash("seq 1 800", "numbers")] },
			{ text: "read both" },
		]);
		const id = sessions(box)[0];
		await claude(box, api, ["-p", "two commands", "--resume", id], [
			{ text: "Running two.", tools: [bash("seq 1 400", "first"), bash("echo 日本語 café; seq 1 50", "second")] },
			{ text: "both ran" },
		]);
		return id;
	},
	// An image read: the tool result holds an image block.
	image: async (box, api) => {
		writeFileSync(join(box.cwd, "pixel.png"), png());
		writeFileSync(join(box.cwd, "c.txt"), prose(6, 300));
		await claude(box, api, ["-p", "look at the image"], [read(join(box.cwd, "pixel.png")), read(join(box.cwd, "c.txt")), { text: "a small image" }]);
		return sessions(box)[0];
	},
	// A real /compact between turns: a compact_boundary row and the summary, then more work.
	compact: async (box, api) => {
		writeFileSync(join(box.cwd, "d.txt"), prose(7, 400));
		await claude(box, api, ["-p", "before compaction"], [read(join(box.cwd, "d.txt")), bash("seq 1 1000", "n"), { text: "before" }]);
		const id = sessions(box)[0];
		await claude(box, api, ["-p", "/compact", "--resume", id], [{ text: "Summary: the user read d.txt and listed numbers." }]);
		await claude(box, api, ["-p", "after compaction", "--resume", id], [bash("seq 1 600", "after"), { text: "after" }]);
		return id;
	},
	// A sub-agent (the Agent tool): its own transcript under <session>/subagents/, its result in
	// the main transcript.
	subagent: async (box, api) => {
		writeFileSync(join(box.cwd, "e.txt"), prose(8, 150));
		await claude(box, api, ["-p", "delegate"], [
			{ tool: "Agent", input: { description: "Read e.txt", prompt: "Read e.txt and summarise it.", subagent_type: "general-purpose" } },
			read(join(box.cwd, "e.txt")),
			{ text: "e.txt is prose." },
			{ text: "the agent says prose" },
		]);
		return sessions(box)[0];
	},
	// A Write of a whole file, an Edit with long old and new texts, then a Read of the file whole
	// (both calls' inputs are stale: `--fold-tool-inputs`), and outputs enough after them to leave
	// them outside the tail.
	"write-edit": async (box, api) => {
		const file = join(box.cwd, "story.txt");
		const text = prose(9, 60);
		const old = text.split("\n").slice(10, 40).join("\n");
		await claude(box, api, ["-p", "write and edit"], [
			{ tool: "Write", input: { file_path: file, content: text } },
			{ tool: "Edit", input: { file_path: file, old_string: old, new_string: old.toUpperCase() } },
			read(file),
			{ text: "written, edited and read" },
		]);
		const id = sessions(box)[0];
		await claude(box, api, ["-p", "more output", "--resume", id], [bash("seq 1 3000", "numbers"), bash("seq 1 2000 | paste -sd' '", "wide"), { text: "done" }]);
		return id;
	},
	// A long session for benchmarks (not a fixture: run it by name): 40 resumed turns, each with
	// three outputs of varied size.
	long: async (box, api) => {
		for (let i = 0; i < 10; i++) writeFileSync(join(box.cwd, `f${i}.txt`), prose(100 + i, 200 + 150 * i));
		let id;
		for (let turn = 0; turn < 40; turn++) {
			const steps = [
				read(join(box.cwd, `f${turn % 10}.txt`)),
				bash(`seq 1 ${200 + ((turn * 137) % 1800)}`, "numbers"),
				{ thinking: `Turn ${turn}: looking at the output.`, ...bash(`head -c ${1000 + ((turn * 911) % 9000)} f${(turn + 3) % 10}.txt`, "head") },
				{ text: `turn ${turn} done` },
			];
			await claude(box, api, id ? ["-p", `turn ${turn}`, "--resume", id] : ["-p", `turn ${turn}`], steps);
			id ??= sessions(box)[0];
		}
		return id;
	},
};

/** Scenarios run only when named (benchmarks). */
const BY_NAME_ONLY = new Set(["long"]);

/** Lines of a transcript (without the final empty string after the last "\n"). */
const lines = (text) => text.split("\n").slice(0, -1);
const unlines = (ls) => ls.map((l) => l + "\n").join("");
/** The index of the first line that parses and satisfies `test`. */
const find = (ls, test) =>
	ls.findIndex((l) => {
		try {
			return test(JSON.parse(l));
		} catch {
			return false;
		}
	});
/** A metadata row of `bytes` bytes that no loader step reads (an unknown type is kept and ignored). */
const padding = (bytes) => JSON.stringify({ type: "x-shake-padding", pad: "p".repeat(bytes) });

/**
 * Edge cases made from a generated transcript and checked by the same probe: the edited file is
 * what Claude Code resumes, so its request is the reference for each edit.
 */
const VARIANTS = {
	// A write in progress: half a row at the end, no newline.
	"torn-last-line": { from: "bash-read", edit: (t) => t + t.split("\n").at(-2).slice(0, 70) },
	// Lines that are not JSON in the middle of the file.
	"bad-lines": {
		from: "parallel",
		edit: (t) => {
			const ls = lines(t);
			ls.splice(5, 0, "this is not json", "{\"type\":\"user\",");
			return unlines(ls);
		},
	},
	// Every conversation row appended a second time, as a crashed rewrite might leave it.
	"duplicate-uuids": {
		from: "thinking",
		edit: (t) => {
			const ls = lines(t);
			return unlines([...ls, ...ls.filter((l) => l.includes('"uuid":') && l.startsWith('{"parentUuid"'))]);
		},
	},
	// An attachment row deleted: its child's parent is missing, so the walk falls back on time.
	"missing-parent": {
		from: "bash-read",
		edit: (t) => {
			const ls = lines(t);
			const at = find(ls, (r) => r.type === "attachment" && r.attachment?.type === "total_tokens_reminder" && /14\d{6}/.test(r.attachment.text));
			ls.splice(at, 1);
			return unlines(ls);
		},
	},
	// Over 5 MiB with an unanchored boundary: the size gate drops everything before it.
	"big-unanchored": {
		from: "compact",
		edit: (t) => {
			const ls = lines(t);
			const at = find(ls, (r) => r.subtype === "compact_boundary");
			const b = JSON.parse(ls[at]);
			delete b.compactMetadata.preservedSegment;
			delete b.compactMetadata.preservedMessages;
			ls[at] = JSON.stringify(b);
			ls.splice(at, 0, padding(5.2 * 1024 * 1024));
			return unlines(ls);
		},
	},
	// Over 5 MiB with the anchored boundary Claude Code wrote: the relink keeps the segment.
	"big-anchored": {
		from: "compact",
		edit: (t) => {
			const ls = lines(t);
			ls.splice(find(ls, (r) => r.subtype === "compact_boundary"), 0, padding(5.2 * 1024 * 1024));
			return unlines(ls);
		},
	},
};

const out = process.argv[2];
if (!out) {
	process.stderr.write("usage: node make-fixtures.mjs OUT_DIR [NAME...]\n");
	process.exit(1);
}
// --keep leaves each sandbox in place (meta.json names its home and cwd), for tests that go on
// to resume the sessions with the real Claude Code.
const keep = process.argv.includes("--keep");
const picked = process.argv.slice(3).filter((a) => a !== "--keep");
const names = picked.length > 0 ? picked : Object.keys(SCENARIOS).filter((n) => !BY_NAME_ONLY.has(n));
const api = await startApi(0);
try {
	for (const name of names) {
		const started = Date.now();
		const root = mkdtempSync(join(tmpdir(), `shake-cc-${name}-`));
		const box = sandbox(root);
		const id = await SCENARIOS[name](box, api);
		const [messages] = await probe(box, api, id);
		const dir = join(out, name);
		rmSync(dir, { recursive: true, force: true });
		mkdirSync(dir, { recursive: true });
		writeFileSync(join(dir, "transcript.jsonl"), readFileSync(join(box.projectDir, `${id}.jsonl`)));
		writeFileSync(join(dir, "request.json"), JSON.stringify({ messages }, null, 1) + "\n");
		writeFileSync(join(dir, "meta.json"), JSON.stringify({ sessionId: id, cwd: box.cwd, scenario: name, ...(keep && { home: box.home }) }, null, 1) + "\n");
		for (const sub of ["subagents", "tool-results"]) {
			const from = join(box.projectDir, id, sub);
			if (existsSync(from)) cpSync(from, join(dir, sub), { recursive: true });
		}
		process.stderr.write(`${name}: ${messages.length} messages, ${Date.now() - started} ms\n`);
		const file = join(box.projectDir, `${id}.jsonl`);
		const original = readFileSync(file, "utf8");
		for (const [variant, { from, edit }] of Object.entries(VARIANTS)) {
			if (from !== name) continue;
			const edited = edit(original);
			writeFileSync(file, edited);
			const [vm] = await probe(box, api, id);
			const vdir = join(out, variant);
			rmSync(vdir, { recursive: true, force: true });
			mkdirSync(vdir, { recursive: true });
			writeFileSync(join(vdir, "transcript.jsonl"), edited);
			writeFileSync(join(vdir, "request.json"), JSON.stringify({ messages: vm }, null, 1) + "\n");
			writeFileSync(join(vdir, "meta.json"), JSON.stringify({ sessionId: id, cwd: box.cwd, scenario: name, variant }, null, 1) + "\n");
			writeFileSync(file, original);
			process.stderr.write(`${variant}: ${vm.length} messages\n`);
		}
		if (!keep) rmSync(root, { recursive: true, force: true });
	}
} finally {
	await api.close();
}
