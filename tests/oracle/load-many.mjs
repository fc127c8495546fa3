#!/usr/bin/env node
// Load many session files with pi's own SessionManager, in one process (for the crash test, which
// cuts a batch at every byte).
//
//   node load-many.mjs <session.jsonl>...
//
// Each file is opened on a private copy. Prints a JSON array, one item per file:
//   { file, accepted, error?, leafId, entryCount, messages: count of projected messages }

import { resolve } from "node:path";
import { loadPi, privateCopy } from "./pi-loader.mjs";

const files = process.argv.slice(2);
if (files.length === 0) {
	process.stderr.write("usage: node load-many.mjs <session.jsonl>...\n");
	process.exit(1);
}
const pi = await loadPi();
const out = files.map((file) => {
	try {
		const { copy } = privateCopy(resolve(file));
		const sm = pi.SessionManager.open(copy);
		const projection = sm.buildSessionProjection();
		return {
			file,
			accepted: true,
			leafId: sm.getLeafId(),
			entryCount: sm.getEntries().length,
			messages: projection.messages.length,
		};
	} catch (error) {
		return { file, accepted: false, error: String(error?.message ?? error) };
	}
});
process.stdout.write(`${JSON.stringify(out)}\n`);
