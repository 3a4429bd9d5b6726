// @ts-check
// Prints the public API of the package in this directory, one feature per
// line, for emqgen's governance (govern/apirecord, TSAPI): the TypeScript
// counterpart of the Go API record.
//
//   node tools/api.mjs [DIR]
//
// It reads the .d.ts declarations tsc built (dist/) when they are up to
// date with every input (their mtimes are newer than every source's, the
// tsconfig.json's, the package.json's and the compiler's); otherwise (or
// with EMQ_API_COMPILE=1) it compiles the package's sources with its
// tsconfig.json, emitting only the .d.ts declarations, in memory (nothing
// is written). Either way, it then reads every
// entry point package.json exports ("." and the subpaths "./wire" and
// "./gen": dist/src/index.d.ts, dist/src/gen/index.d.ts) from those
// declarations with the compiler's type checker; a subpath's lines carry
// its module ("@echomq/sdk/wire"), so that the record lists each entry
// point as a section of its own. Each exported name gives its lines:
//
//   <module> function <name>: <signature>
//   <module> const <name>: <type>
//   <module> type <name>: = <type>
//   <module> class <name>: class [extends <base>] [implements <i>, ...]
//   <module> class <name> constructor: <signature>
//   <module> class <name> [static] method <m>: <signature>
//   <module> class <name> [static] property <p>[?]: [readonly ]<type>
//   <module> interface <name>: interface [extends <i>, ...]
//   <module> interface <name> method|property|call|index <m>: ...
//   <module> enum <name> member <m>: <value>
//
//   <module> type <name> member <literal>: literal
//
// Types are the text of the emitted declarations, whitespace collapsed, so
// that a type reads as declared (Payload, not what it expands to). A
// signature is written without parameter names: (string, Payload?) =>
// Promise<boolean>, so that renaming a parameter changes nothing. A const of
// a literal type is recorded with the literal's base type (a version string
// is a string) and a tuple of literals as a readonly array of their base
// type, so that a new value is no change of the API; a type alias of a union
// of literals gives one member line per literal, so that a literal added is
// an addition and one removed a removal. Private members, #private
// fields and declarations tagged @internal in their doc comment are not
// part of the API (tsconfig.json's stripInternal leaves them out of the
// declarations already; a declaration read without it is skipped here). Everything before the first ": " is the
// feature's key: a line gone whose key remains has changed its type or
// signature. Lines are printed sorted and unique. Exit 1 with a message
// when the sources do not compile.

import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";

const dir = resolve(process.argv[2] ?? ".");
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));

const parsed = ts.getParsedCommandLineOfConfigFile(
  join(dir, "tsconfig.json"),
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic(d) {
      fail(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  },
);
if (!parsed) {
  fail("cannot read " + join(dir, "tsconfig.json"));
}
const options = {
  ...parsed.options,
  declaration: true,
  emitDeclarationOnly: true,
  declarationMap: false,
  sourceMap: false,
  noEmit: false,
};

/** @param {string} msg */
function fail(msg) {
  process.stderr.write("tools/api.mjs: " + msg + "\n");
  process.exit(1);
}

/** @type {{module: string, dts: string}[]} */
const entries = [];
for (const [key, v] of Object.entries(pkg.exports ?? {})) {
  const types = typeof v === "string" ? v : v.types;
  if (typeof types !== "string") {
    continue;
  }
  const module = key === "." ? pkg.name : pkg.name + key.slice(1);
  entries.push({ module, dts: resolve(dir, types) });
}
if (entries.length === 0) {
  fail("package.json exports no types");
}

// 1. The declarations: those tsc built into its output directory when
// they are up to date (built()), else those tsc emits, in memory.
/** @type {Map<string, ts.SourceFile>} */
const sourceFiles = new Map();
/** @type {Map<string, string>} */
const emitted = built() ?? compile();
for (const e of entries) {
  if (!emitted.has(e.dts)) {
    fail("tsc emitted no " + e.dts + " (package.json exports it)");
  }
}

/**
 * The declarations of a build that is up to date, read from disk, or
 * undefined: every source's .d.ts exists and the oldest of them is newer
 * than the newest input (every source and its directory, tsconfig.json,
 * package.json and the compiler's package.json), so no input changed
 * since tsc wrote them.
 * Reading them skips the compile that emitting them takes (seconds: the
 * type checker resolves node-redis's types).
 * @returns {Map<string, string> | undefined}
 */
function built() {
  if (process.env.EMQ_API_COMPILE === "1") {
    return undefined;
  }
  // A source's directory too: its mtime changes when a file is added to it
  // or removed from it.
  const inputs = [
    ...parsed.fileNames,
    ...new Set(parsed.fileNames.map((f) => dirname(f))),
    join(dir, "tsconfig.json"),
    join(dir, "package.json"),
    join(dir, "node_modules", "typescript", "package.json"),
  ];
  let newest = 0n;
  for (const f of inputs) {
    const st = statSync(f, { bigint: true, throwIfNoEntry: false });
    if (!st) {
      return undefined;
    }
    newest = st.mtimeNs > newest ? st.mtimeNs : newest;
  }
  /** @type {Map<string, string>} */
  const out = new Map();
  for (const f of parsed.fileNames) {
    if (f.endsWith(".d.ts")) {
      continue;
    }
    const dts = ts
      .getOutputFileNames(parsed, f, false)
      .find((o) => o.endsWith(".d.ts"));
    const st = dts && statSync(dts, { bigint: true, throwIfNoEntry: false });
    if (!dts || !st || st.mtimeNs <= newest) {
      return undefined;
    }
    out.set(resolve(dts), readFileSync(dts, "utf8"));
  }
  if (process.env.EMQ_API_TRACE === "1") {
    process.stderr.write("tools/api.mjs: read the built declarations\n");
  }
  return out;
}

/**
 * A compiler host whose source files outside the package's sources (the
 * compiler's libs, node_modules' declarations) are parsed once for both
 * programs of a compile: the second one would parse them again.
 * @param {ts.CompilerHost} h
 * @returns {ts.CompilerHost}
 */
function shared(h) {
  const get = h.getSourceFile;
  h.getSourceFile = (f, lang, ...rest) => {
    const key = resolve(f);
    if (key.startsWith(dir + "/") && !key.includes("/node_modules/")) {
      return get.call(h, f, lang, ...rest);
    }
    let sf = sourceFiles.get(key);
    if (!sf) {
      sf = get.call(h, f, lang, ...rest);
      if (sf) {
        sourceFiles.set(key, sf);
      }
    }
    return sf;
  };
  return h;
}

/**
 * The declarations tsc emits for the sources, in memory.
 * @returns {Map<string, string>}
 */
function compile() {
  /** @type {Map<string, string>} */
  const out = new Map();
  const first = ts.createProgram(
    parsed.fileNames,
    options,
    shared(ts.createCompilerHost(options)),
  );
  const diags = ts.getPreEmitDiagnostics(first);
  if (diags.length > 0) {
    fail(
      ts.formatDiagnostics(diags, {
        getCanonicalFileName: (f) => f,
        getCurrentDirectory: () => dir,
        getNewLine: () => "\n",
      }),
    );
  }
  first.emit(undefined, (file, text) => {
    if (file.endsWith(".d.ts")) {
      out.set(resolve(file), text);
    }
  });
  if (process.env.EMQ_API_TRACE === "1") {
    process.stderr.write("tools/api.mjs: compiled the sources\n");
  }
  return out;
}

// 2. The entry points, read from those declarations.
const host = shared(ts.createCompilerHost(options));
const { fileExists, readFile, getSourceFile } = host;
/** @type {Set<string>} */
const emittedDirs = new Set();
for (const f of emitted.keys()) {
  for (
    let d = dirname(f);
    !emittedDirs.has(d) && d !== dirname(d);
    d = dirname(d)
  ) {
    emittedDirs.add(d);
  }
}
// Resolution must find the declarations read above, and never another
// file of the output directory (dist/ is tsc's: a stale one, or one whose
// source is gone).
const outDir = resolve(options.outDir ?? dir);
/** @param {string} f */
const inOut = (f) => resolve(f).startsWith(outDir + "/");
host.fileExists = (f) =>
  emitted.has(resolve(f)) || (!inOut(f) && fileExists.call(host, f));
host.directoryExists = (d) =>
  emittedDirs.has(resolve(d)) || ts.sys.directoryExists(d);
host.readFile = (f) => emitted.get(resolve(f)) ?? readFile.call(host, f);
host.getSourceFile = (f, lang, ...rest) => {
  const text = emitted.get(resolve(f));
  return text !== undefined
    ? ts.createSourceFile(f, text, lang, true)
    : getSourceFile.call(host, f, lang, ...rest);
};
const program = ts.createProgram(
  entries.map((e) => e.dts),
  { ...options, noEmit: true },
  host,
);
const checker = program.getTypeChecker();

/** @param {ts.Node | undefined} n */
const text = (n) => (n ? n.getText().replace(/\s+/g, " ").trim() : "any");

/** @param {ts.SignatureDeclaration} d */
function signature(d) {
  const tp = d.typeParameters
    ? "<" + d.typeParameters.map((p) => text(p)).join(", ") + ">"
    : "";
  const params = d.parameters
    .filter((p) => !(ts.isIdentifier(p.name) && p.name.text === "this"))
    .map((p) => {
      const t = text(p.type);
      const rest = p.dotDotDotToken ? "..." : "";
      const opt = p.questionToken || p.initializer ? "?" : "";
      return rest + (opt && /\s/.test(t) ? "(" + t + ")" : t) + opt;
    });
  const ret = ts.isConstructorDeclaration(d) ? "new" : text(d.type);
  return tp + "(" + params.join(", ") + ") => " + ret;
}

/** @param {ts.Node | undefined} d @param {ts.SyntaxKind} k */
const has = (d, k) =>
  !!d &&
  ts.canHaveModifiers(d) &&
  (ts.getModifiers(d) ?? []).some((m) => m.kind === k);

/** @type {Set<string>} */
const out = new Set();

/**
 * Whether d's doc comment tags it @internal: not part of the API.
 * @param {ts.Node} d
 */
const internal = (d) =>
  ts.getJSDocTags(d).some((t) => t.tagName.text === "internal");

/**
 * The lines of a member of a class or an interface, from its declarations.
 * @param {string} prefix
 * @param {string} name
 * @param {readonly ts.Declaration[]} decls
 * @param {ts.SymbolFlags} flags
 */
function member(prefix, name, decls, flags) {
  for (const d of decls) {
    if (
      name.startsWith("#") ||
      has(d, ts.SyntaxKind.PrivateKeyword) ||
      internal(d)
    ) {
      continue;
    }
    const prot = has(d, ts.SyntaxKind.ProtectedKeyword) ? "protected " : "";
    const opt = "questionToken" in d && d.questionToken ? "?" : "";
    if (
      ts.isCallSignatureDeclaration(d) ||
      ts.isConstructSignatureDeclaration(d) ||
      ts.isIndexSignatureDeclaration(d)
    ) {
      const kind = ts.isCallSignatureDeclaration(d)
        ? "call"
        : ts.isConstructSignatureDeclaration(d)
          ? "new"
          : "index";
      out.add(prefix + " " + kind + ": " + text(d));
    } else if (ts.isMethodDeclaration(d) || ts.isMethodSignature(d)) {
      out.add(
        prefix + " " + prot + "method " + name + opt + ": " + signature(d),
      );
    } else if (ts.isGetAccessorDeclaration(d)) {
      const set = flags & ts.SymbolFlags.SetAccessor;
      out.add(
        prefix +
          " " +
          prot +
          "property " +
          name +
          ": " +
          (set ? "" : "readonly ") +
          text(d.type),
      );
    } else if (ts.isSetAccessorDeclaration(d)) {
      if (!(flags & ts.SymbolFlags.GetAccessor)) {
        out.add(
          prefix +
            " " +
            prot +
            "property " +
            name +
            ": writeonly " +
            text(d.parameters[0]?.type),
        );
      }
    } else if (ts.isPropertyDeclaration(d) || ts.isPropertySignature(d)) {
      const ro = has(d, ts.SyntaxKind.ReadonlyKeyword) ? "readonly " : "";
      out.add(
        prefix +
          " " +
          prot +
          "property " +
          name +
          opt +
          ": " +
          ro +
          text(d.type),
      );
    }
  }
}

/** @param {ts.ClassDeclaration | ts.InterfaceDeclaration} d */
function heritage(d) {
  return (d.heritageClauses ?? [])
    .map(
      (h) =>
        (h.token === ts.SyntaxKind.ExtendsKeyword
          ? " extends "
          : " implements ") + h.types.map((x) => text(x)).join(", "),
    )
    .join("");
}

/** The base type of a literal type, as text. @param {ts.Type} t */
const widened = (t) =>
  checker.typeToString(
    checker.getBaseTypeOfLiteralType(t),
    undefined,
    ts.TypeFormatFlags.NoTruncation,
  );

/** @param {ts.Type} t */
const isLiteral = (t) =>
  (t.flags &
    (ts.TypeFlags.StringLiteral |
      ts.TypeFlags.NumberLiteral |
      ts.TypeFlags.BigIntLiteral |
      ts.TypeFlags.BooleanLiteral)) !==
  0;

/** The recorded type of a const. @param {ts.VariableDeclaration} d @param {ts.Symbol} s */
function constType(d, s) {
  const t = checker.getTypeOfSymbol(s);
  if (isLiteral(t)) {
    return widened(t);
  }
  if (checker.isTupleType(t)) {
    const els = checker.getTypeArguments(/** @type {ts.TypeReference} */ (t));
    if (els.length > 0 && els.every(isLiteral)) {
      const bases = [...new Set(els.map(widened))].sort();
      return "ReadonlyArray<" + bases.join(" | ") + ">";
    }
  }
  return d.type
    ? text(d.type)
    : checker.typeToString(t, undefined, ts.TypeFormatFlags.NoTruncation);
}

for (const e of entries) {
  const sf = program.getSourceFile(e.dts);
  const mod = sf && checker.getSymbolAtLocation(sf);
  if (!mod) {
    fail("cannot read the module " + e.dts);
    break;
  }
  for (const ex of checker.getExportsOfModule(mod)) {
    const name = ex.getName();
    const s =
      ex.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(ex) : ex;
    const head = e.module + " ";
    for (const d of s.declarations ?? []) {
      if (internal(ts.isVariableDeclaration(d) ? d.parent.parent : d)) {
        continue;
      }
      if (ts.isClassDeclaration(d)) {
        const key = head + "class " + name;
        out.add(
          key +
            ": " +
            (has(d, ts.SyntaxKind.AbstractKeyword) ? "abstract " : "") +
            "class" +
            heritage(d),
        );
        for (const c of d.members.filter(ts.isConstructorDeclaration)) {
          if (!has(c, ts.SyntaxKind.PrivateKeyword) && !internal(c)) {
            out.add(
              key +
                " " +
                (has(c, ts.SyntaxKind.ProtectedKeyword) ? "protected " : "") +
                "constructor: " +
                signature(c),
            );
          }
        }
        for (const m of s.members?.values() ?? []) {
          if (m.getName() !== "__constructor") {
            member(key, m.getName(), m.declarations ?? [], m.flags);
          }
        }
        for (const m of s.exports?.values() ?? []) {
          if (m.getName() !== "prototype") {
            member(key + " static", m.getName(), m.declarations ?? [], m.flags);
          }
        }
      } else if (ts.isInterfaceDeclaration(d)) {
        const key = head + "interface " + name;
        out.add(key + ": interface" + heritage(d));
        for (const m of d.members) {
          const ms = m.name ? checker.getSymbolAtLocation(m.name) : undefined;
          const mname = ms ? ms.getName() : "";
          member(key, mname, [m], ms ? ms.flags : 0);
        }
      } else if (ts.isTypeAliasDeclaration(d)) {
        const tps = d.typeParameters
          ? "<" + d.typeParameters.map((p) => text(p)).join(", ") + ">"
          : "";
        const key = head + "type " + name + tps;
        const t = checker.getTypeFromTypeNode(d.type);
        if (t.isUnion() && t.types.every(isLiteral)) {
          out.add(key + ": = union of literals");
          for (const u of t.types) {
            out.add(key + " member " + checker.typeToString(u) + ": literal");
          }
        } else {
          out.add(key + ": = " + text(d.type));
        }
      } else if (ts.isEnumDeclaration(d)) {
        out.add(head + "enum " + name + ": enum");
        for (const m of d.members) {
          out.add(
            head +
              "enum " +
              name +
              " member " +
              text(m.name) +
              ": " +
              String(checker.getConstantValue(m)),
          );
        }
      } else if (ts.isFunctionDeclaration(d)) {
        out.add(head + "function " + name + ": " + signature(d));
      } else if (ts.isVariableDeclaration(d)) {
        const kw = d.parent.flags & ts.NodeFlags.Const ? "const" : "let";
        out.add(head + kw + " " + name + ": " + constType(d, s));
      }
    }
  }
}

const lines = [...out].map((l) => l.replace(/\s+/g, " ").trim());
lines.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
process.stdout.write([...new Set(lines)].map((l) => l + "\n").join(""));
