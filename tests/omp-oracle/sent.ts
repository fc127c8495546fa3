// What OMP 18.2.11 sends the model for each tool result on a session file's current branch, by
// its own `convertMessageToLlm` (a pruned result's text joined as `getPrunedToolResultContent`
// does): `bun sent.ts FILE` prints [{entryId, content}] in branch order.
import { convertMessageToLlm } from "@oh-my-pi/pi-agent-core";
import { readBranch } from "./branch";

const out = readBranch(process.argv[2])
	.filter(e => e.type === "message" && e.message?.role === "toolResult")
	.map(e => ({ entryId: e.id, content: convertMessageToLlm(e.message)?.content }));
console.log(JSON.stringify(out));
