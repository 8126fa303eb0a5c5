/** The CLI's answer: one JSON object on stdout, so scripts can parse it. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/**
 * A reader that went away before the answer was written (`| head -c0`, a closed pipe) would end the process with
 * Node's stack trace for an unhandled EPIPE; said as JSON on stderr instead. The command has run by then.
 */
export function reportLostOutput(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) =>
    fail(`The command ran, but its answer could not be written to stdout (${error.code ?? error.message}) and is lost`, 'output_failed'),
  );
}

/** A failure: a JSON error object on stderr and a non-zero exit code. */
export function fail(message: string, code = 'invalid_request'): never {
  process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`);
  process.exit(1);
}
