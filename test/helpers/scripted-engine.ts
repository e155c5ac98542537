/**
 * An engine whose one model replays a recorded event file (the scripted backend): for server tests that need a
 * model to answer but not to think. The model answers to the real default model's id, so request bodies read the
 * same as in real-model tests.
 */
import { createEngine, type Engine, type ScriptGate } from "../../src/engine/index.js";
import { eventsPath } from "./golden.js";
import { TEST_MODEL } from "./server.js";

/** Settings of {@link startScriptedEngine}. */
export interface ScriptedEngineOptions {
  /** The recording: a golden case as [surface, case] (default the Anthropic "text" case). */
  recording?: [surface: string, name: string];
  parallel?: number;
  queue?: number;
  contextSize?: number;
  gate?: ScriptGate;
  /** Other names the model answers to (e.g. an `Org/Name` alias). */
  aliases?: string[];
}

export function startScriptedEngine(options: ScriptedEngineOptions = {}): Promise<Engine> {
  const [surface, name] = options.recording ?? ["anthropic", "text"];
  const { parallel, queue, contextSize, gate, aliases } = options;
  return createEngine({ models: [], queue, scriptedModels: [{ id: TEST_MODEL, aliases, events: eventsPath(surface, name), parallel, contextSize, gate }] });
}
