/**
 * Tool-call arguments read back from another server's stream: no text means no arguments ({}); text that is not
 * JSON is the other server's failure, reported rather than replaced by a guess.
 */
import { EngineError } from "./errors.js";

export function parseToolArguments(json: string, from: string): unknown {
  if (json.trim() === "") return {};
  try {
    return JSON.parse(json);
  } catch {
    throw new EngineError("backend_failure", `${from} returned tool arguments that are not valid JSON: ${json.slice(0, 200)}`);
  }
}
