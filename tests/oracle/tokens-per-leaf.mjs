#!/usr/bin/env node
// pi's estimateTokens per projected entry, for every entry of a session taken as the leaf, in one
// process (project.mjs per leaf costs a Node start and a pi load each).
//
//   node tokens-per-leaf.mjs <session.jsonl>
//
// Output (stdout, JSON): [{ leafId, perEntry: [{ id, tokens }] }] in file order.

import { resolve } from "node:path";
import { loadPi, privateCopy } from "./pi-loader.mjs";

const sessionPath = resolve(process.argv[2] ?? "");
const pi = await loadPi();
const { copy } = privateCopy(sessionPath);
const sm = pi.SessionManager.open(copy);
const entries = sm.getEntries();
const out = entries.map(({ id }) => ({
	leafId: id,
	perEntry: pi.buildSessionProjection(entries, id).entries.map(({ sourceEntry, messages }) => ({
		id: sourceEntry.id,
		tokens: messages.reduce((sum, m) => sum + pi.estimateTokens(m), 0),
	})),
}));
process.stdout.write(`${JSON.stringify(out)}\n`);
