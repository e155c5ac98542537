/** llama.cpp's sampling defaults (as llama-server applies them) for the fields a request leaves out; every local backend uses them. */
export const SAMPLING_DEFAULTS = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 } as const;
/** llama.cpp's default penalty window (penalty_last_n): penalties look at this many latest tokens. */
export const PENALTY_WINDOW = 64;
