// What the real Claude Code does with an existing session, for the Rust tests:
//
//   node probe.mjs --home H --cwd C --session ID [--config-dir D] [--model M] -> {"messages": [...]}
//   node probe.mjs --home H --cwd C --session ID [--config-dir D] --read P  -> {"read": "..."}
//   node probe.mjs --home H --cwd C --session ID [--config-dir D] --rewind-at UUID -> {"rewound": true}
//   node probe.mjs --home H --cwd C --continue [--config-dir D]             -> {"session": "<id>"}
//
// The first prints the messages Claude Code sends when it resumes the session (`claude -p probe
// --resume ID`, less the probe turn and cache_control; see harness.mjs). The second has the model
// ask for `Read` of P and prints the tool result Claude Code sends back. The session file is put
// back byte for byte afterwards either way. The third rewinds: it resumes the session from the
// chain entry UUID (`claude -p "after the rewind" --resume ID --resume-session-at UUID`, as a
// resume from an earlier message does) and keeps the turn it writes, a new branch. The fourth
// prints which session `claude -p --continue` resumes (`continued` in harness.mjs).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { claude, continued, encodeCwd, probe, stripCacheControl } from "./harness.mjs";
import { startApi } from "./local-api.mjs";

const args = process.argv.slice(2);
const opt = (name) => {
	const i = args.indexOf(`--${name}`);
	return i >= 0 ? args[i + 1] : undefined;
};
const home = opt("home");
const cwd = opt("cwd");
const session = opt("session");
const toContinue = args.includes("--continue");
if (!home || !cwd || !session === !toContinue) {
	process.stderr.write("usage: node probe.mjs --home H --cwd C (--session ID [--read PATH] | --continue) [--config-dir D]\n");
	process.exit(1);
}
const configDir = opt("config-dir");
const box = { home, cwd, configDir, model: opt("model"), projectDir: join(configDir ?? join(home, ".claude"), "projects", encodeCwd(cwd)) };
const api = await startApi(0);
try {
	const read = opt("read");
	const rewind = opt("rewind-at");
	if (toContinue) {
		process.stdout.write(JSON.stringify({ session: await continued(box, api) }) + "\n");
	} else if (rewind !== undefined) {
		await claude(box, api, ["-p", "after the rewind", "--resume", session, "--resume-session-at", rewind], [{ text: "rewound" }]);
		process.stdout.write(JSON.stringify({ rewound: true }) + "\n");
	} else if (read === undefined) {
		const [messages] = await probe(box, api, session);
		process.stdout.write(JSON.stringify({ messages }) + "\n");
	} else {
		const file = join(box.projectDir, `${session}.jsonl`);
		const before = readFileSync(file);
		const seen = api.requests.length;
		try {
			await claude(box, api, ["-p", "read it", "--resume", session], [{ tool: "Read", input: { file_path: read } }, { text: "read" }]);
		} finally {
			writeFileSync(file, before);
		}
		const calls = api.requests.slice(seen).filter((r) => r.path.startsWith("/v1/messages") && !r.path.includes("count_tokens"));
		// The request that answers the Read: the one holding a tool_result for the Read call.
		let result;
		for (const call of calls) {
			const messages = stripCacheControl(call.body.messages);
			const blocks = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
			const use = blocks.find((b) => b.type === "tool_use" && b.name === "Read" && b.input?.file_path === read);
			result = use && blocks.find((b) => b.type === "tool_result" && b.tool_use_id === use.id);
			if (result) break;
		}
		if (!result) throw new Error(`no request carried the result of Read ${read}: ${JSON.stringify(calls.map((c) => c.body.messages.at(-1))).slice(0, 3000)}`);
		process.stdout.write(JSON.stringify({ read: result.content }) + "\n");
	}
} finally {
	await api.close();
}
