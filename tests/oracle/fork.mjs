#!/usr/bin/env node
// Fork a session with pi's own code, as /fork, /clone and `pi --fork` do.
//
//   node fork.mjs branched <session.jsonl> <leafId> <outDir>   SessionManager.createBranchedSession(leafId)
//   node fork.mjs from <session.jsonl> <outDir>                SessionManager.forkFrom(session, cwd, outDir)
//
// Works on a private copy of the source (pi may rewrite files it opens). Prints JSON
// { file: <path of the new session file> }. Exit codes: 0 ok, 1 usage, 2 pi refused.

import { copyFileSync, mkdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { loadPi, privateCopy } from "./pi-loader.mjs";

const [mode, ...rest] = process.argv.slice(2);
const usage = () => {
	process.stderr.write("usage: node fork.mjs branched <session> <leafId> <outDir> | from <session> <outDir>\n");
	process.exit(1);
};
if (mode !== "branched" && mode !== "from") usage();
const pi = await loadPi();
try {
	if (mode === "branched") {
		if (rest.length !== 3) usage();
		const [source, leafId, outDir] = rest;
		mkdirSync(outDir, { recursive: true });
		// Open a copy placed in outDir so the branched file lands there too.
		const { copy } = privateCopy(resolve(source));
		const local = join(resolve(outDir), `source-${basename(source)}`);
		copyFileSync(copy, local);
		const sm = pi.SessionManager.open(local, resolve(outDir));
		const file = sm.createBranchedSession(leafId);
		process.stdout.write(`${JSON.stringify({ file })}\n`);
	} else {
		if (rest.length !== 2) usage();
		const [source, outDir] = rest;
		mkdirSync(outDir, { recursive: true });
		const { copy } = privateCopy(resolve(source));
		const sm = pi.SessionManager.forkFrom(copy, process.cwd(), resolve(outDir));
		process.stdout.write(`${JSON.stringify({ file: sm.getSessionFile() })}\n`);
	}
} catch (error) {
	process.stderr.write(`${error?.stack ?? error}\n`);
	process.exit(2);
}
