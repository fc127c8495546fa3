// OMP 18.2.11's native Claude counts (pi-natives' port of ctok, content without the message
// frame): `bun claude.ts TEXTS.json` prints, for each text of the JSON array,
// [ClaudeV3, ClaudeV47, ClaudeV5, ClaudeV5Sonnet] as `countTokens(text, encoding)` gives them.
import * as natives from "@oh-my-pi/pi-natives";
import { readFileSync } from "node:fs";

const texts: string[] = JSON.parse(readFileSync(process.argv[2], "utf8"));
const encodings = [natives.Encoding.ClaudeV3, natives.Encoding.ClaudeV47, natives.Encoding.ClaudeV5, natives.Encoding.ClaudeV5Sonnet];
console.log(JSON.stringify(texts.map(t => encodings.map(e => natives.countTokens(t, e)))));
