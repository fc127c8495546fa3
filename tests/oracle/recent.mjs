#!/usr/bin/env node
// The session `pi --continue` opens, with pi's own code: `SessionManager.continueRecent(cwd)`.
//
//   node recent.mjs <agent dir> <cwd>   -> {"session": "<path>" | null}
//
// The agent dir is passed as PI_CODING_AGENT_DIR (pi reads it when it looks); `null` when pi
// would start a new session (no file it accepts). Nothing is written.
import { existsSync } from "node:fs";
import { loadPi } from "./pi-loader.mjs";

const [agentDir, cwd] = process.argv.slice(2);
if (!agentDir || !cwd) {
	process.stderr.write("usage: node recent.mjs <agent dir> <cwd>\n");
	process.exit(1);
}
process.env.PI_CODING_AGENT_DIR = agentDir;
const pi = await loadPi();
const file = pi.SessionManager.continueRecent(cwd).getSessionFile();
process.stdout.write(`${JSON.stringify({ session: file && existsSync(file) ? file : null })}\n`);
