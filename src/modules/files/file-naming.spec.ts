import { describe, expect, it } from 'vitest';
import { acceptedName, candidateNames, fileNameOfPart, firstFreeName, nameKeyOf, nameProblem, numberedName, splitName } from './file-naming.js';

describe('file naming', () => {
  it('accepts ordinary names and refuses the illegal ones', () => {
    for (const ok of ['report.pdf', 'a', '.env', '...', 'x'.repeat(255), 'résumé 2026.docx', '😀'.repeat(255)]) expect(nameProblem(ok), ok).toBeNull();
    for (const bad of ['', '.', '..', 'a/b', 'a\\b', 'a\0b', '../etc/passwd', '..\\win.ini', 'x'.repeat(256)]) expect(nameProblem(bad), bad).not.toBeNull();
  });

  it('refuses a name that is not well-formed Unicode: an unpaired surrogate anywhere', () => {
    for (const bad of ['\ud800.txt', 'report\udfff.pdf', 'a\ud83d', '\ude00\ud83d', `${'x'.repeat(254)}\ud800`]) {
      expect(nameProblem(bad), JSON.stringify(bad)).toMatch(/well-formed Unicode/);
      expect(() => acceptedName(bad), JSON.stringify(bad)).toThrow(/well-formed Unicode/);
    }
    // A surrogate pair is one character (U+1F600), and fine.
    expect(nameProblem('\ud83d\ude00.txt')).toBeNull();
  });

  it('splits the extension at the last dot, keeping dot files whole', () => {
    expect(splitName('report.pdf')).toEqual({ base: 'report', extension: '.pdf' });
    expect(splitName('archive.tar.gz')).toEqual({ base: 'archive.tar', extension: '.gz' });
    expect(splitName('.bashrc')).toEqual({ base: '.bashrc', extension: '' });
    expect(splitName('README')).toEqual({ base: 'README', extension: '' });
  });

  it('numbers before the extension and stays within 255 characters', () => {
    expect(numberedName('report.pdf', 1)).toBe('report (1).pdf');
    expect(numberedName('Photos', 2)).toBe('Photos (2)');
    expect(numberedName('Project.v2', 1, 'at-end')).toBe('Project.v2 (1)');
    expect(numberedName('x'.repeat(252) + '.v2', 3, 'at-end')).toBe('x'.repeat(251) + ' (3)');
    const long = `${'x'.repeat(251)}.txt`;
    expect(numberedName(long, 12)).toHaveLength(255);
    expect(numberedName(long, 12).endsWith(' (12).txt')).toBe(true);
  });

  it('shortens the whole name when its extension leaves no room for a base, never passing 255 characters', () => {
    const noRoom = `a.${'x'.repeat(253)}`;
    expect(numberedName(noRoom, 1)).toBe(`${noRoom.slice(0, 251)} (1)`);
    expect(numberedName(noRoom, 100)).toBe(`${noRoom.slice(0, 249)} (100)`);
    // One character of base left: the extension stays.
    expect(numberedName(`a.${'x'.repeat(249)}`, 1)).toBe(`a (1).${'x'.repeat(249)}`);
    expect(numberedName(`a.${'x'.repeat(250)}`, 1)).toBe(`a.${'x'.repeat(249)} (1)`);
    expect(numberedName(`.${'e'.repeat(254)}`, 7)).toBe(`.${'e'.repeat(250)} (7)`);
    expect(numberedName(`😀.${'😀'.repeat(253)}`, 1)).toBe(`😀.${'😀'.repeat(249)} (1)`);
    for (const name of [noRoom, `${'y'.repeat(3)}.${'z'.repeat(251)}`, `.${'e'.repeat(254)}`, `a.${'😀'.repeat(253)}`]) {
      for (const n of [1, 9, 10, 99, 1000, 123456]) expect([...numberedName(name, n)].length, `${name.slice(0, 5)} ${n}`).toBeLessThanOrEqual(255);
    }
  });

  it('takes the first free numbered name, comparing case-insensitively', () => {
    expect(firstFreeName('report.pdf', new Set())).toBe('report.pdf');
    expect(firstFreeName('Report.PDF', new Set(['report.pdf']))).toBe('Report (1).PDF');
    expect(firstFreeName('report.pdf', new Set(['report.pdf', 'report (1).pdf', 'report (3).pdf']))).toBe('report (2).pdf');
  });

  it('offers distinct candidates within 255 characters for any number of copies of a long name', () => {
    const long = `${'x'.repeat(251)}.txt`;
    for (const name of [long, 'F'.repeat(255), '😀'.repeat(255)]) {
      const candidates = candidateNames(name);
      const keys = new Set<string>();
      for (let i = 0; i <= 1000; i++) {
        const candidate = candidates.next().value;
        expect([...candidate].length, candidate).toBeLessThanOrEqual(255);
        keys.add(nameKeyOf(candidate));
      }
      expect(keys.size).toBe(1001);
    }
    // The numbered variants of a long name do not start with its base: siblings are found by key, not by prefix.
    expect(numberedName(long, 1).startsWith(splitName(long).base)).toBe(false);
    expect(firstFreeName(long, new Set([long, numberedName(long, 1), numberedName(long, 2)].map(nameKeyOf)))).toBe(numberedName(long, 3));
  });

  it('keys names case-insensitively without ever lengthening them', () => {
    expect(nameKeyOf('Report.PDF')).toBe('report.pdf');
    expect(nameKeyOf('ΣΊΣΥΦΟΣ')).toBe('σίσυφοσ');
    const dotted = 'İ'.repeat(255);
    expect(nameKeyOf(dotted)).toBe('i'.repeat(255));
    for (const name of [dotted, '😀'.repeat(255), 'ǅ'.repeat(255), 'ẞ'.repeat(255), 'Ω'.repeat(255)]) {
      expect([...nameKeyOf(name)].length, name.slice(0, 2)).toBe([...name].length);
    }
    expect(nameKeyOf('Cafe\u0301.txt')).toBe(nameKeyOf('CAF\u00c9.TXT'));
  });

  it('gives every case form of a name one key: final sigma, dotted and dotless i, micro sign, long s, titlecase digraphs', () => {
    const sameKey = [
      ['ΟΔΟΣ.txt', 'οδος.txt', 'Οδοσ.txt'],
      ['İZMİR', 'İzmir', 'izmir', 'IZMIR'],
      ['ILIK', 'ılık', 'ilik'],
      ['µm', 'μm', 'ΜM'],
      ['ſtraſſe', 'STRASSE', 'strasse'],
      ['Ǆungla', 'ǅungla', 'ǆungla'],
      ['STRAẞE', 'straße'],
    ];
    for (const names of sameKey) expect(new Set(names.map(nameKeyOf)), names.join(' ')).toEqual(new Set([nameKeyOf(names[0]!)]));
    // A one-character case form that is longer is not used: ß is not SS.
    expect(nameKeyOf('straße')).not.toBe(nameKeyOf('STRASSE'));
  });

  it('keys every character as one character, and a key is its own key', () => {
    for (let codePoint = 0; codePoint <= 0x10ffff; codePoint++) {
      if (codePoint >= 0xd800 && codePoint <= 0xdfff) continue;
      const name = String.fromCodePoint(codePoint).normalize('NFC');
      const key = nameKeyOf(name);
      if ([...key].length !== [...name].length || nameKeyOf(key) !== key) expect({ codePoint: codePoint.toString(16), key }).toBeNull();
    }
  });

  it('accepts names in NFC, checking the length after composing', () => {
    expect(acceptedName('cafe\u0301.txt')).toBe('caf\u00e9.txt');
    expect(acceptedName('e\u0301'.repeat(255))).toBe('\u00e9'.repeat(255));
    // U+0958 has no composed form: NFC writes it as two characters.
    expect(() => acceptedName('\u0958'.repeat(128))).toThrow(/1 to 255/);
    expect(() => acceptedName(42)).toThrow(/string/);
  });

  it('takes a multipart filename without the directory before it, after either separator, leaving what is no name to the name rules', () => {
    const cases: Array<[string, string]> = [
      ['report.pdf', 'report.pdf'],
      ['../../etc/passwd', 'passwd'],
      ['C:\\Users\\me\\report.pdf', 'report.pdf'],
      ['dir/sub\\mixed.txt', 'mixed.txt'],
      ['photos/', ''],
      ['photos/..', '..'],
      ['..', '..'],
      ['.env', '.env'],
    ];
    for (const [filename, name] of cases) expect(fileNameOfPart(filename), filename).toBe(name);
  });
});
