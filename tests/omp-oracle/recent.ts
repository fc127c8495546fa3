// The session OMP 18.2.11's `--continue` opens from a folder (no terminal breadcrumb):
// `findMostRecentNonEmptySession`, which `SessionManager.continueRecent` falls back to.
//
//   bun recent.ts <session folder>   -> {"session": "<path>" | null}
import { findMostRecentNonEmptySession } from "@oh-my-pi/pi-coding-agent/session/session-listing";

const dir = process.argv[2];
if (!dir) {
	process.stderr.write("usage: bun recent.ts <session folder>\n");
	process.exit(1);
}
process.stdout.write(`${JSON.stringify({ session: await findMostRecentNonEmptySession(dir) })}\n`);
