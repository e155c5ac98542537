import { describe, expect, it } from "vitest";
import type { Backend, LoadedModel } from "./backend.js";
import { collectResult } from "./collect.js";
import { createEngine } from "./engine.js";
import type { BackendSettings } from "./engine-options.js";
import type { ModelDeclaration } from "./model-specs.js";
import { describeBackend, listBackendNames, registerBackend } from "./backend-registry.js";
import { EngineError } from "../errors/engine-error.js";

/** A backend whose models answer with their own file path, recording what the engine asked of it. */
function echoBackend(log: string[], seen: BackendSettings[]): (settings: BackendSettings) => Promise<Backend<ModelDeclaration>> {
  return async (settings) => {
    seen.push(settings);
    return {
      load: async (spec): Promise<LoadedModel> => {
        log.push(`load ${spec.id}`);
        return {
          info: { id: spec.id, aliases: spec.aliases ?? [], backend: "echo", contextSize: 64, created: 0, ownedBy: "kiln", fim: false },
          parallel: 1,
          async *generate() {
            yield { type: "start", model: spec.id, inputTokens: 1, cachedInputTokens: 0 };
            yield { type: "text-start", index: 0 };
            yield { type: "text-delta", index: 0, text: spec.path };
            yield { type: "text-end", index: 0 };
            yield { type: "finish", reason: "stop", usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1 } };
          },
          complete: () => { throw new Error("not used"); },
          countTokens: async () => 1,
          dispose: async () => void log.push(`dispose ${spec.id}`),
        };
      },
      describe: async () => ({ models: "echoed" }),
      dispose: async () => void log.push("dispose backend"),
    };
  };
}

describe("backend registry", () => {
  it("knows the built-in backends by name", () => {
    expect(listBackendNames()).toEqual(expect.arrayContaining(["llama-cpp", "webgpu", "remote", "scripted"]));
  });

  it("opens a registered backend once for the models that name it, and closes it after them", async () => {
    const log: string[] = [];
    const seen: BackendSettings[] = [];
    registerBackend("echo", echoBackend(log, seen));
    const engine = await createEngine({ models: [{ id: "a", path: "/a.gguf" }, { id: "b", path: "/b.gguf", backend: "echo" }], backend: "echo", parallel: 2 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ parallel: 2 });
    expect(engine.listModels().map((model) => model.backend)).toEqual(["echo", "echo"]);
    const result = await collectResult(engine.generate({ model: "b", messages: [], maxTokens: 1, sampling: {} }));
    expect(result.blocks).toEqual([{ type: "text", text: "/b.gguf" }]);
    await engine.close();
    expect(log).toEqual(["load a", "load b", "dispose a", "dispose b", "dispose backend"]);
    expect(await describeBackend("echo")).toEqual({ backend: "echo", models: "echoed" });
  });

  it("refuses a model that names an unknown backend, naming the field", async () => {
    const failure = createEngine({ models: [{ id: "a", path: "/a.gguf", backend: "nowhere" }] });
    await expect(failure).rejects.toBeInstanceOf(EngineError);
    await expect(failure).rejects.toMatchObject({ code: "invalid_request", details: { param: "backend" } });
  });
});
