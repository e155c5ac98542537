/**
 * kiln's step clock from /metrics (`kiln_decode_step*`): totals of decode steps, their tokens and their compute and
 * host seconds, and per-step figures over a run (the difference of two readings).
 */

/** The step clock's totals now; undefined for a server without it (llama-server, an older kiln). */
export async function readStepTotals(server) {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text().catch(() => "");
  const value = (pattern) => Number(new RegExp(`^${pattern} ([\\d.e+-]+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  const steps = value('kiln_decode_steps_total\\{model="[^"]*"\\}');
  if (!(steps >= 0)) return undefined;
  return {
    steps,
    tokens: value('kiln_decode_step_tokens_total\\{model="[^"]*"\\}'),
    computeSeconds: value('kiln_decode_step_seconds_total\\{model="[^"]*",part="compute"\\}'),
    hostSeconds: value('kiln_decode_step_seconds_total\\{model="[^"]*",part="host"\\}'),
  };
}

/** Steps, tokens per step and compute / host milliseconds per step between two readings (`before` absent: since start). */
export function perStep(after, before = { steps: 0, tokens: 0, computeSeconds: 0, hostSeconds: 0 }) {
  const steps = after.steps - before.steps;
  if (!(steps > 0)) return undefined;
  return {
    steps,
    tokensPerStep: (after.tokens - before.tokens) / steps,
    computeMsPerStep: (1000 * (after.computeSeconds - before.computeSeconds)) / steps,
    hostMsPerStep: (1000 * (after.hostSeconds - before.hostSeconds)) / steps,
  };
}
