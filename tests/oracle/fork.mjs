#!/usr/bin/env node
// Fork a session the way pi does, with pi's own code, and print the new file's path and lines.
//
//   node fork.mjs branch <session.jsonl> [leafId]   SessionManager.createBranchedSession (/fork, /clone)
//   node fork.mjs from <session.jsonl>              SessionManager.forkFrom (pi --fork)
//
// Works on a private copy; the fork is written to a temporary folder. Output (JSON):
//   { path, lines: [ ...parsed JSON lines of the new file ] }
// Exit codes: 0 ok, 1 usage, 2 pi refused.

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadPi, privateCopy } from "./pi-loader.mjs";

const [mode, file, leafId] = process.argv.slice(2);
if (!["branch", "from"].includes(mode) || !file) {
	process.stderr.write("usage: node fork.mjs branch|from <session.jsonl> [leafId]\n");
	process.exit(1);
}
const pi = await loadPi();
const { copy } = privateCopy(resolve(file));
const outDir = mkdtempSync(join(tmpdir(), "pi-fork-"));
let path;
try {
	if (mode === "branch") {
		const sm = pi.SessionManager.open(copy, outDir);
		path = sm.createBranchedSession(leafId ?? sm.getLeafId());
	} else {
		const sm = pi.SessionManager.forkFrom(copy, "/fork-target", outDir);
		path = sm.getSessionFile();
	}
} catch (error) {
	process.stdout.write(`${JSON.stringify({ error: String(error?.message ?? error) })}\n`);
	process.exit(2);
}
const text = readFileSync(path, "utf8");
const lines = text.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
process.stdout.write(`${JSON.stringify({ path, lines })}\n`);
