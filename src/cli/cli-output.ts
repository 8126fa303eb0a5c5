/** The CLI's answer: one JSON object on stdout, so scripts can parse it. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** A failure: a JSON error object on stderr and a non-zero exit code. */
export function fail(message: string, code = 'invalid_request'): never {
  process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`);
  process.exit(1);
}
