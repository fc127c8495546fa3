#!/usr/bin/env node
// Fork a session with pi's own code, as /fork, /clone and `pi --fork` do.
//
//   node fork.mjs branched <session.jsonl> <leafId> <outDir>   SessionManager.createBranchedSession(leafId)
//   node fork.mjs from <session.jsonl> <outDir>                SessionManager.forkFrom(session, cwd, outDir)
//
// Works on a private copy of the source (pi may rewrite files it opens). Prints JSON
// { file: <path of the new session file>, lines: [the new file's lines, parsed] }.
// Exit codes: 0 ok, 1 usage, 2 pi refused.

import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
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
		report(sm.createBranchedSession(leafId));
	} else {
		if (rest.length !== 2) usage();
		const [source, outDir] = rest;
		mkdirSync(outDir, { recursive: true });
		const { copy } = privateCopy(resolve(source));
		const sm = pi.SessionManager.forkFrom(copy, process.cwd(), resolve(outDir));
		report(sm.getSessionFile());
	}
} catch (error) {
	process.stderr.write(`${error?.stack ?? error}\n`);
	process.exit(2);
}

function report(file) {
	const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
	process.stdout.write(`${JSON.stringify({ file, lines })}\n`);
}
