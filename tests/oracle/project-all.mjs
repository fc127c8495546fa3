#!/usr/bin/env node
// Project EVERY branch tip of many session files with pi's own code, in one node process.
//
//   node project-all.mjs [--roundtrip] [--no-flat] [--every-entry] <session.jsonl>...
//
// Prints one JSON line per file (NDJSON), in argument order:
//   { file, error?, piChangedFile, lastEntryId, tips: [id...], leaves: [{ leafId, pathIds,
//     contextEntryIds, entries: [{id, type, messages}], messages }], notRoundTripping? }
// `tips` are the entries without children in the tree pi's getTree() builds, in file order; each
// is projected with buildSessionProjection (pi's leaf on load is projected too, last).
// --every-entry projects at every entry instead (as pi does for an in-memory leaf after /tree).
// --no-flat leaves out each leaf's `messages` (the concatenation of its entries' messages), which
// halves the output for callers that check entries only.
// --roundtrip also lists lines (1-based) for which JSON.stringify(JSON.parse(line)) !== line,
// i.e. lines pi itself would not have written byte for byte.
// Works on private copies (pi may rewrite what it opens). Exit code 0 unless usage is wrong.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describeRewrite, linesNotRoundTripping, loadPi, privateCopy } from "./pi-loader.mjs";

const args = process.argv.slice(2);
const roundTrip = args.includes("--roundtrip");
const flat = !args.includes("--no-flat");
const everyEntry = args.includes("--every-entry");
const files = args.filter((a) => !a.startsWith("--"));
if (files.length === 0) {
	process.stderr.write("usage: node project-all.mjs [--roundtrip] [--no-flat] [--every-entry] <session.jsonl>...\n");
	process.exit(1);
}
// privateCopy() registers one exit listener per file.
process.setMaxListeners(0);
const pi = await loadPi();
for (const file of files) process.stdout.write(`${JSON.stringify(projectAll(resolve(file)))}\n`);

function projectAll(file) {
	const { copy, originalBytes } = privateCopy(file);
	const out = { file };
	if (roundTrip) out.notRoundTripping = linesNotRoundTripping(originalBytes, { unparseable: true });
	let sm;
	try {
		sm = pi.SessionManager.open(copy);
	} catch (error) {
		out.error = String(error?.message ?? error);
		return out;
	}
	out.piChangedFile = describeRewrite(originalBytes, copy);
	const entries = sm.getEntries();
	out.lastEntryId = entries.at(-1)?.id ?? null;
	const childCount = new Map();
	const walk = [...sm.getTree()];
	while (walk.length) {
		const node = walk.pop();
		childCount.set(node.entry, node.children.length);
		walk.push(...node.children);
	}
	out.tips = entries.filter((e) => childCount.get(e) === 0).map((e) => e.id);
	const leaves = everyEntry ? [...new Set(entries.map((e) => e.id))] : [...out.tips];
	if (!everyEntry && out.lastEntryId !== null) leaves.push(out.lastEntryId);
	out.leaves = leaves.map((leafId) => {
		const projection = pi.buildSessionProjection(entries, leafId);
		return {
			leafId,
			pathIds: sm.getBranch(leafId).map((e) => e.id),
			contextEntryIds: projection.entries.map((e) => e.sourceEntry.id),
			entries: projection.entries.map(({ sourceEntry, messages }) => ({ id: sourceEntry.id, type: sourceEntry.type, messages })),
			...(flat ? { messages: projection.messages } : {}),
		};
	});
	return out;
}
