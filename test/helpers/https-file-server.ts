/**
 * A real HTTPS server on 127.0.0.1 (self-signed certificate made with openssl in a temp folder) that serves files
 * the way model hosts do — with Range support — plus misbehaving routes for the failure cases of a pull.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

/** How a route answers. `cut`: the first full request gets half the body, then the socket is destroyed.
 * `stall`: the first full request gets half the body, then nothing (the client must give up or abort).
 * `no-range`: Range headers are ignored (always 200). */
export type RouteMode = "normal" | "cut" | "stall" | "no-range";

/** A served file. */
export interface Route {
  body: Buffer;
  mode?: RouteMode;
}

/** A running server: its base URL, the CA to trust, and each request's path and Range header. */
export interface HttpsFileServer {
  url: string;
  certPath: string;
  cert: string;
  requests: Array<{ path: string; range?: string }>;
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1, port 0; `dir` receives the key and certificate. */
export async function startHttpsFileServer(dir: string, routes: Record<string, Route>): Promise<HttpsFileServer> {
  const keyPath = join(dir, "key.pem");
  const certPath = join(dir, "cert.pem");
  await promisify(execFile)("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", keyPath, "-out", certPath,
  ]);
  const [key, cert] = await Promise.all([readFile(keyPath), readFile(certPath, "utf8")]);
  const requests: HttpsFileServer["requests"] = [];
  const misbehaved = new Set<string>();
  const server: Server = createServer({ key, cert }, (req, res) => {
    const path = req.url ?? "/";
    requests.push({ path, range: req.headers.range });
    const route = routes[path];
    if (!route) return void res.writeHead(404, "Not Found").end("not found");
    const { body, mode = "normal" } = route;
    const range = mode === "no-range" ? undefined : /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    if (range) {
      const start = Number(range[1]);
      if (start >= body.length) return void res.writeHead(416, { "content-range": `bytes */${body.length}` }).end();
      res.writeHead(206, { "content-length": body.length - start, "content-range": `bytes ${start}-${body.length - 1}/${body.length}` });
      return void res.end(body.subarray(start));
    }
    res.writeHead(200, { "content-length": body.length, "content-type": "application/octet-stream" });
    if ((mode === "cut" || mode === "stall") && !misbehaved.has(path)) {
      misbehaved.add(path);
      res.write(body.subarray(0, body.length >> 1), () => {
        if (mode === "cut") res.destroy();
      });
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    certPath,
    cert,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
