// Claude Code's own request for each excerpt of a real transcript (tests/fixtures/claude-real/,
// the content rules: attach-*, toolsearch-*, model-*), resumed with a given model:
//
//   node content-excerpts.mjs DIR                 -> remakes every DIR/<name>.<model>.request.json
//   node content-excerpts.mjs DIR NAME MODEL      -> makes DIR/NAME.MODEL.request.json
//
// Each excerpt is put in a fresh sandbox under its own session id and resumed with
// `claude -p probe --resume <id> --model MODEL`; the request's `messages` are saved less what the
// probe itself adds (harness.mjs, `probe`): the probe turn, `cache_control`, and the
// "No response requested." Claude Code puts before the probe when the transcript ends on tool
// results. For a model that takes `role: "system"` messages (claude-opus-5), the request-time
// system message after the probe turn goes too.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { claude, sandbox, stripCacheControl } from "./harness.mjs";
import { startApi } from "./local-api.mjs";

const [dir, only, onlyModel] = process.argv.slice(2);
if (!dir || (only && !onlyModel)) {
	process.stderr.write("usage: node content-excerpts.mjs DIR [NAME MODEL]\n");
	process.exit(1);
}
const PREFIXES = ["attach-", "toolsearch-", "model-"];
const jobs = only
	? [[only, onlyModel]]
	: readdirSync(dir)
			.filter((f) => f.endsWith(".request.json") && PREFIXES.some((p) => f.startsWith(p)))
			.map((f) => {
				const stem = f.slice(0, -".request.json".length);
				const name = readdirSync(dir).find((x) => x.endsWith(".jsonl") && stem.startsWith(`${x.slice(0, -6)}.`)).slice(0, -6);
				return [name, stem.slice(name.length + 1)];
			});

/** The messages less what the probe adds. */
export function withoutProbeTurn(messages) {
	let end = messages.length;
	if (messages[end - 1]?.role === "system") end--;
	const probe = messages[end - 1];
	const text = Array.isArray(probe?.content) ? probe.content.at(-1)?.text : probe?.content;
	if (probe?.role !== "user" || text !== "probe") throw new Error(`no probe turn at the end: ${JSON.stringify(probe).slice(0, 500)}`);
	end--;
	const before = messages[end - 1];
	if (before?.role === "assistant" && JSON.stringify(before.content) === JSON.stringify([{ type: "text", text: "No response requested." }])) end--;
	return messages.slice(0, end);
}

const api = await startApi(0);
try {
	for (const [name, model] of jobs) {
		const root = mkdtempSync(join(tmpdir(), "content-excerpt-"));
		try {
			const box = { ...sandbox(root), model };
			mkdirSync(box.projectDir, { recursive: true });
			const file = join(dir, `${name}.jsonl`);
			const sid = readFileSync(file, "utf8").match(/"sessionId":"([0-9a-f-]{36})"/)[1];
			copyFileSync(file, join(box.projectDir, `${sid}.jsonl`));
			const seen = api.requests.length;
			await claude(box, api, ["-p", "probe", "--resume", sid], [{ text: "probe answered" }]);
			const calls = api.requests.slice(seen).filter((r) => r.path.startsWith("/v1/messages") && !r.path.includes("count_tokens"));
			const body = calls.at(-1).body;
			const messages = withoutProbeTurn(stripCacheControl(body.messages));
			writeFileSync(join(dir, `${name}.${model}.request.json`), JSON.stringify({ model: body.model, messages }) + "\n");
			process.stdout.write(`${name} ${model}: ${messages.length} messages\n`);
		} finally {
			rmSync(root, { recursive: true, force: true });
		}
	}
} finally {
	await api.close();
}
