import { describe, expect, it } from "vitest";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { EngineError } from "../errors/engine-error.js";
import { findCatalogEntry, type CatalogEntry } from "./catalog.js";
import { DEFAULT_MODEL, nameFromFile, parseModelRef } from "./refs.js";

describe("parseModelRef", () => {
  it("takes catalog names (the default model's and a coder's) before store names, honouring --name", () => {
    expect(parseModelRef(DEFAULT_MODEL)).toEqual({ kind: "catalog", name: "smollm2-135m", source: "catalog:smollm2-135m", entry: findCatalogEntry(DEFAULT_MODEL) });
    expect(parseModelRef("qwen2.5-coder-0.5b", { name: "coder" })).toMatchObject({ kind: "catalog", name: "coder", entry: { name: "qwen2.5-coder-0.5b" } });
    const catalog: CatalogEntry[] = [{ name: "mine", description: "", capabilities: { tools: false, fim: false, contextLength: 1 }, size: 1, sha256: "0", sources: [] }];
    expect(parseModelRef("mine", { catalog })).toMatchObject({ kind: "catalog", entry: catalog[0] });
    expect(parseModelRef("qwen2.5-coder-0.5b", { catalog })).toEqual({ kind: "store", name: "qwen2.5-coder-0.5b" });
  });

  it("maps hf: references to the resolve URL, honouring HF_ENDPOINT", () => {
    const ref = parseModelRef("hf:Org/Repo-GGUF/sub/Model+Q4_K_M.gguf", { env: {} });
    expect(ref).toMatchObject({ kind: "url", url: "https://huggingface.co/Org/Repo-GGUF/resolve/main/sub/Model%2BQ4_K_M.gguf", name: "model-q4_k_m" });
    const mirrored = parseModelRef("hf:a/b/c.gguf", { env: { HF_ENDPOINT: "https://mirror.example/" } });
    expect(mirrored).toMatchObject({ url: "https://mirror.example/a/b/resolve/main/c.gguf", source: "hf:a/b/c.gguf" });
  });

  it("takes https URLs, and plain http only for loopback hosts", () => {
    expect(parseModelRef("https://example.com/x/Tiny%20Model.GGUF")).toMatchObject({ kind: "url", name: "tiny-model" });
    expect(parseModelRef("http://127.0.0.1:8080/m.gguf")).toMatchObject({ kind: "url", name: "m" });
    expect(() => parseModelRef("http://example.com/m.gguf")).toThrow(/use https/);
  });

  it("parses pypi references and rejects malformed ones", () => {
    expect(parseModelRef("pypi:pkg-a==1.0.post1/dir/M.gguf")).toMatchObject({ kind: "pypi", package: "pkg-a", version: "1.0.post1", file: "dir/M.gguf", name: "m" });
    expect(() => parseModelRef("pypi:pkg/M.gguf")).toThrow(/pypi:<package>==<version>\/<file>/);
  });

  it("treats .gguf names and anything with a slash as local paths, ~ included", () => {
    expect(parseModelRef("models/My Model.gguf")).toEqual({ kind: "file", path: resolve("models/My Model.gguf"), source: resolve("models/My Model.gguf"), name: "my-model" });
    expect(parseModelRef("~/m.gguf")).toMatchObject({ kind: "file", path: join(homedir(), "m.gguf") });
  });

  it("treats other plain words as store names; --name overrides a reference's name", () => {
    expect(parseModelRef("qwen2.5-0.5b")).toEqual({ kind: "store", name: "qwen2.5-0.5b" });
    expect(parseModelRef("/tmp/x.gguf", { name: "mine" })).toMatchObject({ name: "mine" });
  });

  it("rejects unusable names with an invalid_request error", () => {
    for (const bad of ["has space", "-dash-first"]) {
      const error = (() => { try { parseModelRef(bad); } catch (e) { return e; } })();
      expect(error).toBeInstanceOf(EngineError);
      expect((error as EngineError).code).toBe("invalid_request");
    }
    expect(() => parseModelRef("/tmp/x.gguf", { name: "../escape" })).toThrow(/invalid model name/);
  });
});

describe("nameFromFile", () => {
  it("lowercases the stem and replaces odd characters", () => {
    expect(nameFromFile("SmolLM2-135M-Instruct.Q4_1.gguf")).toBe("smollm2-135m-instruct.q4_1");
    expect(nameFromFile("/a/b/Ünï code+name.gguf")).toBe("n-code-name");
  });
});
