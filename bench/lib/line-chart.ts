// A line chart as a standalone SVG string: data in, text out, no I/O and no
// dependencies, so the benchmarks can draw their own results next to the
// JSON they write and the docs can show them without a browser or a
// plotting library. One y-axis per chart (series of one unit); the y-axis
// starts at zero unless a value is negative, so growth is not exaggerated.

export interface Series {
  name: string;
  /** [x, y] pairs; points with a non-finite coordinate are left out. */
  points: ReadonlyArray<readonly [number, number]>;
}

export interface LineChartSpec {
  title: string;
  /** A second line under the title: what was measured, where, how long. */
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  width?: number;
  height?: number;
}

/** Colour-blind-safe (Okabe–Ito) colours, one per series in order. */
const COLOURS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"];
/** Series with at most this many points also get a dot per point (a sweep of a few sizes). */
const MARKER_LIMIT = 40;

export function escapeXml(s: string): string {
  return s
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

/** Round tick values (1, 2 or 5 × 10^k apart) covering [min, max], about `count` of them. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  if (max === min) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const first = Math.floor(min / step) * step;
  const out: number[] = [];
  for (let v = first; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  if (out[out.length - 1]! < max) out.push(Number((out[out.length - 1]! + step).toPrecision(12)));
  return out;
}

/** A tick label: short (12k, 1.5M) for large values, no float noise for small ones. */
export function formatTick(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(4)));
}

/** About the width of one character at font-size 12 (sans-serif), for wrapping without measuring. */
const CHAR_PX = 6.5;

/** Breaks text into lines of at most `max` characters at "; ", ", " or spaces (a longer word stays whole). */
export function wrap(text: string, max: number): string[] {
  const lines: string[] = [];
  let rest = text.trim();
  while (rest.length > max) {
    const cut = [rest.lastIndexOf("; ", max), rest.lastIndexOf(", ", max), rest.lastIndexOf(" ", max)].find(
      (i) => i > 0,
    );
    if (cut === undefined) break;
    const sep = rest.startsWith("; ", cut) || rest.startsWith(", ", cut) ? 1 : 0;
    lines.push(rest.slice(0, cut + sep).trim());
    rest = rest.slice(cut + sep).trim();
  }
  if (rest.length > 0) lines.push(rest);
  return lines;
}

const fmt = (n: number): string => String(Math.round(n * 10) / 10);

export function lineChart(spec: LineChartSpec): string {
  const width = spec.width ?? 640;
  const height = spec.height ?? 360;
  const series = spec.series.map((s) => ({
    name: s.name,
    points: s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)),
  }));
  const all = series.flatMap((s) => s.points);
  const subtitle = spec.subtitle === undefined ? [] : wrap(spec.subtitle, Math.floor((width - 32) / CHAR_PX));
  const top = 40 + subtitle.length * 16;
  const plot = { left: 64, right: width - 16, top, bottom: height - 72 };
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(spec.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text class="title" x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(spec.title)}</text>`,
  ];
  subtitle.forEach((line, i) => {
    out.push(
      `<text class="subtitle" x="${width / 2}" y="${42 + i * 16}" text-anchor="middle" fill="#555555">${escapeXml(line)}</text>`,
    );
  });

  const xs = all.map(([x]) => x);
  const ys = all.map(([, y]) => y);
  const xTicks = all.length === 0 ? [] : niceTicks(Math.min(...xs), Math.max(...xs));
  const yTicks = all.length === 0 ? [] : niceTicks(Math.min(0, ...ys), Math.max(...ys));
  const [x0, x1] = [xTicks[0] ?? 0, xTicks[xTicks.length - 1] ?? 1];
  const [y0, y1] = [yTicks[0] ?? 0, yTicks[yTicks.length - 1] ?? 1];
  const px = (x: number) => plot.left + ((x - x0) / (x1 - x0 || 1)) * (plot.right - plot.left);
  const py = (y: number) => plot.bottom - ((y - y0) / (y1 - y0 || 1)) * (plot.bottom - plot.top);

  // Grid and tick labels first, so the series are drawn over them.
  const grid: string[] = [];
  for (const t of yTicks) {
    const y = fmt(py(t));
    grid.push(
      `<line x1="${plot.left}" y1="${y}" x2="${plot.right}" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${plot.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${formatTick(t)}</text>`,
    );
  }
  for (const t of xTicks) {
    const x = fmt(px(t));
    grid.push(
      `<line x1="${x}" y1="${plot.bottom}" x2="${x}" y2="${plot.bottom + 4}" stroke="#333333"/>`,
      `<text x="${x}" y="${plot.bottom + 18}" text-anchor="middle">${formatTick(t)}</text>`,
    );
  }
  out.push(`<g class="grid">${grid.join("")}</g>`);
  out.push(
    `<line class="axis x" x1="${plot.left}" y1="${plot.bottom}" x2="${plot.right}" y2="${plot.bottom}" stroke="#333333"/>`,
    `<line class="axis y" x1="${plot.left}" y1="${plot.top}" x2="${plot.left}" y2="${plot.bottom}" stroke="#333333"/>`,
    `<text class="label x" x="${(plot.left + plot.right) / 2}" y="${plot.bottom + 36}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`,
    `<text class="label y" transform="translate(16 ${(plot.top + plot.bottom) / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`,
  );

  if (all.length === 0) {
    out.push(
      `<text class="empty" x="${(plot.left + plot.right) / 2}" y="${(plot.top + plot.bottom) / 2}" text-anchor="middle" fill="#888888">no data</text>`,
    );
  }
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const colour = COLOURS[i % COLOURS.length];
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    const marks =
      pts.length <= MARKER_LIMIT
        ? pts
            .map(([x, y]) => `<circle cx="${fmt(px(x))}" cy="${fmt(py(y))}" r="3" fill="${colour}"/>`)
            .join("")
        : "";
    out.push(
      `<g class="series" data-name="${escapeXml(s.name)}"><polyline fill="none" stroke="${colour}" stroke-width="2" points="${pts
        .map(([x, y]) => `${fmt(px(x))},${fmt(py(y))}`)
        .join(" ")}"/>${marks}</g>`,
    );
  });

  // Legend under the x-axis label, one entry per series (also the empty ones: they were measured as empty).
  let lx = plot.left;
  const ly = height - 14;
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    out.push(
      `<g class="legend"><rect x="${lx}" y="${ly - 9}" width="14" height="4" fill="${colour}"/><text x="${lx + 20}" y="${ly - 4}" dominant-baseline="middle">${escapeXml(s.name)}</text></g>`,
    );
    lx += 28 + s.name.length * 7;
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
