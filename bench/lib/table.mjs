/** Prints the one results table: measure, value, baseline, ratio, target, pass/fail. */
export function printTable(results, meta) {
  const header = ['Scenario', 'Measure', 'Value', 'Baseline', 'Ratio', 'Target', 'Result'];
  const rows = results.map((r) => {
    const ratio = r.baselineValue !== undefined && Number.isFinite(r.value) && r.baselineValue ? r.value / r.baselineValue : undefined;
    r.ratio = ratio;
    const result = r.pass === undefined ? (r.metric === 'not available' || r.metric === 'error' ? r.metric.toUpperCase() : '') : r.pass ? 'PASS' : 'FAIL';
    return [
      r.scenario,
      r.metric === 'not available' || r.metric === 'error' ? r.note : r.metric,
      r.value === undefined ? '' : `${format(r.value, r.unit)}${r.detail ? ` (${r.detail})` : ''}`,
      r.baselineValue === undefined ? '' : `${r.baseline}: ${format(r.baselineValue, r.unit)}`,
      ratio === undefined ? '' : `${ratio.toFixed(2)}x`,
      r.target ?? '',
      result,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  const out = [
    '',
    `File storage service benchmark: db=${meta.db}${meta.quick ? ' (quick)' : ''}, ${meta.cpus} CPU, node ${meta.node}, commit ${meta.commit ?? '?'}, ${meta.seconds.toFixed(0)} s; medians of ${meta.runs} runs`,
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

function format(value, unit) {
  if (!Number.isFinite(value)) return 'n/a';
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${unit}`;
}
