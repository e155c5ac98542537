import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CATALOG } from "../models/index.js";
import { storeOnDemand } from "./store-on-demand.js";

let home: string;
const saved = process.env.KILN_HOME;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "kiln-on-demand-"));
  mkdirSync(join(home, "models"));
  writeFileSync(join(home, "models", "mine.gguf"), "weights");
  writeFileSync(join(home, "models", "mine.json"), JSON.stringify({ contextLength: 4096 }));
  process.env.KILN_HOME = home;
});

afterEach(() => {
  if (saved === undefined) delete process.env.KILN_HOME;
  else process.env.KILN_HOME = saved;
});

describe("storeOnDemand", () => {
  it("offers the store's models by name, with their file size and recorded context, resolving to the file", async () => {
    const offered = storeOnDemand({ pull: false, log: () => undefined });
    expect(offered.list().map((m) => m.id)).toEqual(["mine"]);
    expect(offered.find("mine")).toMatchObject({ id: "mine", fileSize: 7, contextSize: 4096 });
    expect(await offered.find("mine")!.resolve()).toEqual({ id: "mine", path: join(home, "models", "mine.gguf"), aliases: [] });
    expect(offered.find(CATALOG[0]!.name)).toBeUndefined();
    expect(offered.find("../etc/passwd")).toBeUndefined();
  });

  it("offers the catalog's names too when pulling on demand is allowed, and sees a model stored later", () => {
    const offered = storeOnDemand({ pull: true, log: () => undefined });
    const entry = CATALOG[0]!;
    expect(offered.find(entry.name)).toMatchObject({ id: entry.name, fileSize: entry.size, contextSize: entry.capabilities.contextLength });
    expect(offered.list().map((m) => m.id)).toEqual(["mine", ...CATALOG.map((e) => e.name).filter((name) => name !== "mine")]);
    writeFileSync(join(home, "models", "later.gguf"), "more weights");
    expect(offered.find("later")).toMatchObject({ id: "later", fileSize: 12 });
  });
});
