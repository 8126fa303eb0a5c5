import { InvalidRequest } from '../../common/errors/api-error.js';

export const MAX_NAME_LENGTH = 255;

/** Why a file or folder name is refused, or null when it is acceptable (docs/files.md, "Upload"). */
export function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'must be a string';
  // An unpaired surrogate cannot be stored as UTF-8: each database would keep a different replacement character.
  if (!name.isWellFormed()) return 'must be well-formed Unicode (no unpaired surrogate, U+D800 to U+DFFF)';
  const length = [...name].length;
  if (length < 1 || length > MAX_NAME_LENGTH) return `must be 1 to ${MAX_NAME_LENGTH} characters`;
  if (/[/\\\0]/.test(name)) return 'must not contain "/", "\\" or NUL';
  if (name === '.' || name === '..') return 'must not be "." or ".."';
  return null;
}

export function assertValidName(name: unknown, field = 'name'): asserts name is string {
  const problem = nameProblem(name);
  if (problem) throw InvalidRequest.fields([{ field, message: problem }]);
}

/**
 * The name as stored: Unicode NFC, so the composed and decomposed forms of `café.txt` are one name.
 * Checked after normalising, since NFC can lengthen a few characters.
 */
export function acceptedName(name: unknown, field = 'name'): string {
  const normalized = typeof name === 'string' ? name.normalize('NFC') : name;
  assertValidName(normalized, field);
  return normalized;
}

/**
 * Names collide, sort and are searched case-insensitively: this is the key they are compared by. Each
 * character is taken to its lower case through its upper case, so that every case form of a letter meets
 * (`ς`, `σ` and `Σ`; `ı`, `I` and `i`; `µ` and `μ`; `ſ`, `S` and `s`), and `İ` is keyed as `i`. A character whose
 * upper or lower case is longer (`ß` and `SS`; `İ` lower-cases to `i̇`) is kept as it is lowered alone, or as it
 * is, so the key has exactly as many characters as the name and always fits the name's column.
 */
export function nameKeyOf(name: string): string {
  let key = '';
  for (const character of name.normalize('NFC')) key += keyCharacter(character);
  return key;
}

function keyCharacter(character: string): string {
  if (character === 'İ') return 'i';
  const upper = character.toUpperCase();
  const lower = upper.length === character.length ? upper.toLowerCase() : character.toLowerCase();
  return lower.length === character.length ? lower : character;
}

/** `report.pdf` -> base `report`, extension `.pdf`; a leading dot (`.env`) is part of the base. */
export function splitName(name: string): { base: string; extension: string } {
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return { base: name, extension: '' };
  return { base: name.slice(0, dot), extension: name.slice(dot) };
}

/**
 * Where a taken name gets its number: a file's before its extension (`report (1).pdf`); a folder has no
 * extension, so its number goes at the end (`Project.v2 (1)`, not `Project (1).v2`).
 */
export type NameNumbering = 'before-extension' | 'at-end';

/**
 * The n-th numbered variant: `report (n).pdf`, shortening the base so the result stays within 255 characters.
 * An extension that leaves no room for a base (`a.` + 253 characters) is not kept: the whole name is the base.
 */
export function numberedName(name: string, n: number, numbering: NameNumbering = 'before-extension'): string {
  const suffix = ` (${n})`;
  const split = splitName(name);
  const keepsExtension = numbering === 'before-extension' && [...split.extension].length + [...suffix].length < MAX_NAME_LENGTH;
  const { base, extension } = keepsExtension ? split : { base: name, extension: '' };
  const room = MAX_NAME_LENGTH - [...suffix].length - [...extension].length;
  return `${[...base].slice(0, room).join('')}${suffix}${extension}`;
}

/** The names an item may take among siblings, in order: `name`, then `name (1).ext`, `name (2).ext`, … */
export function* candidateNames(name: string, numbering: NameNumbering = 'before-extension'): Generator<string, never> {
  yield name;
  for (let n = 1; ; n++) yield numberedName(name, n, numbering);
}

/**
 * The name a new item takes among siblings: the wanted one when free, otherwise the first free
 * `name (n).ext`, n from 1. `taken` holds the siblings' name keys.
 */
export function firstFreeName(name: string, taken: ReadonlySet<string>): string {
  const candidates = candidateNames(name);
  for (;;) {
    const candidate = candidates.next().value;
    if (!taken.has(nameKeyOf(candidate))) return candidate;
  }
}

/** A LIKE pattern matching `value` literally (with `ESCAPE '\'`). */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * The name a multipart file part gives: its filename without the directory a client may put before it (RFC 7578 4.2;
 * old browsers sent `C:\Users\me\report.pdf`), after either separator. What is left may be no name at all (`photos/`,
 * `..`): the name rules refuse it, unless a `name` field gives the name.
 */
export function fileNameOfPart(filename: string): string {
  return filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1);
}
