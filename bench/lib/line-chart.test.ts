import { describe, expect, it } from "vitest";
import { escapeXml, formatTick, lineChart, niceTicks, wrap } from "./line-chart.ts";

const count = (svg: string, needle: string): number => svg.split(needle).length - 1;

/** Every element opened is closed (or self-closing), in order: a cheap well-formedness check. */
function balanced(svg: string): boolean {
  const stack: string[] = [];
  for (const m of svg.matchAll(/<(\/?)([a-z]+)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing === "/") continue;
    if (closing === "/") {
      if (stack.pop() !== name) return false;
    } else stack.push(name!);
  }
  return stack.length === 0;
}

describe("lineChart", () => {
  const spec = {
    title: "Soak: accepted rate",
    subtitle: "60 s at 70% of the maximum",
    xLabel: "time (s)",
    yLabel: "req/s",
    series: [
      {
        name: "accepted",
        points: [
          [10, 2500],
          [20, 2600],
          [30, 2550],
        ] as Array<[number, number]>,
      },
      {
        name: "offered",
        points: [
          [10, 2585],
          [30, 2585],
        ] as Array<[number, number]>,
      },
    ],
  };

  it("draws both axes, their labels, one polyline per series and a legend entry each", () => {
    const svg = lineChart(spec);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(count(svg, 'class="axis x"')).toBe(1);
    expect(count(svg, 'class="axis y"')).toBe(1);
    expect(svg).toContain(">time (s)</text>");
    expect(svg).toContain(">req/s</text>");
    expect(count(svg, "<polyline")).toBe(2);
    expect(count(svg, 'class="legend"')).toBe(2);
    expect(svg).toContain('data-name="accepted"');
    expect(svg).toContain('data-name="offered"');
    // Few points: a dot on each.
    expect(count(svg, "<circle")).toBe(5);
    expect(svg).not.toContain('class="empty"');
    expect(balanced(svg)).toBe(true);
  });

  it("starts the y-axis at zero and covers the largest value", () => {
    const svg = lineChart(spec);
    const yLabels = [...svg.matchAll(/text-anchor="end" dominant-baseline="middle">([^<]+)</g)].map(
      (m) => m[1],
    );
    expect(yLabels[0]).toBe("0");
    expect(yLabels.at(-1)).toBe("3000");
  });

  it("plots points inside the plot area, in x order", () => {
    const svg = lineChart({
      ...spec,
      series: [
        {
          name: "s",
          points: [
            [30, 1],
            [10, 3],
            [20, 2],
          ],
        },
      ],
    });
    const pts = /points="([^"]+)"/
      .exec(svg)![1]!
      .split(" ")
      .map((p) => p.split(",").map(Number));
    expect(pts).toHaveLength(3);
    const xs = pts.map((p) => p[0]!);
    expect([...xs].sort((a, b) => a - b)).toEqual(xs);
    for (const [x, y] of pts) {
      expect(x).toBeGreaterThanOrEqual(64);
      expect(x).toBeLessThanOrEqual(624);
      expect(y).toBeGreaterThanOrEqual(56);
      expect(y).toBeLessThanOrEqual(288);
    }
  });

  it("escapes markup in every piece of text it is given", () => {
    const svg = lineChart({
      title: "a <b> & 'c'",
      subtitle: '"quoted"',
      xLabel: "x<",
      yLabel: "y&",
      series: [{ name: "</text><script>", points: [[0, 1]] }],
    });
    expect(svg).not.toContain("<b>");
    expect(svg).not.toContain("<script>");
    expect(svg).toContain("a &lt;b&gt; &amp; &apos;c&apos;");
    expect(svg).toContain("&quot;quoted&quot;");
    expect(svg).toContain("&lt;/text&gt;&lt;script&gt;");
    expect(balanced(svg)).toBe(true);
  });

  it("with no data draws the axes and says so, without a polyline", () => {
    for (const series of [[], [{ name: "empty", points: [] }]]) {
      const svg = lineChart({ ...spec, series });
      expect(count(svg, 'class="axis x"')).toBe(1);
      expect(count(svg, 'class="axis y"')).toBe(1);
      expect(count(svg, "<polyline")).toBe(0);
      expect(svg).toContain(">no data</text>");
      expect(svg).not.toContain("NaN");
      expect(balanced(svg)).toBe(true);
    }
  });

  it("leaves out non-finite points and draws a single point without NaN", () => {
    const svg = lineChart({
      ...spec,
      series: [
        {
          name: "one",
          points: [
            [5, 7],
            [Number.NaN, 1],
            [6, Number.POSITIVE_INFINITY],
          ],
        },
      ],
    });
    expect(count(svg, "<circle")).toBe(1);
    expect(svg).not.toContain("NaN");
    expect(svg).not.toContain("Infinity");
  });
});

describe("niceTicks", () => {
  it("steps by 1, 2 or 5 times a power of ten and covers the range", () => {
    expect(niceTicks(0, 100)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(0, 2603)).toEqual([0, 1000, 2000, 3000]);
    expect(niceTicks(0, 2400)).toEqual([0, 500, 1000, 1500, 2000, 2500]);
    expect(niceTicks(0.2, 0.9)).toEqual([0.2, 0.4, 0.6, 0.8, 1]);
    const t = niceTicks(13, 617);
    expect(t[0]).toBeLessThanOrEqual(13);
    expect(t.at(-1)).toBeGreaterThanOrEqual(617);
  });

  it("widens a zero-width range and refuses non-finite bounds", () => {
    expect(niceTicks(5, 5).length).toBeGreaterThan(1);
    expect(niceTicks(0, 0).length).toBeGreaterThan(1);
    expect(niceTicks(0, Number.NaN)).toEqual([]);
  });
});

describe("formatTick and escapeXml", () => {
  it("shortens large numbers and trims float noise", () => {
    expect(formatTick(85_200)).toBe("85.2k");
    expect(formatTick(1_500_000)).toBe("1.5M");
    expect(formatTick(0.1 + 0.2)).toBe("0.3");
    expect(formatTick(2500)).toBe("2500");
  });

  it("escapes the five XML special characters", () => {
    expect(escapeXml(`<&>"'`)).toBe("&lt;&amp;&gt;&quot;&apos;");
  });
});

describe("wrap", () => {
  it("breaks a long subtitle at separators, keeping every word, and a short one whole", () => {
    const note =
      "kill -9 with 0.25, 0.5, 1 GiB in the data dir, a fresh broker each; 2026-12-03, 2 × AMD EPYC, load average 23.5";
    const lines = wrap(note, 60);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(60);
    expect(lines.join(" ").replace(/\s+/g, " ")).toBe(note);
    expect(wrap("short", 60)).toEqual(["short"]);
  });

  it("a long subtitle takes more lines in the chart, all inside its width", () => {
    const svg = lineChart({
      title: "t",
      subtitle: "word ".repeat(60).trim(),
      xLabel: "x",
      yLabel: "y",
      series: [{ name: "s", points: [[0, 1]] }],
    });
    expect(svg.split('class="subtitle"').length - 1).toBeGreaterThan(1);
  });
});
