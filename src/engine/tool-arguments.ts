/**
 * Tool-call arguments read back from another server's stream: no text means no arguments ({}); text that is not
 * JSON, or JSON nested past the limit, is the other server's failure, reported rather than replaced by a guess.
 */
import { EngineError } from "../errors/engine-error.js";
import { JsonTooDeepError, MAX_JSON_DEPTH, parseBoundedJson } from "../lib/json-depth.js";

export function parseToolArguments(json: string, from: string): unknown {
  if (json.trim() === "") return {};
  try {
    return parseBoundedJson(json);
  } catch (error) {
    const what = error instanceof JsonTooDeepError ? `nested deeper than ${MAX_JSON_DEPTH} levels` : "not valid JSON";
    throw new EngineError("backend_failure", `${from} returned tool arguments that are ${what}: ${json.slice(0, 200)}`);
  }
}
