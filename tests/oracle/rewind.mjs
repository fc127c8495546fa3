#!/usr/bin/env node
// Continue a session from an earlier entry with pi's own code, as a rewind (/tree, then a new
// message) does: SessionManager.branch(entryId), then appendMessage of a user message.
//
//   node rewind.mjs <session.jsonl> <entryId> <text>
//
// Appends to the file IN PLACE (pi's appendFileSync). Prints JSON { leafId: <the new entry's id> }.
// Exit codes: 0 ok, 1 usage, 2 pi refused.

import { resolve } from "node:path";
import { loadPi } from "./pi-loader.mjs";

const args = process.argv.slice(2);
if (args.length !== 3) {
	process.stderr.write("usage: node rewind.mjs <session.jsonl> <entryId> <text>\n");
	process.exit(1);
}
const [session, entryId, text] = args;
const pi = await loadPi();
try {
	const sm = pi.SessionManager.open(resolve(session));
	sm.branch(entryId);
	const leafId = sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
	process.stdout.write(`${JSON.stringify({ leafId })}\n`);
} catch (error) {
	process.stderr.write(`${error?.stack ?? error}\n`);
	process.exit(2);
}
