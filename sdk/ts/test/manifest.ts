// The manifest, read independently of the generator, for cross-checks.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root (tests run from sdk/ts/dist/test). */
export const root = join(here, "..", "..", "..", "..");

export interface Manifest {
  protocol: string;
  version: string;
  ids: {
    examples: { id: string; time: string; node: number; sequence: number }[];
    invalid_examples: string[];
  };
  queues: { examples: string[]; invalid_examples: string[] };
  classes: { word: string; name: string }[];
  scripts: { name: string }[];
}

export const manifest = parse(
  readFileSync(join(root, "protocol.yaml"), "utf8"),
) as Manifest;

/** sdk/lua/index.json, the machine-readable bundle. */
export const bundleIndex = JSON.parse(
  readFileSync(join(root, "sdk", "lua", "index.json"), "utf8"),
) as {
  bundle_digest: string;
  scripts: { name: string; sha1: string; file: string }[];
};
