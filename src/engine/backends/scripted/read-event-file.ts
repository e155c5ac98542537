/**
 * Reads a recorded event file (events.jsonl: one GenerationEvent per line). An `error` line carries
 * `{code, message, details?}` and becomes an EngineError, so a recording can end the way a real failure does.
 */
import { readFileSync } from "node:fs";
import { EngineError } from "../../../errors/engine-error.js";
import type { GenerationEvent } from "../../events.js";

export function readEventFile(path: string): GenerationEvent[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => {
      const event = JSON.parse(line);
      if (event.type !== "error") return event as GenerationEvent;
      return { type: "error", error: new EngineError(event.error.code, event.error.message, event.error.details ?? {}) };
    });
}
