/**
 * A model that replays a recorded event stream instead of running weights: the test tier between pure functions
 * and the real model. Behind the same LoadedModel interface as llama.cpp, it lets server behaviour (admission and
 * 529s, draining, disconnects, auth, limits, framing) run over real HTTP in milliseconds. Every request gets the
 * recording, whatever it asks; token counts are the recording's. A recording that is a lone `error` is a refusal:
 * every request fails with it before any event, as a real backend's early errors do.
 */
import type { GenerateOptions, LoadedModel, ModelInfo } from "../../backend.js";
import { EngineError } from "../../../errors/engine-error.js";
import type { GenerationEvent } from "../../events.js";
import type { ChatRequest, CompletionRequest } from "../../messages.js";
import { readEventFile } from "./read-event-file.js";
import type { ScriptedModelSpec, ScriptGate } from "../../model-specs.js";

export function createScriptedModel(spec: ScriptedModelSpec): LoadedModel {
  const events = typeof spec.events === "string" ? readEventFile(spec.events) : spec.events;
  const start = events[0];
  const refusal = start?.type === "error" && events.length === 1 ? start.error : undefined;
  if (start?.type !== "start" && !refusal) throw new EngineError("backend_failure", `scripted model ${spec.id}: the recording must begin with a start event or be one error`);
  const info: ModelInfo = {
    id: spec.id, aliases: spec.aliases ?? [], backend: "scripted", contextSize: spec.contextSize ?? 2048,
    created: 0, ownedBy: "kiln", fim: false,
  };
  const replay = (options: GenerateOptions = {}) => refusal ? refuse(refusal) : replayEvents(events, spec.id, spec.gate, options.signal);
  return {
    info,
    parallel: spec.parallel ?? 1,
    generate: (_request: ChatRequest, options?: GenerateOptions) => replay(options),
    complete: (_request: CompletionRequest, options?: GenerateOptions) => replay(options),
    countTokens: async () => {
      if (refusal) throw refusal;
      return (start as Extract<GenerationEvent, { type: "start" }>).inputTokens;
    },
    dispose: async () => undefined,
  };
}

/** A generator, so the refusal rejects the first `next()` as a backend's early error does. */
async function* refuse(error: EngineError): AsyncGenerator<GenerationEvent> {
  throw error;
}

/** The recording with the served id; an abort while waiting at the gate ends it as a real backend would. */
async function* replayEvents(events: GenerationEvent[], model: string, gate: ScriptGate | undefined, signal?: AbortSignal): AsyncGenerator<GenerationEvent> {
  const [start, ...rest] = events as [Extract<GenerationEvent, { type: "start" }>, ...GenerationEvent[]];
  yield { ...start, model };
  await gate?.pass(signal);
  if (signal?.aborted) {
    yield { type: "finish", reason: "aborted", usage: { inputTokens: start.inputTokens, cachedInputTokens: start.cachedInputTokens, outputTokens: 0 } };
    return;
  }
  yield* rest;
}
