/** Turns a benchmark result object into the committed Markdown report (and README table). */
import { round } from "./stats.js";
import { renderMixedRounds } from "./mixed-phase.js";
import { renderRestartSection } from "./restart-phase.js";

const fmt = (v, d = 1) => (v === null || v === undefined || !Number.isFinite(v) ? "–" : String(round(v, d)));

function table(header, rows) {
  return [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

function machineSection(r) {
  const m = r.machine;
  return [
    `Machine: ${m.cpu.model} (family ${m.cpu.family} model ${m.cpu.modelNumber} stepping ${m.cpu.stepping}`
      + `${m.cpu.hypervisor ? ", virtual machine" : ""}), ${m.logicalCpus} logical CPUs, ${m.memoryGiB} GiB.`,
    `CPU flags: ${m.cpu.flags.join(" ")}${m.cpu.flags.includes("amx_tile") ? "" : " (no AMX)"}.`,
    `Node ${m.node}, node-llama-cpp ${m.nodeLlamaCpp} (llama.cpp ${m.nodeLlamaCppLlamaRelease}); llama-server built from`
      + ` the same source bundle, commit ${r.llamaCpp?.commit?.slice(0, 12) ?? "–"}`
      + `${r.llamaCpp?.removedVariants?.length ? `, variants removed after SIGILL: ${r.llamaCpp.removedVariants.join(", ")}` : ""}.`,
    `Load average at start ${m.loadAverageAtStart.join(" / ")}, at end ${r.loadAverageAtEnd?.join(" / ") ?? "–"}`
      + ` (the machine is shared; compare ratios from the same run, not absolute figures).`,
    `Settings: ${r.settings.threads} threads, ${r.settings.ctxPerSequence} tokens of context per sequence,`
      + ` ${r.settings.parallel} parallel sequences, flash attention left at the default (auto) everywhere, greedy sampling.`,
  ].join("\n");
}

function singleStreamSection(r) {
  const rows = r.singleStream.map((s) => [s.side, s.cpuVariant ?? "–", fmt(s.promptTokensPerSecond), fmt(s.generationTokensPerSecond),
    s.note ?? ""]);
  return table(["single stream", "CPU variant", `prompt ${r.settings.promptTokens} tok/s`,
    `generate ${r.settings.generateTokens} tok/s`, "note"], rows);
}

function sweepSection(r) {
  const rows = [];
  for (const level of r.sweep) {
    for (const side of ["kiln", "llama-server"]) {
      const s = level[side];
      if (!s) continue;
      rows.push([String(level.clients), side, fmt(s.ttftP50Ms, 0), fmt(s.ttftP95Ms, 0), fmt(s.itlP50Ms), fmt(s.itlP95Ms),
        fmt(s.aggregateTokensPerSecond)]);
    }
    if (level.direct) {
      rows.push([String(level.clients), "node-llama-cpp in-process (reference)", "–", "–", "–", "–", fmt(level.direct.aggregateTokensPerSecond)]);
    }
  }
  const retried = r.sweep.flatMap((level) => ["kiln", "llama-server"].filter((side) => level[side]?.retriedRequests)
    .map((side) => `${side} ${level[side].retriedRequests} at ${level.clients} clients`));
  const note = retried.length
    ? `\n\nRequests sent again after the server closed their kept-alive connection (their time includes the failed attempt): ${retried.join(", ")}.`
    : "";
  return table(["clients", "server", "TTFT p50 ms", "TTFT p95 ms", "ITL p50 ms", "ITL p95 ms", "aggregate tok/s"], rows) + note;
}

function agentSection(r) {
  const sides = Object.keys(r.agentTrace);
  const turns = r.agentTrace[sides[0]]?.map((t) => t.turn) ?? [];
  const rows = turns.map((turn, i) => [String(turn), fmt(r.agentTrace[sides[0]][i]?.promptTokens, 0),
    ...sides.map((s) => {
      const t = r.agentTrace[s][i];
      return t ? `${fmt(t.ttftMs, 0)}${t.cachedTokens !== undefined ? ` (${t.cachedTokens} cached)` : ""}` : "–";
    })]);
  return table(["turn", "prompt tokens", ...sides.map((s) => `${s} TTFT ms`)], rows);
}

/** The report of `npm run bench:restart`: the machine, the restart phase and the interleaved conversations. */
export function renderRestartReport(r) {
  const variants = Object.entries(r.cpuVariants ?? {}).map(([side, v]) => `${side} ${v ?? "unknown"}`).join(", ");
  return [
    `# kiln restart benchmark — ${r.date} on ${r.machine.host}`, "", machineSection(r),
    `CPU variants loaded: ${variants || "see the JSON"}.`, "",
    ...renderRestartSection(r.restart),
    `## Two conversations alternating on ${r.settings.interleavedSequences} sequence`, "", interleavedSection(r), "",
    ...(r.notes?.length ? ["## Notes", "", ...r.notes.map((n) => `- ${n}`), ""] : []),
  ].join("\n");
}

function interleavedSection(r) {
  const sides = Object.keys(r.interleaved ?? {});
  if (sides.length === 0) return "(not run)";
  const n = r.interleaved[sides[0]].length;
  const rows = Array.from({ length: n }, (_, i) => {
    const t0 = r.interleaved[sides[0]][i];
    return [`${t0.conversation === 1 ? "A" : "B"}${t0.turn}`, fmt(t0.promptTokens, 0),
      ...sides.map((s) => `${fmt(r.interleaved[s][i]?.ttftMs, 0)} (${r.interleaved[s][i]?.cachedTokens ?? "?"} cached)`)];
  });
  return table(["turn", "prompt tokens", ...sides.map((s) => `${s} TTFT ms`)], rows);
}

function longPromptsSection(r) {
  const long = r.longPrompts;
  const sides = Object.keys(long.quiet[0]?.tokensPerSecond ?? {});
  const speedRows = ["quiet", "contended"].flatMap((mode) => long[mode].map((row) => [mode === "quiet" ? "quiet" : "one core busy",
    fmt(row.promptTokens, 0), ...sides.map((s) => fmt(row.tokensPerSecond[s], 0)), fmt(row.tokensPerSecond.kiln / row.tokensPerSecond["llama-server"], 2)]));
  const servers = Object.keys(long.disconnect);
  const itlRows = servers.map((s) => {
    const x = long.itl[s] ?? {};
    const d = long.disconnect[s];
    return [s, fmt(x.longPromptTokens ?? d.promptTokens, 0), `${fmt(x.undisturbedItlP50Ms)} / ${fmt(x.undisturbedItlP95Ms)}`,
      x.disturbedTokens === undefined ? "not measured" : `${fmt(x.disturbedItlP50Ms)} / ${fmt(x.disturbedItlP95Ms)} (${x.disturbedTokens} tokens)`,
      fmt(x.disturbedItlP95Ms / x.undisturbedItlP95Ms, 1),
      x.streamsDuring === undefined ? "" : `${fmt(x.undisturbedTtftMs, 0)} / ${fmt(x.streamTtftP50Ms, 0)} / ${fmt(x.streamTtftMaxMs, 0)} (${x.streamsDuring - 1})`,
      fmt(x.longTtftMs / 1000), fmt(d.disconnectToIdleMs, 0)];
  });
  const rounds = long.quiet[0]?.samples ? Object.values(long.quiet[0].samples)[0].length : 1;
  const speed = [
    `Servers with 2 sequences of ${long.settings.ctxPerSequence} tokens. CPU variants: ${Object.entries(long.cpuVariants).map(([s, v]) => `${s} ${v ?? "?"}`).join(", ")}.`
      + " Agent-shaped prompts (a long system prompt and a JSON tool list), each unique so nothing is cached; prompt tok/s is"
      + " prompt tokens ÷ time to first token on the servers. \"One core busy\": another process runs a plain CPU loop meanwhile."
      + (rounds > 1 ? ` Median of ${rounds} rounds, the sides in a rotated order each round.` : ""),
    "",
    table(["machine", "prompt tokens", ...sides.map((s) => `${s} tok/s`), "kiln ÷ llama-server"], speedRows),
  ];
  if (servers.length === 0) return speed.join("\n");
  return [
    ...speed,
    "",
    `A client streams counting completions of ${long.settings.itlStreamTokens} tokens back to back (each a new request, so`
      + " the stream's context stays short). The first runs alone (undisturbed); after the next one's first tokens another client"
      + " sends a long prompt, and the gaps within the streams until its first token are the disturbed ITL. Stream TTFT: the"
      + " first stream's, then the median and worst of those started during the prompt (how many). Then a client sends the"
      + " same-size prompt and disconnects"
      + ` ${round(long.settings.disconnectAfterMs / 1000, 1)} s in: time until the server's CPU is idle (a 100 ms window with at most one 10 ms clock tick).`,
    "",
    table(["server", "long prompt tokens", "ITL p50 / p95 ms undisturbed", "ITL p50 / p95 ms during the prompt", "p95 ratio",
      "stream TTFT ms alone / during p50 / max", "long prompt TTFT s", "disconnect → idle ms"], itlRows),
  ].join("\n");
}

function ratiosSection(r) {
  const x = r.ratios;
  if (!r.singleStream) return "(core phases not run)";
  const rows = [
    ["kiln ÷ direct node-llama-cpp generation", fmt(x.kilnOverDirectGeneration, 2), "≥ 0.95"],
    ...x.kilnOverLlamaServerAggregate.map((v) => [`kiln ÷ llama-server aggregate tok/s, ${v.clients} clients`, fmt(v.ratio, 2), "≥ 1"]),
    [`agent turn ${x.lastTurn ?? "–"} TTFT, no cache ÷ cache (kiln)`, fmt(x.cacheSpeedupLastTurn, 1), "≥ 5"],
    [`agent turn ${x.lastTurn ?? "–"} TTFT, kiln ÷ llama-server`, fmt(x.kilnOverLlamaServerLastTurnTtft, 2), "≤ 1"],
  ];
  return table(["ratio (same run)", "measured", "target"], rows);
}

function rooflineSection(r) {
  const x = r.roofline;
  return [
    `Memory read bandwidth: ${fmt(x.bandwidthGBs[1])} GB/s with 1 thread, ${fmt(x.bandwidthGBs[r.settings.threads])} GB/s with`
      + ` ${r.settings.threads}. Model file ${fmt(x.modelBytes / 2 ** 20)} MiB → ceiling ${fmt(x.ceilingTokensPerSecond)} tok/s`
      + ` single-stream; measured direct ${fmt(x.directGenerationTokensPerSecond)} tok/s`
      + ` (${fmt((100 * x.directGenerationTokensPerSecond) / x.ceilingTokensPerSecond, 0)}% of the ceiling).`,
  ].join("\n");
}

/** The Markdown report for one run. */
function mixedIntro(s) {
  return `${s.parallel} slots of ${s.ctxPerSequence} tokens; unique ~230-token prompts, 128 tokens out at temperature 0.8, streamed; `
    + `${s.seconds} s per level, levels ${s.levels} (a repeated level is the history check).`;
}

export function renderReport(r) {
  return [
    `# kiln benchmark — ${r.date} on ${r.machine.host}`,
    "",
    machineSection(r),
    "",
    ...(r.longPrompts ? ["## Long prompts", "", longPromptsSection(r), ""] : []),
    ...(r.mixed ? ["## Mixed traffic", "", mixedIntro(r.mixed.settings), "", ...renderMixedRounds(r.mixed.runs)] : []),
    ...(r.singleStream ? coreSections(r) : []),
    ...(r.notes?.length ? ["## Notes", "", ...r.notes.map((n) => `- ${n}`), ""] : []),
  ].join("\n");
}

/** The sections of the core phases (single stream, sweep, agent traces, interleaved, roofline). */
function coreSections(r) {
  return [
    "## Ratios",
    "",
    ratiosSection(r),
    "",
    "## Single stream",
    "",
    `node-llama-cpp direct runs one stream on a context of ${r.settings.parallel} sequences × ${r.settings.ctxPerSequence} tokens, the shape the servers use.`,
    "",
    singleStreamSection(r),
    "",
    "## Concurrency sweep",
    "",
    `Each client sends ${r.settings.sweepRounds} requests back to back, ${r.settings.sweepTokens} output tokens each.`,
    "",
    sweepSection(r),
    "",
    "## Agent trace",
    "",
    `${r.settings.agentTurns} turns, ~${r.agentSystemTokens}-token system prompt with tool list; each turn appends a user`
      + " message, the tool call, the tool result and the answer.",
    "",
    agentSection(r),
    "",
    `Two conversations interleaved on ${r.settings.interleavedSequences} sequence(s):`,
    "",
    interleavedSection(r),
    "",
    ...renderRestartSection(r.restart),
    "## Roofline",
    "",
    rooflineSection(r),
    "",
  ];
}
