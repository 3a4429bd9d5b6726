// Exits 0 when the tsc build in dist/ is up to date: every TypeScript file
// tsconfig.json includes has its dist/ .js, and none of them (nor
// tsconfig.json) is newer than the oldest of those outputs; else exits 1.
// The conformance testee's build runs tsc only when this fails, so a
// build that has nothing to do never rewrites dist/ under a process that
// is running it (the chaos programs, another testee).
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dirs = ["src", "test", "chaos"];

function* sources(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) yield p;
  }
}

let newestInput = statSync(join(root, "tsconfig.json")).mtimeMs;
let oldestOutput = Infinity;
for (const d of dirs) {
  for (const src of sources(join(root, d))) {
    newestInput = Math.max(newestInput, statSync(src).mtimeMs);
    const out = join(root, "dist", relative(root, src).replace(/\.ts$/, ".js"));
    let m;
    try {
      m = statSync(out).mtimeMs;
    } catch {
      process.exit(1);
    }
    oldestOutput = Math.min(oldestOutput, m);
  }
}
process.exit(newestInput <= oldestOutput ? 0 : 1);
