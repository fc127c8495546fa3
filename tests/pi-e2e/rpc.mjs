#!/usr/bin/env node
// Drives pi 1.6.0 in RPC mode, where extension UI calls (setStatus, notify) become JSON records on
// stdout, so the test can see the footer the extension sets and the messages it shows.
//
//   node rpc.mjs [pi options…] -- PROMPT…
//
// Sends each PROMPT as a `prompt` command (or, when it is a JSON object, as that command), one at a
// time: it waits for the response, and when a run started, for `agent_settled`. Then it closes stdin (pi shuts down once pending work is done) and
// prints, as one JSON array, every `extension_ui_request` record and one `{"type":"settled"}` /
// `{"type":"handled"}` marker per prompt, in the order pi wrote them. Exit 1 if pi fails.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const cli = fileURLToPath(new URL("node_modules/@earendil-works/pi-coding-agent/dist/cli.js", import.meta.url));
const argv = process.argv.slice(2);
const split = argv.indexOf("--");
const piArgs = split < 0 ? argv : argv.slice(0, split);
const prompts = split < 0 ? [] : argv.slice(split + 1);

const pi = spawn(process.execPath, [cli, "--mode", "rpc", ...piArgs], { stdio: ["pipe", "pipe", "inherit"] });
const seen = [];
let waiting; // {id, resolve, answered, settled}
let buffer = "";

pi.stdout.on("data", (chunk) => {
	buffer += chunk.toString("utf8");
	let nl;
	// Split on LF only: JSON strings may hold U+2028, which readline would split on.
	while ((nl = buffer.indexOf("\n")) >= 0) {
		const line = buffer.slice(0, nl).replace(/\r$/, "");
		buffer = buffer.slice(nl + 1);
		if (line.trim()) onRecord(JSON.parse(line));
	}
});

function onRecord(r) {
	if (r.type === "extension_ui_request") seen.push(r);
	if (!waiting) return;
	if (r.type === "response" && r.id === waiting.id) {
		if (!r.success) fail(`command ${waiting.id} failed: ${r.error}`);
		waiting.answered = true;
		if (r.data?.disposition !== "started") done("handled");
		else if (waiting.settled) done("settled");
	} else if (r.type === "agent_settled") {
		// A fast run can settle before its prompt's response arrives.
		waiting.settled = true;
		if (waiting.answered) done("settled");
	}
}

function done(how) {
	seen.push({ type: how });
	const w = waiting;
	waiting = undefined;
	w.resolve();
}

function fail(message) {
	pi.kill();
	process.stderr.write(`rpc.mjs: ${message}\n`);
	process.exit(1);
}

pi.on("exit", (code) => {
	if (waiting) fail(`pi exited (${code}) while prompt ${waiting.id} was pending`);
});

for (const [i, message] of prompts.entries()) {
	const id = `p${i}`;
	await new Promise((resolve) => {
		waiting = { id, resolve, answered: false, settled: false };
		// A PROMPT that is a JSON object is sent as that RPC command (e.g. {"type":"compact"}).
		const command = message.startsWith("{") ? JSON.parse(message) : { type: "prompt", message };
		pi.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
	});
}
pi.stdin.end();
const code = await new Promise((resolve) => pi.on("close", resolve));
if (code !== 0) fail(`pi exited with ${code}`);
process.stdout.write(`${JSON.stringify(seen, null, 1)}\n`);
