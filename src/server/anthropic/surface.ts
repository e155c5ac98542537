/**
 * The Anthropic Messages surface as app.ts mounts it: /v1/messages and count_tokens (also without the /v1 prefix,
 * which some clients build from a base URL ending in /v1), with Anthropic's error shape. GET /v1/models is
 * shared and served by app.ts.
 */
import { withUnversionedPaths, type Surface } from "../context.js";
import { anthropicErrorResponse } from "./errors.js";
import { handleCountTokens, handleMessages } from "./routes.js";

/** Creates the surface; stateless, so one instance may serve any number of servers. */
export function createAnthropicSurface(): Surface {
  return {
    name: "anthropic",
    routes: withUnversionedPaths([
      { method: "POST", path: "/v1/messages", auth: true, handler: handleMessages },
      { method: "POST", path: "/v1/messages/count_tokens", auth: true, handler: handleCountTokens },
    ]),
    errorResponse: anthropicErrorResponse,
  };
}

/** The shared instance. */
export const anthropicSurface: Surface = createAnthropicSurface();
