/**
 * The shared real test server (test/helpers/server.ts) set up for the OpenAI surface: an API key, an `Org/Name`
 * alias (for `Org%2FName` retrieval), and clients of the official `openai` SDK whose fetch records every stream
 * for the checker.
 */
import OpenAI from "openai";
import { createRecordingFetch } from "./openai-stream.js";
import { startTestServer, TEST_MODEL, type TestServer } from "./server.js";

export const TEST_KEY = "sk-kiln-test";
export const MODEL_ID = TEST_MODEL;
export const MODEL_ALIAS = "HuggingFaceTB/SmolLM2-135M-Instruct";
/** Per-sequence context of the test engine (small, so an overflow prompt is cheap to build). */
export const TEST_CONTEXT = 2048;

/** A started server and what tests need to talk to it. */
export interface OpenAITestServer extends TestServer {
  /** `${url}/v1`, the base URL OpenAI clients are configured with. */
  baseURL: string;
  /** An SDK client with the right key whose streams are recorded. */
  client: OpenAI;
  recorder: ReturnType<typeof createRecordingFetch>;
  /** A client with `apiKey` (wrong keys for 401 tests), no retries. */
  clientWithKey(apiKey: string): OpenAI;
}

/** Loads the real model once and starts the server (call in beforeAll). */
export async function startOpenAITestServer(): Promise<OpenAITestServer> {
  const server = await startTestServer({ apiKeys: [TEST_KEY], aliases: [MODEL_ALIAS], ctxSize: TEST_CONTEXT });
  const baseURL = `${server.url}/v1`;
  const recorder = createRecordingFetch();
  const clientWithKey = (apiKey: string) => new OpenAI({ apiKey, baseURL, maxRetries: 0, fetch: recorder.fetch });
  return { ...server, baseURL, client: clientWithKey(TEST_KEY), recorder, clientWithKey };
}
