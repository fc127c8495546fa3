#!/usr/bin/env node
// The extension's pure parts (argument parsing, completions, the footer label), loaded the way pi
// loads the extension: TypeScript through jiti. Exits non-zero on the first failed check.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createJiti } from "jiti";

const file = fileURLToPath(new URL("../../integrations/pi/shake.ts", import.meta.url));
const jiti = createJiti(import.meta.url, { moduleCache: false });
const { parseArgs, completions, meterLabel, staleLabel, withEditIds, MeterServer } = await jiti.import(file);

// /shake arguments -> the CLI flags.
assert.deepEqual(parseArgs(""), { verb: "fold", cliArgs: [] });
assert.deepEqual(parseArgs("  thinking  "), { verb: "fold", cliArgs: ["--scope", "thinking"] });
assert.deepEqual(parseArgs("images --profile aggressive"), {
	verb: "fold",
	cliArgs: ["--scope", "images", "--profile", "aggressive"],
});
assert.deepEqual(parseArgs("dry-run elide --profile=conservative"), {
	verb: "dry-run",
	cliArgs: ["--scope", "elide", "--profile=conservative"],
});
assert.deepEqual(parseArgs("undo"), { verb: "undo", cliArgs: [] });
assert.deepEqual(parseArgs("status"), { verb: "status", cliArgs: [] });
for (const bad of ["undo thinking", "status --profile x", "fold", "elide undo", "--profile"]) {
	assert.ok("error" in parseArgs(bad), `"${bad}" must be refused`);
}

// Completions: the value replaces the whole argument text.
const values = (prefix) => (completions(prefix) ?? []).map((i) => i.value);
assert.deepEqual(values(""), ["elide", "thinking", "images", "undo", "status", "dry-run"]);
assert.deepEqual(values("u"), ["undo"]);
assert.deepEqual(values("thinking "), ["thinking --profile"]);
assert.deepEqual(values("thinking --profile c"), ["thinking --profile conservative"]);
assert.deepEqual(values("dry-run --profile "), ["dry-run --profile default", "dry-run --profile conservative", "dry-run --profile aggressive"]);
assert.equal(completions("undo "), null);
assert.equal(completions("zz"), null);

// The footer: the meter's label; thresholds as `shake meter` (dim < 10k <= warning < 25k <= error).
assert.deepEqual(meterLabel(0), { text: "✂ <1k shakeable", color: "dim" });
assert.deepEqual(meterLabel(999), { text: "✂ <1k shakeable", color: "dim" });
assert.deepEqual(meterLabel(1500), { text: "✂ ~2k shakeable", color: "dim" });
assert.deepEqual(meterLabel(9_999), { text: "✂ ~10k shakeable", color: "dim" });
assert.deepEqual(meterLabel(10_000), { text: "✂ ~10k shakeable", color: "warning" });
assert.deepEqual(meterLabel(27_400), { text: "✂ ~27k shakeable", color: "error" });
assert.deepEqual(meterLabel(1_234_567), { text: "✂ ~1,235k shakeable", color: "error" });
// The meter's own severity wins over the thresholds.
assert.deepEqual(meterLabel(12_000, "low"), { text: "✂ ~12k shakeable", color: "dim" });
assert.deepEqual(meterLabel(500, "alert"), { text: "✂ <1k shakeable", color: "error" });
// The meter's verdict (issue 31) after the figure, from 1k on.
assert.deepEqual(meterLabel(27_400, "alert", "pays back in 2 turns"), { text: "✂ ~27k shakeable · pays back in 2 turns", color: "error" });
assert.deepEqual(meterLabel(500, "low", "not worth it yet"), { text: "✂ <1k shakeable", color: "dim" });

// The log entry names the ids pi gave the edits, per target (several regions can share a target).
const plan = { v: 1, op: "fold", targets: [{ id: "t1", edit: "" }, { id: "t2", edit: "" }, { id: "t1", edit: "" }] };
assert.deepEqual(withEditIds(plan, new Map([["t1", "e1"], ["t2", "e2"]])), {
	v: 1,
	op: "fold",
	targets: [{ id: "t1", edit: "e1" }, { id: "t2", edit: "e2" }, { id: "t1", edit: "e1" }],
});
assert.equal(plan.targets[0].edit, "", "the plan itself is not changed");
assert.equal(withEditIds(null, new Map()), null);

// A figure no reading refreshed is shown stale.
assert.deepEqual(staleLabel(27_838, "alert"), { text: "✂ ~28k shakeable (stale)", color: "dim" });

// The meter child: answers in order; one that hangs is killed at the timeout, and a dead one
// answers undefined at once (the caller then runs single meters).
const dir = mkdtempSync(join(tmpdir(), "shake-unit-"));
const bin = join(dir, "fake-shake");
writeFileSync(bin, '#!/bin/sh\nwhile IFS= read -r l; do case "$l" in hang*) sleep 5;; *) echo "{\\"rev\\":\\"$l\\"}";; esac; done\n');
chmodSync(bin, 0o755);
const server = new MeterServer(bin, dir);
const [a, b] = await Promise.all([server.ask("one", 5000), server.ask("two", 5000)]);
assert.deepEqual([JSON.parse(a), JSON.parse(b)], [{ rev: "one" }, { rev: "two" }]);
const t0 = Date.now();
assert.equal(await server.ask("hang", 300), undefined);
assert.ok(Date.now() - t0 < 3000 && server.dead, "killed at the timeout");
assert.equal(await server.ask("three", 5000), undefined);
assert.equal(await new MeterServer(join(dir, "missing"), dir).ask("x", 5000), undefined, "a binary that is not there");
rmSync(dir, { recursive: true, force: true });

process.stdout.write("shake.ts unit checks: ok\n");
