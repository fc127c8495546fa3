// Makes a smaller copy of a real Claude Code transcript that Claude Code resumes the same way:
//
//   node excerpt.mjs IN OUT [--lines A-B[,C-D...]] [--cut N] [--result-cut M] [--lean]
//
// `--lines` keeps only those lines (1-based, inclusive; default all). `--cut N` shortens every
// string of a row longer than N characters (default 600) to its first N/2 characters and a note
// of how many were cut: tool outputs, file contents and long texts, which no rule of the loader
// or of the request looks into. `--result-cut M` cuts the strings of a `tool_result`'s content at
// M instead (past the size shake folds, so that a fold has results to fold). Nothing else changes: every row keeps its keys, uuids, parents,
// timestamps and blocks, and lines that are not JSON are kept as they are. `--lean` also drops
// `message.usage` (the API's token counts) and cuts the strings of what is never sent (a tool
// result's `toolUseResult`, a file-history `snapshot`, a progress row's `data`) to 40 characters. How each fixture of
// tests/fixtures/claude-real/ was made is in its README.
import { readFileSync, writeFileSync } from "node:fs";

const [input, output, ...rest] = process.argv.slice(2);
if (!input || !output) {
	process.stderr.write("usage: node excerpt.mjs IN OUT [--lines A-B[,C-D...]] [--cut N]\n");
	process.exit(1);
}
const opt = (name) => {
	const i = rest.indexOf(`--${name}`);
	return i >= 0 ? rest[i + 1] : undefined;
};
const ranges = (opt("lines") ?? "1-").split(",").map((r) => {
	const [a, b] = r.split("-");
	return [Number(a), b === "" || b === undefined ? Infinity : Number(b)];
});
const cut = Number(opt("cut") ?? 600);
const resultCut = Number(opt("result-cut") ?? cut);
const lean = rest.includes("--lean");
const NEVER_SENT = new Set(["toolUseResult", "snapshot", "data"]);

// Cuts on code points, so that no surrogate pair is split.
function shorten(s, max) {
	const points = Array.from(s);
	if (points.length <= max) return s;
	const keep = Math.floor(max / 2);
	return `${points.slice(0, keep).join("")}[… ${points.length - keep} characters cut]`;
}

function walk(v, key, max) {
	// A signature is checked by the API, never by Claude Code: it is kept whole all the same.
	if (typeof v === "string") return key === "signature" ? v : shorten(v, max);
	if (Array.isArray(v)) return v.map((x) => walk(x, key, max));
	if (v && typeof v === "object") {
		const entries = Object.entries(v).filter(([k]) => !(lean && k === "usage" && key === "message"));
		const inner = (k) => (lean && NEVER_SENT.has(k) ? 40 : v.type === "tool_result" && k === "content" ? resultCut : max);
		return Object.fromEntries(entries.map(([k, x]) => [k, walk(x, k, inner(k))]));
	}
	return v;
}

const lines = readFileSync(input, "utf8").split("\n");
const last = lines.at(-1) === "" ? lines.length - 1 : lines.length;
const out = [];
for (let n = 1; n <= last; n++) {
	if (!ranges.some(([a, b]) => n >= a && n <= b)) continue;
	const line = lines[n - 1];
	let row;
	try {
		row = JSON.parse(line);
	} catch {
		out.push(line);
		continue;
	}
	out.push(JSON.stringify(walk(row, "", cut)));
}
writeFileSync(output, out.join("\n") + "\n");
