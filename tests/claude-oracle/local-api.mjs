// A local stand-in for the Anthropic Messages API, so the real Claude Code CLI runs offline.
//
// As a module: `const api = await startApi(port)`; `api.queue(steps)` sets the answers for the next
// `claude` run, `api.requests` is every logged request ({path, body}), `api.close()` stops it.
// As a script: `node local-api.mjs PORT SCRIPT.jsonl LOG.jsonl` answers with SCRIPT's lines and
// appends every request to LOG (the recipe of ../../shared/tools/claude-oracle, kept for manual use).
//
// A step is one answer to one POST /v1/messages (after the steps run out: "ok"):
//   {"text": "..."}                                     a text answer (stop_reason end_turn)
//   {"thinking": "...", "text": "..."}                  a thinking block, then text
//   {"tool": "Bash", "input": {...}}                    one tool call (stop_reason tool_use)
//   {"tools": [{"tool": "Read", "input": {...}}, ...]}  parallel tool calls in one message
//   {"thinking": "...", "tool": ...}                    thinking, then the call
// `body.messages` of a logged request is exactly what Claude Code sent the model: on
// `claude -p probe --resume <id>` it is the reference for what the session projects.
// count_tokens requests get {"input_tokens": 1}; other paths get {}; all are logged.
import { appendFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

function sse(res, event, data) {
	res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** Starts the stand-in on 127.0.0.1:`port` (0 picks a free port; `api.port` tells which). */
export function startApi(port = 0, onRequest = () => {}) {
	let steps = [];
	let ids = 0;
	// Ids unique across runs: Claude Code treats a tool_use id already in the session as a
	// repeat (it sends "[Tool use interrupted]"), and one session is resumed by many runs.
	const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
	const requests = [];
	const server = createServer((req, res) => {
		let raw = "";
		req.on("data", (c) => (raw += c));
		req.on("end", () => {
			const body = raw ? JSON.parse(raw) : {};
			const logged = { path: req.url, body };
			requests.push(logged);
			onRequest(logged);
			if (req.url.includes("count_tokens")) {
				res.writeHead(200, { "content-type": "application/json" });
				return res.end(JSON.stringify({ input_tokens: 1 }));
			}
			if (!req.url.startsWith("/v1/messages")) {
				res.writeHead(200, { "content-type": "application/json" });
				return res.end("{}");
			}
			const step = steps.length > 0 ? steps.shift() : { text: "ok" };
			const blocks = [];
			if (step.thinking) blocks.push({ type: "thinking", thinking: step.thinking, signature: `sig${run}_${++ids}` });
			if (step.text) blocks.push({ type: "text", text: step.text });
			const calls = step.tools ?? (step.tool ? [step] : []);
			for (const c of calls) blocks.push({ type: "tool_use", id: `toolu_${run}_${++ids}`, name: c.tool, input: c.input ?? {} });
			const stop = calls.length > 0 ? "tool_use" : "end_turn";
			const model = body.model ?? "claude-sonnet-4-5";
			// Usage grows with the request so that split rows and calibration see varied figures.
			const input = Math.ceil(raw.length / 4);
			res.writeHead(200, { "content-type": "text/event-stream" });
			sse(res, "message_start", {
				type: "message_start",
				message: {
					id: `msg_${run}_${++ids}`, type: "message", role: "assistant", model, content: [],
					stop_reason: null, stop_sequence: null, usage: { input_tokens: input, output_tokens: 1 },
				},
			});
			blocks.forEach((b, index) => {
				if (b.type === "text") {
					sse(res, "content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
					sse(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: b.text } });
				} else if (b.type === "thinking") {
					sse(res, "content_block_start", { type: "content_block_start", index, content_block: { type: "thinking", thinking: "" } });
					sse(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: b.thinking } });
					sse(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "signature_delta", signature: b.signature } });
				} else {
					sse(res, "content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
					sse(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } });
				}
				sse(res, "content_block_stop", { type: "content_block_stop", index });
			});
			sse(res, "message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } });
			sse(res, "message_stop", { type: "message_stop" });
			res.end();
		});
	});
	return new Promise((resolveApi) => {
		server.listen(port, "127.0.0.1", () => {
			resolveApi({
				port: server.address().port,
				requests,
				queue(next) {
					steps = [...next];
				},
				left: () => steps.length,
				close: () => new Promise((r) => server.close(r)),
			});
		});
	});
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
	const [port, scriptPath, logPath] = process.argv.slice(2);
	const script = readFileSync(scriptPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	const api = await startApi(Number(port), (r) => appendFileSync(logPath, JSON.stringify(r) + "\n"));
	api.queue(script);
}
