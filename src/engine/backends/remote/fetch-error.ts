/** fetch says only "fetch failed"; the useful part (ECONNREFUSED, a timeout…) is in its cause. */
export function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const message = (error as Error).message;
  return cause ? `${message}: ${cause.code ?? cause.message}` : message;
}
