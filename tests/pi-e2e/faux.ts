// A faux model provider for the end-to-end test: loaded into pi 1.6.0 with `-e faux.ts`, it answers
// every request locally and appends what the model was sent to $SHAKE_E2E_RECORD (one JSON line
// per request: {"n", "messages"}), so the test can see exactly what each request carried.
//
// Script: a user message `READ <path>` makes the model call pi's `read` tool on <path>; a
// `STEER <text>` one calls the `steer` tool below; anything else (including a tool result) gets the
// text `ok <n>`.
//
// `steer` makes a slash command arrive while pi is busy, deterministically: inside a running tool it
// sends <text> as a steering message (pi runs extension commands at once, even mid-run) and holds the
// tool open until pi's stderr shows a line containing $SHAKE_E2E_STEER_UNTIL (what shake.ts prints in
// print mode once it has queued its plan), so the plan is queued before this turn ends.
//
// $SHAKE_E2E_COMPACT_SEND makes a slash command arrive while pi compacts at the end of a run (pi
// 1.6.0's threshold compaction runs in `_handlePostAgentRun`, after the run's last `turn_end` and
// before `agent_settled`): the first `session_before_compact` sends it as a steering message and
// lets the compaction go on only once pi's stderr shows $SHAKE_E2E_STEER_UNTIL, so the command has
// planned and queued against the file as it was before the compaction.
//
// `/e2e-append-when <path>` appends a `custom` entry (`customType: "e2e"`) once <path> exists,
// moving pi's leaf while whatever comes next is still at work (it polls every 20 ms, for a minute).
//
// `/e2e-tree <prefix>` does what `/tree` does when the user picks the user message starting with
// <prefix>: pi's leaf moves (in memory only) to that message's parent.
import { appendFileSync, existsSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";

const RECORD = process.env.SHAKE_E2E_RECORD;

type Msg = { role: string; content: unknown };

function lastUserText(messages: Msg[]): string | undefined {
	const last = messages.at(-1);
	if (!last || last.role !== "user") return undefined;
	if (typeof last.content === "string") return last.content;
	const blocks = last.content as { type: string; text?: string }[];
	return blocks.filter((b) => b.type === "text").map((b) => b.text).join("");
}

export default function (pi: ExtensionAPI) {
	const faux = fauxProvider({ models: [{ id: "faux-1", contextWindow: 200_000 }] });
	let n = 0;
	const respond = (context: { messages: Msg[] }) => {
		n++;
		if (RECORD) appendFileSync(RECORD, `${JSON.stringify({ n, messages: context.messages })}\n`);
		const text = lastUserText(context.messages) ?? "";
		const read = /^READ (\S+)/.exec(text);
		if (read) return fauxAssistantMessage(fauxToolCall("read", { path: read[1] }), { stopReason: "toolUse" });
		const steer = /^STEER (.+)$/s.exec(text);
		if (steer) return fauxAssistantMessage(fauxToolCall("steer", { text: steer[1] }), { stopReason: "toolUse" });
		return fauxAssistantMessage(fauxText(`ok ${n}`));
	};
	// The faux provider consumes one step per request; queue more than any test sends.
	faux.setResponses(Array.from({ length: 200 }, () => respond));
	pi.registerProvider(faux.provider);

	// Everything written to stderr so far, and who waits for what.
	let stderr = "";
	const waiters: { until: string; from: number; resolve: () => void }[] = [];
	const write = process.stderr.write.bind(process.stderr);
	process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
		stderr += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
		for (const w of waiters.splice(0)) {
			if (stderr.indexOf(w.until, w.from) >= 0) w.resolve();
			else waiters.push(w);
		}
		return write(chunk, ...rest);
	}) as typeof process.stderr.write;

	/** Sends `text` as a steering message (pi runs an extension command at once, even mid-run) and
	 * resolves to what pi wrote to stderr once a line containing $SHAKE_E2E_STEER_UNTIL arrived,
	 * or undefined after a minute: a missing line must fail the test, not hang it. */
	async function steer(text: string): Promise<string | undefined> {
		const until = process.env.SHAKE_E2E_STEER_UNTIL ?? "";
		const seen = stderr.length;
		const arrived = new Promise<void>((resolve) => {
			waiters.push({ until, from: seen, resolve });
		});
		await pi.sendUserMessage(text, { deliverAs: "steer", expandPromptTemplates: true });
		const gaveUp = await Promise.race([arrived.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 60_000).unref())]);
		return gaveUp ? undefined : stderr.slice(seen).trim();
	}

	let compactSend = process.env.SHAKE_E2E_COMPACT_SEND;
	pi.on("session_before_compact", async () => {
		const text = compactSend;
		compactSend = undefined;
		if (text && (await steer(text)) === undefined) throw new Error(`e2e: gave up waiting for "${process.env.SHAKE_E2E_STEER_UNTIL}"`);
	});

	pi.registerCommand("e2e-append-when", {
		description: "Append a custom entry (moving pi's leaf) once the argument's path exists (test only)",
		handler: async (path) => {
			const started = Date.now();
			const poll = setInterval(() => {
				if (existsSync(path.trim())) pi.appendEntry("e2e", { at: Date.now() });
				else if (Date.now() - started < 60_000) return;
				clearInterval(poll);
			}, 20);
		},
	});

	pi.registerCommand("e2e-tree", {
		description: "Move pi's leaf to before the user message starting with the argument (test only)",
		handler: async (prefix, ctx) => {
			const target = ctx.sessionManager
				.getEntries()
				.find((e) => e.type === "message" && e.message.role === "user" && lastUserText([e.message as Msg])?.startsWith(prefix));
			if (!target) throw new Error(`e2e-tree: no user message starts with ${prefix}`);
			await ctx.navigateTree(target.id, { summarize: false });
		},
	});

	pi.registerTool({
		name: "steer",
		label: "Steer",
		description: "Send a steering message while this tool runs (test only)",
		parameters: Type.Object({ text: Type.String() }),
		async execute(_id, params) {
			const said = await steer(params.text);
			const text = said === undefined ? `gave up waiting for "${process.env.SHAKE_E2E_STEER_UNTIL ?? ""}"` : `steered: ${said}`;
			return { content: [{ type: "text", text }], details: {} };
		},
	});
}
