export const API_KEY_NAME_MAX_LENGTH = 200;

/**
 * What is wrong with a key's name, or null: 1 to 200 characters, not only spaces (it would list as a blank), and
 * well-formed Unicode (an unpaired surrogate cannot be stored as UTF-8: the database would keep a replacement
 * character, not the name answered). The API and the command line both ask this.
 */
export function apiKeyNameProblem(name: string): string | null {
  // Characters are code points, as OpenAPI's maxLength and PostgreSQL's varchar(200) count them; an emoji is two UTF-16 units.
  const length = [...name].length;
  if (length < 1 || length > API_KEY_NAME_MAX_LENGTH) return `must be 1 to ${API_KEY_NAME_MAX_LENGTH} characters`;
  if (!/\S/.test(name)) return 'must contain a character other than spaces';
  if (!name.isWellFormed()) return 'must be well-formed Unicode (no unpaired surrogate, U+D800 to U+DFFF)';
  return null;
}
