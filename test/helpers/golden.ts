/**
 * Golden files for the pure encoders: test/fixtures/<surface>/<case>/{request.json, events.jsonl, stream.sse,
 * response.json}. Set KILN_UPDATE_GOLDEN=1 to (re)write the expected files, then review the diff.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { GenerationEvent } from "../../src/engine/index.js";
import { readEventFile } from "../../src/engine/backends/scripted/read-event-file.js";

const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/** Case folder names of a surface, optionally only those starting with `prefix`. */
export function listCases(surface: string, prefix = ""): string[] {
  return readdirSync(join(FIXTURES, surface)).filter((name) => name.startsWith(prefix)).sort();
}

/** Reads a JSON fixture file of a case. */
export function readJson(surface: string, name: string, file: string): unknown {
  return JSON.parse(readText(surface, name, file));
}

/** Reads a fixture file of a case as text. */
export function readText(surface: string, name: string, file: string): string {
  return readFileSync(join(FIXTURES, surface, name, file), "utf8");
}

/** Whether a case has the file (e.g. no response.json when the events end in an error). */
export function hasFile(surface: string, name: string, file: string): boolean {
  return existsSync(join(FIXTURES, surface, name, file));
}

/** Reads events.jsonl (the scripted backend's reader: `error` lines become EngineErrors). */
export function readEvents(surface: string, name: string): GenerationEvent[] {
  return readEventFile(eventsPath(surface, name));
}

/** The path of a case's events.jsonl (what a scripted model replays). */
export function eventsPath(surface: string, name: string): string {
  return join(FIXTURES, surface, name, "events.jsonl");
}

/** The expected text of a golden file; with KILN_UPDATE_GOLDEN=1 it writes `actual` first. */
export function golden(surface: string, name: string, file: string, actual: string): string {
  const path = join(FIXTURES, surface, name, file);
  if (process.env.KILN_UPDATE_GOLDEN === "1") writeFileSync(path, actual);
  if (!existsSync(path)) throw new Error(`Missing golden file ${path}: run with KILN_UPDATE_GOLDEN=1 and review it`);
  return readFileSync(path, "utf8");
}

/** Replays events as the async iterable an engine returns. */
export async function* replay(events: GenerationEvent[]): AsyncGenerator<GenerationEvent> {
  for (const event of events) yield event;
}

/** Collects an async iterable of strings into one. */
export async function joinText(frames: AsyncIterable<string>): Promise<string> {
  let text = "";
  for await (const frame of frames) text += frame;
  return text;
}
