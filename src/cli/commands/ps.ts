import type { Command } from "commander";
import { formatTable } from "../../team/text-table.js";
import { formatDuration } from "../../lib/duration.js";
import { formatFlagErrors } from "../options.js";
import { UsageError } from "../report-error.js";

interface PsFlags {
  url: string;
  apiKey?: string;
  json?: boolean;
}

/** A replica's live state as a running server reports it under a remote model's details. */
interface ReplicaRow { url: string; healthy: boolean; outstanding: number; served: number; failures: number; lastError?: string }

/** What a running server says of a model's residency (absent from servers before models on demand). */
interface ResidencyFacts {
  loaded?: boolean;
  /** Bytes, weights and context. */
  memory?: number;
  parallel?: number;
  /** Requests holding it: running, queued or waiting for its load. */
  requests?: number;
  idleSince?: string;
  /** An ISO time, "never" or "now". */
  unloadsAt?: string;
}

/** One item of GET /v1/models as `kiln serve` renders it. */
export interface ServedModel { id: string; backend?: string; context_length?: number; details?: { replicas?: ReplicaRow[]; placement?: string } & ResidencyFacts }

export const DEFAULT_SERVER_URL = "http://127.0.0.1:5456";

/** Registers `kiln ps`: what a running `kiln serve` serves, and the health of each remote replica. */
export function registerPs(program: Command): void {
  const command = program
    .command("ps")
    .description("show the models a running `kiln serve` has loaded (memory, context, sequences, idle time, when each unloads), the others it can load, and the state of remote replicas")
    .option("--url <base>", "the server's base URL", DEFAULT_SERVER_URL)
    .option("--api-key <key>", "API key for the server (default: KILN_API_KEY)")
    .option("--json", "print JSON")
    .action(async (flags: PsFlags) => {
      const models = await fetchModels(flags.url, flags.apiKey ?? process.env.KILN_API_KEY?.split(",")[0]?.trim());
      process.stdout.write(`${flags.json ? JSON.stringify(models, null, 2) : formatModels(models, Date.now())}\n`);
    });
  formatFlagErrors(command);
}

/** GET /v1/models of a running kiln; a one-line UsageError when it cannot be reached or refuses the key. */
export async function fetchModels(base: string, apiKey: string | undefined): Promise<ServedModel[]> {
  const url = `${base.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/models?limit=1000`;
  let response: Response;
  try {
    response = await fetch(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  } catch (error) {
    throw new UsageError(`cannot reach kiln at ${base}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`, "is `kiln serve` running there? (see --url)");
  }
  const body = (await response.json().catch(() => undefined)) as { data?: ServedModel[]; error?: { message?: string } } | undefined;
  if (!response.ok || !Array.isArray(body?.data)) {
    const message = body?.error?.message ?? `HTTP ${response.status}`;
    throw new UsageError(`${url}: ${message}`, response.status === 401 ? "pass --api-key <key> (or set KILN_API_KEY)" : undefined);
  }
  return body.data;
}

/**
 * The loaded models as a table (memory, context, sequences, idle time, when each unloads, and where llama.cpp put its
 * layers and KV cache when a model says), the models that load on demand in a line, each remote model's replicas.
 */
export function formatModels(models: ServedModel[], now: number): string {
  const loaded = models.filter((m) => m.details?.loaded !== false);
  const placed = loaded.some((m) => typeof m.details?.placement === "string");
  const header = ["MODEL", "BACKEND", "MEMORY", "CONTEXT", "SEQUENCES", "IDLE", "UNLOADS", ...(placed ? ["WHERE"] : [])];
  const rows = loaded.map((m) => [
    m.id, m.backend ?? "unknown", formatMiB(m.details?.memory), String(m.context_length ?? "?"), String(m.details?.parallel ?? "-"),
    describeIdle(m.details ?? {}, now), describeUnload(m.details ?? {}, now), ...(placed ? [m.details?.placement ?? "-"] : []),
  ]);
  const lines = [formatTable(header, rows)];
  const onDemand = models.filter((m) => m.details?.loaded === false).map((m) => m.id).sort();
  if (onDemand.length) lines.push("", `loaded on demand: ${onDemand.join(", ")}`);
  for (const model of models) {
    const replicas = model.details?.replicas;
    if (!Array.isArray(replicas)) continue;
    lines.push("", `${model.id} replicas:`);
    lines.push(formatTable(
      ["URL", "HEALTHY", "OUTSTANDING", "SERVED", "FAILURES", "LAST ERROR"],
      replicas.map((r) => [r.url, r.healthy ? "yes" : "no", String(r.outstanding), String(r.served), String(r.failures), r.lastError ?? "-"]),
    ));
  }
  return lines.join("\n");
}

function formatMiB(bytes: number | undefined): string {
  return bytes === undefined ? "-" : bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}

/** "in use (2 requests)", "3m12s", or "-" where the server does not say. */
function describeIdle(facts: ResidencyFacts, now: number): string {
  if (facts.requests) return `in use (${facts.requests} request${facts.requests > 1 ? "s" : ""})`;
  return facts.idleSince ? formatDuration(Math.max(0, now - Date.parse(facts.idleSince))) : "-";
}

/** "in 4m48s", "never", "now", or "-" while in use. */
function describeUnload(facts: ResidencyFacts, now: number): string {
  const at = facts.unloadsAt;
  if (!at) return "-";
  if (at === "never" || at === "now") return at;
  return `in ${formatDuration(Math.max(0, Date.parse(at) - now))}`;
}
