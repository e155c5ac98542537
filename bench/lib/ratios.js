/** The target ratios of the benchmark, all computed from one run's figures. */
import { ratio } from "./stats.js";

/** kiln ÷ direct generation, kiln ÷ llama-server per sweep level, cache speed-up and kiln ÷ llama-server at the last agent turn. */
export function computeRatios(result) {
  const single = (side) => result.singleStream?.find((s) => s.side === side);
  const trace = result.agentTrace ?? {};
  // The last turn every side reached (all reach the same one unless the time budget cut a trace short).
  const reached = (label) => trace[label]?.filter(Boolean).at(-1)?.turn ?? Infinity;
  const lastTurn = Math.min(...["kiln (prefix cache)", "kiln (no prefix cache)", "llama-server"].map(reached));
  const last = (label) => (Number.isFinite(lastTurn) && lastTurn > 0 ? trace[label]?.find((t) => t?.turn === lastTurn)?.ttftMs : undefined);
  return {
    kilnOverDirectGeneration: ratio(single("kiln")?.generationTokensPerSecond, single("node-llama-cpp direct")?.generationTokensPerSecond),
    kilnOverLlamaServerGeneration: ratio(single("kiln")?.generationTokensPerSecond, single("llama-server")?.generationTokensPerSecond),
    kilnOverLlamaServerAggregate: (result.sweep ?? []).map((level) => ({
      clients: level.clients,
      ratio: ratio(level.kiln?.aggregateTokensPerSecond, level["llama-server"]?.aggregateTokensPerSecond),
    })),
    lastTurn: Number.isFinite(lastTurn) ? lastTurn : null,
    cacheSpeedupLastTurn: ratio(last("kiln (no prefix cache)"), last("kiln (prefix cache)"), 1),
    kilnOverLlamaServerLastTurnTtft: ratio(last("kiln (prefix cache)"), last("llama-server")),
    ...longPromptRatios(result.longPrompts),
  };
}

/** kiln ÷ llama-server prompt speed per length (quiet and contended), and each server's ITL p95 disturbed ÷ undisturbed. */
function longPromptRatios(long) {
  if (!long) return {};
  const speed = (rows) => rows.map((row) => ({ promptTokens: row.promptTokens,
    ratio: ratio(row.tokensPerSecond.kiln, row.tokensPerSecond["llama-server"]) }));
  return {
    longPromptKilnOverLlamaServer: { quiet: speed(long.quiet), contended: speed(long.contended) },
    itlP95DisturbedOverUndisturbed: Object.fromEntries(Object.entries(long.itl).map(([side, x]) => [side, ratio(x.disturbedItlP95Ms, x.undisturbedItlP95Ms, 1)])),
  };
}
