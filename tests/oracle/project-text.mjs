#!/usr/bin/env node
// pi's projection of every branch tip as the exact text JSON.stringify writes, with pi's
// estimateTokens per projected entry: for lines whose JSON only JavaScript reads exactly (lone
// surrogates, numbers out of a double's range, deep nesting), which a JSON parser in the test
// could not hold.
//
//   node project-text.mjs <session.jsonl>
//
// Output (stdout, JSON): [{ leafId, text, perEntry: [{ id, tokens }] }] for every tip in file order,
// then pi's leaf on load; `text` is JSON.stringify({ leafId, entries: [{ id, type, messages }],
// messages }), the shape of `shake project --json`.

import { resolve } from "node:path";
import { loadPi, privateCopy } from "./pi-loader.mjs";

const pi = await loadPi();
const { copy } = privateCopy(resolve(process.argv[2] ?? ""));
const sm = pi.SessionManager.open(copy);
const entries = sm.getEntries();
const parents = new Set(entries.map((e) => e.parentId));
const leaves = entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
if (entries.length) leaves.push(entries.at(-1).id);
const out = leaves.map((leafId) => {
	const projection = pi.buildSessionProjection(entries, leafId);
	const projected = projection.entries.map(({ sourceEntry, messages }) => ({ id: sourceEntry.id, type: sourceEntry.type, messages }));
	return {
		leafId,
		text: JSON.stringify({ leafId, entries: projected, messages: projection.messages }),
		perEntry: projected.map(({ id, messages }) => ({ id, tokens: messages.reduce((sum, m) => sum + pi.estimateTokens(m), 0) })),
	};
});
process.stdout.write(`${JSON.stringify(out)}\n`);
