import type { Command } from "commander";
import { formatTable } from "../../team/text-table.js";
import { formatFlagErrors } from "../options.js";
import { UsageError } from "../report-error.js";

interface PsFlags {
  url: string;
  apiKey?: string;
  json?: boolean;
}

/** A replica's live state as a running server reports it under a remote model's details. */
interface ReplicaRow { url: string; healthy: boolean; outstanding: number; served: number; failures: number; lastError?: string }

/** One item of GET /v1/models as `kiln serve` renders it. */
export interface ServedModel { id: string; backend?: string; context_length?: number; details?: { replicas?: ReplicaRow[]; placement?: string } }

export const DEFAULT_SERVER_URL = "http://127.0.0.1:5456";

/** Registers `kiln ps`: what a running `kiln serve` serves, and the health of each remote replica. */
export function registerPs(program: Command): void {
  const command = program
    .command("ps")
    .description("show the models a running `kiln serve` serves and the state of their remote replicas")
    .option("--url <base>", "the server's base URL", DEFAULT_SERVER_URL)
    .option("--api-key <key>", "API key for the server (default: KILN_API_KEY)")
    .option("--json", "print JSON")
    .action(async (flags: PsFlags) => {
      const models = await fetchModels(flags.url, flags.apiKey ?? process.env.KILN_API_KEY?.split(",")[0]?.trim());
      process.stdout.write(`${flags.json ? JSON.stringify(models, null, 2) : formatModels(models)}\n`);
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
 * Models as a table (with where llama.cpp put each model's layers and KV cache, when a model says), each remote model
 * followed by its replicas.
 */
export function formatModels(models: ServedModel[]): string {
  const placed = models.some((m) => typeof m.details?.placement === "string");
  const header = ["MODEL", "BACKEND", "CONTEXT", ...(placed ? ["WHERE"] : [])];
  const rows = models.map((m) => [m.id, m.backend ?? "unknown", String(m.context_length ?? "?"), ...(placed ? [m.details?.placement ?? "-"] : [])]);
  const lines = [formatTable(header, rows)];
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
