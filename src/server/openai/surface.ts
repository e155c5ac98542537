/**
 * The OpenAI-compatible surface as app.ts mounts it: chat completions, legacy completions, the Responses API and
 * embeddings under /v1 and without it (GET /v1/models is shared and served by app.ts), with OpenAI's error shape.
 */
import { withUnversionedPaths, type Surface } from "../context.js";
import { handleChatCompletions } from "./chat/routes.js";
import { handleCompletions } from "./completions/routes.js";
import { handleEmbeddings } from "./embeddings/routes.js";
import { handleResponses } from "./responses/routes.js";
import { openAIErrorResponse } from "./wire/errors.js";

/** Creates the surface; stateless, so one instance may serve any number of servers. */
export function createOpenAISurface(): Surface {
  return {
    name: "openai",
    routes: withUnversionedPaths([
      { method: "POST", path: "/v1/chat/completions", auth: true, handler: handleChatCompletions },
      { method: "POST", path: "/v1/completions", auth: true, handler: handleCompletions },
      { method: "POST", path: "/v1/responses", auth: true, handler: handleResponses },
      { method: "POST", path: "/v1/embeddings", auth: true, handler: handleEmbeddings },
    ]),
    errorResponse: openAIErrorResponse,
  };
}

/** The shared instance. */
export const openaiSurface: Surface = createOpenAISurface();
