// @ts-check
// Builds the CommonJS half of the package, dist/cjs, from the sources and
// the ESM build's declarations (run tsc -p tsconfig.json first):
//
//   node tools/build-cjs.mjs [DIR]
//
// Each source under src/ (but the conformance testee) is transpiled alone
// to CommonJS with the compiler's transpileModule (the ESM build already
// type-checked it; verbatimModuleSyntax keeps every file transpilable
// alone), its .d.ts copied from dist/src, and dist/cjs/package.json says
// "type": "commonjs", so that node and TypeScript read the folder as
// CommonJS. package.json's exports send require() here and import to
// dist/src.

import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const dir = resolve(process.argv[2] ?? ".");
const src = join(dir, "src");
const esm = join(dir, "dist", "src");
const out = join(dir, "dist", "cjs");

/** @param {string} d @returns {string[]} */
function sources(d) {
  /** @type {string[]} */
  const files = [];
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) {
      if (relative(src, p) !== "conformance") {
        files.push(...sources(p));
      }
    } else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) {
      files.push(p);
    }
  }
  return files;
}

rmSync(out, { recursive: true, force: true });
let n = 0;
for (const file of sources(src)) {
  const rel = relative(src, file).replace(/\.ts$/, "");
  const dts = join(esm, rel + ".d.ts");
  if (!existsSync(dts)) {
    console.error(
      "build-cjs: " + dts + " is missing: run tsc -p tsconfig.json first",
    );
    process.exit(1);
  }
  const res = ts.transpileModule(readFileSync(file, "utf8"), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      esModuleInterop: true,
      verbatimModuleSyntax: false,
    },
  });
  if (res.diagnostics && res.diagnostics.length > 0) {
    for (const d of res.diagnostics) {
      console.error(
        "build-cjs: " +
          file +
          ": " +
          ts.flattenDiagnosticMessageText(d.messageText, "\n"),
      );
    }
    process.exit(1);
  }
  const js = join(out, rel + ".js");
  mkdirSync(dirname(js), { recursive: true });
  writeFileSync(js, res.outputText);
  // The declarations as the ESM build wrote them, without the pointer to
  // its declaration map (the map belongs to dist/src).
  writeFileSync(
    join(out, rel + ".d.ts"),
    readFileSync(dts, "utf8").replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n"),
  );
  n++;
}
writeFileSync(join(out, "package.json"), '{ "type": "commonjs" }\n');
console.log("build-cjs: " + n + " modules in " + relative(dir, out));
