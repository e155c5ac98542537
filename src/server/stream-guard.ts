/**
 * The one place a failure inside a running stream is caught. Once the 200 and some frames are sent, an error can
 * only travel in-band: the surface writes its own error event and the stream ends. Failures the engine reports as
 * `error` events are the encoders' business; this catches what is thrown (a backend or encoder fault).
 */
import { toEngineError, type EngineError } from "../engine/index.js";
import { mapStream } from "../lib/map-stream.js";

/** The frames of a surface's in-band error event (Anthropic `error`, OpenAI `{"error":…}`, `response.failed`). */
export type InBandError = (error: EngineError) => string[];

/** Yields `frames`; if producing them throws, yields the surface's in-band error instead, then ends. */
export function guardStream(frames: AsyncIterable<string>, inBandError: InBandError): AsyncIterable<string> {
  return mapStream(frames, { map: (frame) => frame, fail: (error) => inBandError(toEngineError(error)).join("") });
}
