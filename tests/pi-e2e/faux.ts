// A faux model provider for the end-to-end test: loaded into pi 1.6.0 with `-e faux.ts`, it answers
// every request locally and appends what the model was sent to $SHAKE_E2E_RECORD (one JSON line
// per request: {"n", "messages"}), so the test can see exactly what each request carried.
//
// Script: a user message `READ <path>` makes the model call pi's `read` tool on <path>; a
// `BASH <command>` one calls `bash`; anything else (including a tool result) gets the text `ok <n>`.
import { appendFileSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
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
		const bash = /^BASH (.+)$/s.exec(text);
		if (bash) return fauxAssistantMessage(fauxToolCall("bash", { command: bash[1] }), { stopReason: "toolUse" });
		return fauxAssistantMessage(fauxText(`ok ${n}`));
	};
	// The faux provider consumes one step per request; queue more than any test sends.
	faux.setResponses(Array.from({ length: 200 }, () => respond));
	pi.registerProvider(faux.provider);
}
