/**
 * One server suite, two transports (after h3's `describeMatrix`): the suite runs against the server in-process
 * (`KilnServer.fetch`, no socket) and on a real loopback port, so what it asserts holds for both. Suites reach the
 * server only through `target.url` and `target.fetch` (pass `fetch` to SDK clients too).
 */
import { afterAll, beforeAll, describe } from "vitest";
import type { Engine } from "../../src/engine/index.js";
import { createServer, type ListeningServer, type ServerOptions } from "../../src/server/app.js";

export type Transport = "in-process" | "loopback";

/** The server under test; filled in before the suite's tests run. */
export interface MatrixTarget {
  transport: Transport;
  /** Base URL (Anthropic); OpenAI clients use `${url}/v1`. */
  url: string;
  /** A fetch that reaches this server. */
  fetch: typeof fetch;
  engine: Engine;
  /** The bound server (loopback only). */
  listening?: ListeningServer;
}

/** What a suite runs on: a fresh engine per transport and the server's options. */
export interface MatrixSetup {
  engine(): Promise<Engine>;
  options?: ServerOptions;
}

/** Base URL of the in-process transport: never resolved, every request goes to `KilnServer.fetch`. */
const IN_PROCESS_URL = "http://kiln.in-process";

export function describeMatrix(title: string, setup: MatrixSetup, suite: (target: MatrixTarget) => void, transports: Transport[] = ["in-process", "loopback"]): void {
  for (const transport of transports) {
    describe(`${title} (${transport})`, () => {
      const target = { transport } as MatrixTarget;
      beforeAll(async () => {
        target.engine = await setup.engine();
        const server = createServer(target.engine, setup.options);
        if (transport === "in-process") {
          Object.assign(target, { url: IN_PROCESS_URL, fetch: (input: RequestInfo | URL, init?: RequestInit) => server.fetch(new Request(input, init)) });
        } else {
          target.listening = await server.listen({ host: "127.0.0.1", port: 0 });
          Object.assign(target, { url: target.listening.url, fetch: globalThis.fetch });
        }
      });
      afterAll(async () => {
        await target.listening?.close();
        await target.engine?.close();
      });
      suite(target);
    });
  }
}
