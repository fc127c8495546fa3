// The current branch of a session file as OMP's `/shake` takes it: every parseable entry line
// (title slot and header left out), then the last entry back to the root through `parentId`.
// Also the bundled catalog model a `provider/id` names. Shared by the oracle scripts.
import { getBundledModel } from "@oh-my-pi/pi-catalog";
import { readFileSync } from "node:fs";

export function readBranch(file: string): any[] {
	const entries: any[] = [];
	for (const line of readFileSync(file, "utf8").split("\n")) {
		if (!line.trim()) continue;
		try {
			const e = JSON.parse(line);
			if (e && typeof e === "object" && e.type !== "session" && e.type !== "title") entries.push(e);
		} catch {}
	}
	const byId = new Map(entries.map(e => [e.id, e]));
	const branch: any[] = [];
	const seen = new Set();
	for (let e = entries.at(-1); e && !seen.has(e); e = byId.get(e.parentId)) {
		seen.add(e);
		branch.unshift(e);
	}
	return branch;
}

export function bundledModel(name: string | null | undefined): any {
	if (!name) return null;
	const slash = name.indexOf("/");
	return getBundledModel(name.slice(0, slash) as any, name.slice(slash + 1)) ?? null;
}
