/**
 * Starts a real kiln server on 127.0.0.1:0 with the real default model, or another real one (load once per test
 * file, in beforeAll).
 */
import { createEngine, type DraftDeclaration, type Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer, type ServerOptions } from "../../src/server/app.js";
import { realModelPath, testThreads } from "./real-model.js";

/** The id the real default model is served under. */
export const TEST_MODEL = "smollm2-135m";

/** A running test server. */
export interface TestServer {
  url: string;
  engine: Engine;
  server: ListeningServer;
  close(): Promise<void>;
}

/** Engine and server settings for one test file. */
export interface TestServerOptions extends ServerOptions {
  parallel?: number;
  queue?: number;
  ctxSize?: number;
  /** CPU threads (default: the tests' setting, one unless KILN_TEST_THREADS says otherwise). */
  threads?: number;
  /** Other names the test model answers to (e.g. an `Org/Name` alias). */
  aliases?: string[];
  /** Where the model runs: a registered backend name (default llama-cpp). */
  backend?: string;
  /** Another real model to serve instead of the default one (`reasoning`: as a model's config entry sets it; with a
   * draft model: speculative decoding). */
  model?: { id: string; path: string; reasoning?: boolean; draft?: DraftDeclaration };
  /** What the server is given in place of the engine (e.g. a recorder of the requests it receives). */
  wrapEngine?(engine: Engine): Engine;
}

/** Loads the real model and listens on a free loopback port. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { parallel = 2, queue, ctxSize = 2048, threads = testThreads(), aliases, backend, model, wrapEngine, ...serverOptions } = options;
  const { id, path, reasoning, draft } = model ?? { id: TEST_MODEL, path: realModelPath() };
  const engine = await createEngine({ models: [{ id, path, aliases, backend, reasoning, draft }], parallel, queue, ctxSize, threads });
  const server = await createServer(wrapEngine?.(engine) ?? engine, serverOptions).listen({ host: "127.0.0.1", port: 0 });
  return {
    url: server.url,
    engine,
    server,
    close: async () => {
      await server.close();
      await engine.close();
    },
  };
}
