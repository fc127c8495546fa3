// Every model in OMP 18.2.11's bundled catalog with the tokenizer family the catalog gives it:
// `bun families.ts` prints [[provider, id, tokenizer|null], ...].
import { getBundledModels, getBundledProviders } from "@oh-my-pi/pi-catalog";

const out: [string, string, string | null][] = [];
for (const provider of getBundledProviders()) {
	for (const model of getBundledModels(provider as any) as any[]) out.push([provider, model.id, model.tokenizer ?? null]);
}
console.log(JSON.stringify(out));
