// Claude Code 2.1.328's resume request for every transcript in a folder, each resumed with its own
// model, for tests/cli/claude_real.rs:
//
//   node probe-real.mjs DIR  ->  one line per DIR/*.jsonl:
//     {"file", "model", "messages"}   the request's messages, as sent (probe turn included)
//     {"file", "model", "error"}      what Claude Code said when it would not resume the file
//
// A file is resumed by the session id its name ends with (`owner__repo__<id>.jsonl`), else by the
// first `sessionId` of its rows, unless it is a sub-agent's (`agent-<id>.jsonl`), from its own sandbox (one folder per file, so no run sees another's transcript), with the model of the
// file's last assistant row that names a real one (not `<synthetic>`), unless the fixture names
// another: after `@` in its name (`<name>@<model>.jsonl`, an excerpt for a rule that does not
// depend on the model), or as the first `<name>.<model>.request.json` beside it (the content
// excerpts, README-content.md). Each output line says which model it was. Only `cache_control` is
// taken out (its place depends on the request); what else the probe adds is for the test to
// tell apart. The transcript is put back byte for byte after the run.
import { copyFileSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { claude, sandbox, stripCacheControl, MODEL } from "./harness.mjs";
import { startApi } from "./local-api.mjs";

const dir = process.argv[2];
if (!dir) {
	process.stderr.write("usage: node probe-real.mjs DIR\n");
	process.exit(1);
}

/** The model of the last assistant row that names one Claude Code did not make up. */
export function ownModel(text) {
	let model;
	for (const line of text.split("\n")) {
		let row;
		try {
			row = JSON.parse(line);
		} catch {
			continue;
		}
		const m = row?.type === "assistant" ? row.message?.model : undefined;
		if (typeof m === "string" && m !== "<synthetic>") model = m;
	}
	return model ?? MODEL;
}

/** The model the fixture's name, or a request beside it, gives (see the top). */
function namedModel(name) {
	const stem = basename(name, ".jsonl");
	if (stem.includes("@")) return stem.split("@")[1];
	const request = readdirSync(dir)
		.filter((f) => f.startsWith(`${stem}.`) && f.endsWith(".request.json"))
		.sort()[0];
	return request?.slice(stem.length + 1, -".request.json".length);
}

/** The id a file is resumed by (see the top). */
function sessionOf(name, text) {
	const tail = basename(name, ".jsonl").split("@")[0].split("__").at(-1);
	const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
	if (uuid.test(tail) || tail.startsWith("agent-")) return tail;
	return text.match(/"sessionId":"([0-9a-f-]{36})"/)?.[1] ?? tail;
}

const root = mkdtempSync(join(tmpdir(), "probe-real-"));
const api = await startApi(0);
try {
	for (const name of readdirSync(dir).filter((n) => n.endsWith(".jsonl")).sort()) {
		const file = join(dir, name);
		const session = sessionOf(name, readFileSync(file, "utf8"));
		const box = sandbox(join(root, session));
		box.model = namedModel(name) ?? ownModel(readFileSync(file, "utf8"));
		mkdirSync(box.projectDir, { recursive: true });
		const copy = join(box.projectDir, `${session}.jsonl`);
		copyFileSync(file, copy);
		const seen = api.requests.length;
		const line = { file: name, model: box.model };
		try {
			await claude(box, api, ["-p", "probe", "--resume", session], [{ text: "probe answered" }]);
			const calls = api.requests.slice(seen).filter((r) => r.path.startsWith("/v1/messages") && !r.path.includes("count_tokens"));
			line.messages = stripCacheControl(calls.at(-1).body.messages);
		} catch (e) {
			line.error = String(e.message ?? e);
		} finally {
			copyFileSync(file, copy);
		}
		process.stdout.write(JSON.stringify(line) + "\n");
	}
} finally {
	await api.close();
	rmSync(root, { recursive: true, force: true });
}
