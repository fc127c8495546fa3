// Loads an OMP extension through oh-my-pi's own extension loader (@oh-my-pi/pi-coding-agent
// 18.2.9 `loadExtensions`) and drives its handlers with a context whose session is FILE:
// `bun extension-check.ts EXT FILE [--model provider/id] [--then NEXT]`. session_start first; with
// --then, NEXT is renamed over FILE (as OMP's rewrite does) and turn_end follows. Prints
// {errors, events, statuses: [[key, text]]}; the theme renders a colour as `[color]text`.
import { loadExtensions } from "@oh-my-pi/pi-coding-agent/extensibility/extensions/loader";
import { renameSync } from "node:fs";
import { bundledModel, readBranch } from "./branch";

const args = process.argv.slice(2);
const [ext, file] = args;
const opt = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const modelArg = opt("--model");
const next = opt("--then");
const model = modelArg ? bundledModel(modelArg) : undefined;

const branch = () => readBranch(file);

const statuses: [string, string | undefined][] = [];
const ctx = {
	hasUI: true,
	mode: "tui",
	cwd: process.cwd(),
	model,
	ui: { setStatus: (key: string, text: string | undefined) => statuses.push([key, text]), theme: { fg: (c: string, t: string) => `[${c}]${t}` } },
	sessionManager: { getSessionFile: () => file, getBranch: branch },
};

const loaded = await loadExtensions([ext], process.cwd());
const extension = loaded.extensions[0];
const emit = async (event: string) => {
	for (const handler of extension?.handlers.get(event) ?? []) await handler({ type: event }, ctx);
};
await emit("session_start");
if (next) {
	renameSync(next, file);
	await emit("turn_end");
}
await emit("session_shutdown");
console.log(JSON.stringify({ errors: loaded.errors, events: [...(extension?.handlers.keys() ?? [])], statuses }));
