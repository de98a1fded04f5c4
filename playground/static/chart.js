// chart.js: draws backtest series as an inline SVG line chart. Colours come from style.css
// (classes series-0 … series-5), since the page allows no inline styles.

import { h, s } from './dom.js';

const W = 600;
const H = 240;
const PAD = { left: 56, right: 16, top: 14, bottom: 30 };

// lineChart draws series [{name, points: [[x, y], …]}]. x may be a number or a date string;
// when any x is not a number the points are spaced evenly in their order.
export function lineChart(series, title) {
  const numericX = series.every((se) => se.points.every((p) => typeof p[0] === 'number'));
  const xy = series.map((se) => se.points.map((p, i) => [numericX ? p[0] : i, p[1]]));
  const all = xy.flat();
  const [x0, x1] = extent(all.map((p) => p[0]));
  const [y0, y1] = extent(all.map((p) => p[1]));
  const sx = (x) => PAD.left + ((x - x0) / (x1 - x0 || 1)) * (W - PAD.left - PAD.right);
  const sy = (y) => H - PAD.bottom - ((y - y0) / (y1 - y0 || 1)) * (H - PAD.top - PAD.bottom);

  const chart = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title ?? 'chart' },
    s('title', {}, title ?? series.map((se) => se.name).join(', ')),
    yAxis(y0, y1, sy),
    s('line', { class: 'axis', x1: PAD.left, y1: H - PAD.bottom, x2: W - PAD.right, y2: H - PAD.bottom }),
    s('text', { class: 'tick', x: PAD.left, y: H - 8 }, label(series[0].points[0][0])),
    s('text', { class: 'tick end', x: W - PAD.right, y: H - 8 }, label(series[0].points.at(-1)[0])),
    xy.map((pts, i) => seriesPath(pts, i, sx, sy, series[i])));
  const legend = h('ul', { class: 'legend' },
    series.map((se, i) => h('li', { class: `series-${i % 6}` }, se.name)));
  return h('figure', { class: 'chart-figure' }, chart, legend);
}

function seriesPath(pts, i, sx, sy, se) {
  const d = pts.map(([x, y], j) => `${j ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
  const dots = pts.length <= 60
    ? pts.map(([x, y], j) => s('circle', { class: 'dot', cx: sx(x).toFixed(1), cy: sy(y).toFixed(1), r: 2.5 },
      s('title', {}, `${se.name}: ${label(se.points[j][0])} → ${label(y)}`)))
    : [];
  return s('g', { class: `series series-${i % 6}` }, s('path', { d }), dots);
}

function yAxis(y0, y1, sy) {
  const ticks = [y0, (y0 + y1) / 2, y1];
  return s('g', { class: 'y-axis' },
    s('line', { class: 'axis', x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: H - PAD.bottom }),
    ticks.map((t) => [
      s('line', { class: 'grid', x1: PAD.left, y1: sy(t), x2: W - PAD.right, y2: sy(t) }),
      s('text', { class: 'tick end', x: PAD.left - 6, y: sy(t) + 4 }, label(t)),
    ]));
}

function extent(values) {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? [lo - 1, hi + 1] : [lo, hi];
}

function label(v) {
  return typeof v === 'number' ? String(Math.round(v * 100) / 100) : String(v);
}
