#!/usr/bin/env node
// What pi makes of many session files after shake wrote to them, in one node process.
//
//   node fold-check.mjs <session.jsonl>...
//
// Prints one JSON array, one item per file, in argument order:
//   { file, accepted, error?, piChangedFile, leafId,
//     entries: [{id, type, messages}]     buildSessionProjection() at pi's leaf on load,
//     notRoundTripping: [line numbers]    lines JSON.stringify(JSON.parse(line)) does not reproduce,
//     edits: [{id, ok, error?, normalized?}] every context_edit on the active path, replayed
//            through pi's own appendContextEdit() at its position (normalized: what pi would
//            have written instead, when it differs) }
// Works on private copies (pi may rewrite what it opens).

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describeRewrite, linesNotRoundTripping, loadPi, privateCopy } from "./pi-loader.mjs";

const files = process.argv.slice(2);
if (files.length === 0) {
	process.stderr.write("usage: node fold-check.mjs <session.jsonl>...\n");
	process.exit(1);
}
process.setMaxListeners(0);
const pi = await loadPi();
process.stdout.write(`${JSON.stringify(files.map((f) => check(resolve(f))))}\n`);

function check(file) {
	const { copy, originalBytes } = privateCopy(file);
	const out = { file, accepted: false };
	out.notRoundTripping = linesNotRoundTripping(originalBytes, { unparseable: false });
	let sm;
	try {
		sm = pi.SessionManager.open(copy);
	} catch (error) {
		out.error = String(error?.message ?? error);
		return out;
	}
	out.accepted = true;
	out.piChangedFile = describeRewrite(originalBytes, copy);
	out.leafId = sm.getLeafId();
	out.entries = sm.buildSessionProjection().entries.map(({ sourceEntry, messages }) => ({ id: sourceEntry.id, type: sourceEntry.type, messages }));
	const header = sm.getHeader();
	const entries = sm.getEntries();
	out.edits = sm
		.getBranch()
		.filter((e) => e.type === "context_edit")
		.map((edit) => replay(header, entries, edit));
	return out;
}

function replay(header, entries, edit) {
	const snapshot = [structuredClone(header), ...entries.map((e) => structuredClone(e))];
	const mem = pi.SessionManager.inMemory(header.cwd || process.cwd(), undefined, snapshot);
	try {
		if (edit.parentId === null || edit.parentId === undefined) mem.resetLeaf();
		else mem.branch(edit.parentId);
		const written = mem.getEntry(mem.appendContextEdit(edit.targetId, edit.replacement));
		const same = JSON.stringify(written.replacement) === JSON.stringify(edit.replacement);
		return same ? { id: edit.id, ok: true } : { id: edit.id, ok: true, normalized: written.replacement };
	} catch (error) {
		return { id: edit.id, ok: false, error: String(error?.message ?? error) };
	}
}
