import { describe, expect, it } from "vitest";
import type { LaunchTarget } from "../agent.js";
import { AGENTS, findAgent } from "./index.js";

const TARGET: LaunchTarget = { url: "http://127.0.0.1:5456", apiKey: "k1", model: "qwen2.5-coder-0.5b", contextSize: 32768, configDir: "/tmp/kiln-home/launch" };

describe("agent setups", () => {
  it("Claude Code: base URL, token, every model tier, stable prefix, compact window from the real context", () => {
    const setup = findAgent("claude")!.setUp(TARGET);
    expect(setup.env).toMatchObject({
      ANTHROPIC_BASE_URL: TARGET.url, ANTHROPIC_AUTH_TOKEN: "k1",
      ANTHROPIC_MODEL: TARGET.model, ANTHROPIC_DEFAULT_OPUS_MODEL: TARGET.model, ANTHROPIC_DEFAULT_SONNET_MODEL: TARGET.model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: TARGET.model, ANTHROPIC_SMALL_FAST_MODEL: TARGET.model,
      CLAUDE_CODE_ATTRIBUTION_HEADER: "0", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", CLAUDE_CODE_AUTO_COMPACT_WINDOW: "100000",
    });
    // Claude Code compacts at floor(95,904 × pct / 100) tokens: one 4,096-token reply and a margin below 32,768.
    const threshold = Math.floor(95_904 * Number(setup.env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE) / 100);
    expect(threshold).toBeGreaterThan(26_000);
    expect(threshold + 4096).toBeLessThan(32_768);
    expect(setup.unset).toContain("ANTHROPIC_API_KEY");
  });

  it("Claude Code: a context of 100k or more is its compact window as it is", () => {
    const setup = findAgent("claude")!.setUp({ ...TARGET, contextSize: 131_072 });
    expect(setup.env.CLAUDE_CODE_AUTO_COMPACT_WINDOW).toBe("131072");
    expect(setup.env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE).toBeUndefined();
  });

  it("Codex: a kiln-owned CODEX_HOME whose config.toml makes kiln the provider at {url}/v1", () => {
    const setup = findAgent("codex")!.setUp(TARGET);
    expect(setup.env.CODEX_HOME).toBe("/tmp/kiln-home/launch/codex");
    const [file] = setup.files;
    expect(file?.path).toBe("/tmp/kiln-home/launch/codex/config.toml");
    expect(file?.content).toContain('model_provider = "kiln"');
    expect(file?.content).toContain('base_url = "http://127.0.0.1:5456/v1"');
    expect(file?.content).toContain('wire_api = "responses"');
    expect(file?.content).toContain("model_context_window = 32768");
    expect(setup.env.KILN_API_KEY).toBe("k1");
  });

  it("opencode: OPENCODE_CONFIG names a generated openai-compatible provider with the served model as default", () => {
    const setup = findAgent("opencode")!.setUp(TARGET);
    const [file] = setup.files;
    expect(setup.env.OPENCODE_CONFIG).toBe(file?.path);
    const config = JSON.parse(file!.content);
    expect(config.model).toBe("kiln/qwen2.5-coder-0.5b");
    expect(config.provider.kiln.npm).toBe("@ai-sdk/openai-compatible");
    expect(config.provider.kiln.options.baseURL).toBe("http://127.0.0.1:5456/v1");
    expect(config.provider.kiln.models["qwen2.5-coder-0.5b"].limit.context).toBe(32768);
  });

  it("Qwen Code: the openai auth type at {url}/v1 with the served model, its stream guards sized for a cold first turn", () => {
    const setup = findAgent("qwen")!.setUp(TARGET);
    expect(setup.args).toEqual(["--auth-type", "openai", "--openai-base-url", "http://127.0.0.1:5456/v1", "--model", "qwen2.5-coder-0.5b"]);
    expect(setup.env).toMatchObject({
      OPENAI_API_KEY: "k1", QWEN_CODE_MAX_OUTPUT_TOKENS: "4096",
      QWEN_STREAM_IDLE_TIMEOUT_MS: "1800000", QWEN_STREAM_MAX_LIFETIME_MS: "1800000", QWEN_CODE_API_TIMEOUT_MS: "1800000",
    });
    // The same bounds as Claude Code's: a cold first turn may evaluate its prompt for many minutes before a chunk.
    expect(setup.env.QWEN_STREAM_IDLE_TIMEOUT_MS).toBe(findAgent("claude")!.setUp(TARGET).env.CLAUDE_STREAM_IDLE_TIMEOUT_MS);
    const [file] = setup.files;
    expect(setup.env.QWEN_CODE_SYSTEM_DEFAULTS_PATH).toBe(file?.path);
    expect(JSON.parse(file!.content)).toMatchObject({ model: { generationConfig: { contextWindowSize: 32768 } }, general: { enableAutoUpdate: false } });
  });

  it("aider: the OpenAI base, the openai/ model prefix and OPENAI_API_KEY", () => {
    const setup = findAgent("aider")!.setUp(TARGET);
    expect(setup.args.join(" ")).toContain("--openai-api-base http://127.0.0.1:5456/v1 --model openai/qwen2.5-coder-0.5b");
    expect(setup.env.OPENAI_API_KEY).toBe("k1");
    expect(JSON.parse(setup.files[0]!.content)["openai/qwen2.5-coder-0.5b"].max_input_tokens).toBe(32768);
  });

  it("writes generated files only inside the kiln-owned directory", () => {
    for (const agent of AGENTS) {
      for (const file of agent.setUp(TARGET).files) expect(file.path.startsWith(`${TARGET.configDir}/`)).toBe(true);
    }
  });
});
