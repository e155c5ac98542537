/**
 * `kiln serve` as a process with its team features: stored keys from `kiln keys create` are enforced as soon as
 * one exists (no restart), and a key revoked by another process is refused from the next request, even the last
 * one; --no-auth never enforces; request logs are JSON lines without the key. The served model is a remote one
 * whose replica is down, so nothing loads: these checks only list models.
 */
import { afterEach, describe, expect, it } from "vitest";
import { makeModelHome, runKilnCli, spawnServe, type ServeProcess } from "../helpers/spawn-serve.js";

const REMOTE = "far=openai+http://127.0.0.1:9/v1";
let serve: ServeProcess | undefined;

afterEach(async () => {
  serve?.child.kill("SIGTERM");
  await serve?.exited;
  serve = undefined;
});

async function listStatus(url: string, key?: string): Promise<number> {
  const response = await fetch(`${url}/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  await response.body?.cancel();
  return response.status;
}

async function createKey(home: string, name: string): Promise<string> {
  const created = await runKilnCli(home, ["keys", "create", "--name", name]);
  expect(created.code, created.stderr).toBe(0);
  return created.stdout.trim();
}

describe("kiln serve auth with stored keys", () => {
  it("enforces a key created while it runs, and refuses it from the next request once another process revokes it", async () => {
    serve = await spawnServe(["--model", REMOTE, "--log-level", "info"]);
    const running = serve;
    expect(running.stderr()).toMatch(/auth: off until a key is created/);
    expect(await listStatus(running.url)).toBe(200);

    const key = await createKey(running.home, "alice");
    expect(await listStatus(running.url)).toBe(401);
    expect(await listStatus(running.url, "kiln-not-a-key")).toBe(401);
    expect(await listStatus(running.url, key)).toBe(200);

    const revoked = await runKilnCli(running.home, ["keys", "revoke", "alice"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await listStatus(running.url, key)).toBe(401);
    expect(await listStatus(running.url)).toBe(401);

    const other = await createKey(running.home, "alice");
    expect(await listStatus(running.url, other)).toBe(200);
    const metrics = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${other}` } });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/^kiln_requests_total\{route="\/v1\/models",status="401",model="[^"]*"\} 4$/m);
    expect(text).toMatch(/^kiln_model_load_seconds\{model="far"\} [\d.e+-]+$/m);

    const logged = running.stderr().split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged.filter((entry) => entry.route === "/v1/models").map((entry) => entry.status)).toEqual([200, 401, 401, 200, 401, 401, 200]);
    expect(logged.find((entry) => entry.status === 200 && String(entry.keyId).startsWith("key_"))).toBeDefined();
    expect(running.stderr()).not.toContain(key);
  });

  it("never asks for a key with --no-auth, even when stored keys exist", async () => {
    const home = makeModelHome();
    await createKey(home, "bob");
    serve = await spawnServe(["--model", REMOTE, "--no-auth"], home);
    expect(serve.stderr()).toMatch(/auth: off \(--no-auth/);
    expect(await listStatus(serve.url)).toBe(200);
  });

  it("refuses a non-loopback address without any key, and accepts one once a stored key exists", async () => {
    const home = makeModelHome();
    const refused = await runKilnCli(home, ["serve", "--host", "0.0.0.0", "--port", "0", "--model", REMOTE]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/refusing to serve on 0\.0\.0\.0 without an API key/);

    await createKey(home, "carol");
    serve = await spawnServe(["--host", "0.0.0.0", "--model", REMOTE], home);
    expect(serve.stderr()).toMatch(/auth: stored keys/);
    expect(await listStatus(serve.url.replace("0.0.0.0", "127.0.0.1"))).toBe(401);
  });
});
