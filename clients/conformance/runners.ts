/**
 * The client libraries that run the conformance scenario. Adding a language is adding one entry: where its library
 * lives, the interpreter the prerequisites script installs, the command that runs the scenario with the language's
 * usual test runner, and the command that runs the library's own tests (unit tests and README examples).
 */
export interface LanguageRunner {
  language: string;
  /** Where the commands run, relative to the repository root. */
  cwd: string;
  /** The interpreter on PATH (scripts/ensure-test-prerequisites.mjs installs it), and how to ask its version. */
  interpreter: { command: string; versionArgs: string[] };
  /** Environment the commands need besides the scenario's variables (see scenario.md). */
  env: Record<string, string>;
  /** Runs clients/conformance/scenario.json and writes the report to FSS_REPORT. */
  conformance: string[];
  /** The library's own tests, against the same server (FILE_STORAGE_BASE_URL and FILE_STORAGE_API_KEY). */
  suite: string[];
  /** What the suite's output says when it skipped a test; every test must run against the live server. */
  skipped?: RegExp;
  /** A static check of the library, e.g. its types; none when the language has no such step. */
  check?: string[];
}

export const RUNNERS: LanguageRunner[] = [
  {
    language: 'python',
    cwd: 'clients/python',
    interpreter: { command: 'python3', versionArgs: ['--version'] },
    // Run from source: no installation, no build step, no bytecode files left in the tree.
    env: { PYTHONPATH: 'src', PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
    conformance: ['python3', '-m', 'unittest', '-v', 'conformance.test_scenario'],
    suite: ['python3', '-m', 'unittest', 'discover', '-v', '-s', 'tests', '-t', '.'],
    // unittest's summary: "OK (skipped=2)".
    skipped: /skipped=\d+/,
    // Debian's mypy (scripts/ensure-test-prerequisites.mjs installs it); settings in pyproject.toml.
    check: ['mypy', 'src/file_storage', 'tests', 'conformance'],
  },
  {
    language: 'ruby',
    cwd: 'clients/ruby',
    interpreter: { command: 'ruby', versionArgs: ['--version'] },
    env: {},
    conformance: ['ruby', '-Ilib', 'test/conformance.rb'],
    suite: ['ruby', '-Ilib', '-e', 'Dir["test/*_test.rb"].sort.each { |path| require File.expand_path(path) }'],
    // Minitest's summary: "12 runs, 40 assertions, 0 failures, 0 errors, 1 skips".
    skipped: /\b[1-9]\d* skips/,
    // Every file parses without a warning (ruby -wc prints warnings and errors on stderr; any line of it fails).
    check: ['sh', '-c', 'for f in $(find lib test -name "*.rb"); do if ruby -wc "$f" 2>&1 >/dev/null | grep .; then exit 1; fi; done'],
  },
  {
    language: 'php',
    cwd: 'clients/php',
    interpreter: { command: 'php', versionArgs: ['--version'] },
    env: {},
    conformance: ['php', 'tests/conformance.php'],
    suite: ['sh', '-c', 'php tests/UnitTest.php && php tests/ReadmeTest.php'],
    // Every file parses (php -l); the library has no dependencies to install, so nothing else is needed.
    check: ['sh', '-c', 'for f in $(find src tests autoload.php -name "*.php"); do php -l "$f" >/dev/null || exit 1; done'],
  },
];
