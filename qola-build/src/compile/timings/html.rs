//! The timings page: one HTML file with the timeline as JSON and the script that draws it (SVG),
//! nothing fetched. What a reader sees: the summary line and its figures, a legend of how units
//! ended with counts, the jobs on their slots' lanes over time (units from qola's cache on a lane
//! of their own), jobs running and memory held against the cap, the slowest units with their
//! reasons, and the critical path. When the script has drawn everything it marks the page
//! (`<body data-rendered="yes">`), which the browser test reads.

use super::{Ended, Timeline, load};

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
#summary { font-family: ui-monospace, monospace; font-size: 12px; background: #f4f4f4; padding: 8px; }
dl.figures { display: flex; gap: 24px; margin: 12px 0; }
dl.figures div { background: #f4f4f4; padding: 6px 12px; border-radius: 4px; }
dl.figures dt { font-size: 12px; color: #555; }
dl.figures dd { margin: 0; font-size: 18px; font-weight: 600; }
.legend span { display: inline-block; margin-right: 16px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
svg text { font-size: 11px; fill: #333; }
svg text.bar { font-size: 10px; pointer-events: none; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
td { max-width: 380px; overflow-wrap: anywhere; }
td div.holds { font-size: 11px; color: #555; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
rect.critical, i.critical { stroke: #000; stroke-width: 1.5; outline: 1.5px solid #000; outline-offset: -1.5px; }
i.critical { background: #fff; }
"#;

/// Each way a unit ended (and `shared`, a job of several units) and its colour: a bar's fill and
/// the legend's swatch. A bar's label takes black or white, whichever reads better on it.
const PALETTE: [(&str, &str); 7] = [
    ("compiled", "#4e79a7"),
    ("qola-cache", "#59a14f"),
    ("launcher-cache", "#76b7b2"),
    ("remote-cache", "#edc948"),
    ("distributed", "#b07aa1"),
    ("failed", "#e15759"),
    ("shared", "#bab0ac"),
];

/// WCAG 2's relative luminance of `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let c = u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).expect("a #rrggbb colour");
        let c = f64::from(c) / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2)
}

/// WCAG 2's contrast ratio of two colours (1 to 21; 4.5 is AA for text).
fn contrast(a: &str, b: &str) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The label colour that reads better on `fill`.
fn label_on(fill: &str) -> &'static str {
    match contrast(fill, "#ffffff") >= contrast(fill, "#111111") {
        true => "#ffffff",
        false => "#111111",
    }
}

/// The palette's rules: the fill and swatch of each class, and its labels' colour.
fn palette_style() -> String {
    PALETTE
        .iter()
        .map(|(class, fill)| {
            format!(
                ".{class} {{ fill: {fill}; background: {fill}; }}\nsvg text.bar.{class} {{ fill: {}; }}\n",
                label_on(fill)
            )
        })
        .collect()
}

const SCRIPT: &str = r#"
const D = JSON.parse(document.getElementById('timings').textContent);
const NS = 'http://www.w3.org/2000/svg';
const el = (tag, attrs, text) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const html = (tag, attrs, text) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const secs = s => s >= 100 ? s.toFixed(0) + ' s' : s.toFixed(1) + ' s';
const mib = b => b == null ? '-' : (b / 1048576).toFixed(0) + ' MiB';
const base = p => p.split('/').pop();
// What a unit holds besides itself (a batch's instances), one name a line.
const held = u => u.holds.map(h => '\n  holds ' + base(h)).join('');
const last = Math.max(D.wall, ...D.spans.map(s => s.start + s.seconds), 0.001);
// The axis runs to the first tick at or after the build's end: it covers the whole build.
const step = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200]
  .find(s => last / s <= 12) || 14400;
const end = Math.ceil(last / step - 1e-9) * step;
const W = 1100, LEFT = 110, LANE = 20;
const x = t => LEFT + (W - LEFT - 10) * t / end;
const ticks = () => {
  const out = [];
  for (let k = 0; k * step <= end + 1e-9; k++) out.push(k * step);
  return out;
};

// The figures: how many units ended each way (the legend's words and counts), then the times.
const words = Object.fromEntries(D.endings);
const count = kind => D.units.filter(u => u.ended === kind).length;
const figures = D.endings.filter(([kind]) => count(kind) > 0)
  .map(([kind, w]) => [kind, 'units ' + w, count(kind)])
  .concat([
    ['wall', 'wall time', secs(D.wall)],
    ['jobs', 'at once', D.jobs],
    ['critical', 'critical path', secs(D.critical_seconds)],
  ]);
const dl = document.getElementById('figures');
for (const [key, words, value] of figures) {
  const d = html('div', {'data-figure': key});
  d.append(html('dt', {}, words), html('dd', {}, String(value)));
  dl.append(d);
}

// The legend, with how many units ended each way.
const legend = document.getElementById('legend');
for (const [kind, w] of D.endings) {
  const s = html('span', {'data-ended': kind});
  s.append(html('i', {class: kind}), document.createTextNode(w + ': ' + count(kind)));
  legend.append(s);
}
for (const [kind, w] of [['shared', 'a precompiled header several units share'],
                         ['critical', 'outlined: a job on the critical path']]) {
  const s = html('span', {'data-ended': kind});
  s.append(html('i', {class: kind}), document.createTextNode(w));
  legend.append(s);
}

// The lanes: qola's cache, then each slot.
const slots = Math.max(D.jobs, ...D.spans.map(s => s.slot + 1), 1);
const reused = D.units.map((u, i) => [u, i]).filter(([u]) => u.ended === 'qola-cache');
const lanes = (reused.length ? 1 : 0) + slots;
const timeline = el('svg', {width: W, height: 30 + LANE * lanes, id: 'timeline'});
for (const t of ticks()) {
  timeline.append(el('line', {x1: x(t), x2: x(t), y1: 14, y2: 16 + LANE * lanes, stroke: '#e4e4e4'}));
  // The last tick's label ends at its line, inside the picture.
  const label = t + step > end + 1e-9 ? {x: x(t) - 2, 'text-anchor': 'end', y: 11} : {x: x(t) + 2, y: 11};
  timeline.append(el('text', label, secs(t)));
}
// Where the build ended.
timeline.append(el('line', {x1: x(D.wall), x2: x(D.wall), y1: 14, y2: 16 + LANE * lanes, stroke: '#222',
                            'stroke-dasharray': '2 2', id: 'build-end'}));
let lane = 0;
if (reused.length) {
  timeline.append(el('text', {x: 4, y: 30 + LANE * lane - 6}, "qola's cache"));
  const w = Math.max(1, Math.min(6, (W - LEFT - 10) / reused.length));
  reused.forEach(([u, i], k) => {
    const r = el('rect', {x: LEFT + k * w, y: 16 + LANE * lane, width: Math.max(1, w - 1), height: LANE - 4,
                          class: 'qola-cache', 'data-unit': i, 'data-ended': 'qola-cache'});
    r.append(el('title', {}, u.source + held(u) + '\n' + u.reason));
    timeline.append(r);
  });
  lane += 1;
}
for (let slot = 0; slot < slots; slot++) {
  timeline.append(el('text', {x: 4, y: 30 + LANE * (lane + slot) - 6}, 'slot ' + (slot + 1)));
}
D.spans.forEach((s, i) => {
  const u = s.unit == null ? null : D.units[s.unit];
  const kind = s.failed ? 'failed' : (u ? u.ended : 'shared');
  const attrs = {x: x(s.start), y: 16 + LANE * (lane + s.slot), width: Math.max(1, x(s.start + s.seconds) - x(s.start)),
                 height: LANE - 4, class: kind + (D.critical.includes(i) ? ' critical' : ''), 'data-ended': kind};
  if (s.unit != null) attrs['data-unit'] = s.unit;
  const r = el('rect', attrs);
  r.append(el('title', {}, (u ? u.source + held(u) : 'precompiled header') + '\n' + s.label + ': ' + secs(s.seconds) +
    ', CPU ' + secs(s.cpu) + ', peak ' + mib(s.peak) + (u ? '\n' + u.reason : '')));
  timeline.append(r);
  // The bar's name where it fits.
  const fits = Math.floor((attrs.width - 6) / 6.2);
  if (fits >= 6) {
    const words = (u ? base(u.source) : 'precompiled header') + ' ' + s.label;
    timeline.append(el('text', {x: attrs.x + 3, y: attrs.y + LANE - 8, class: 'bar ' + kind},
      words.length > fits ? words.slice(0, fits - 1) + '…' : words));
  }
});
// Before the first job: resolving the build, generating code, asking the compiler.
const first = Math.min(...D.spans.map(s => s.start));
if (D.spans.length && x(first) - LEFT > 40) {
  timeline.append(el('rect', {x: LEFT, y: 16 + LANE * lane, width: x(first) - LEFT, height: LANE * slots - 4,
                              fill: '#f1f1f1'}));
  timeline.append(el('text', {x: LEFT + 4, y: 16 + LANE * lane + LANE - 8},
                     x(first) - LEFT > 160 ? 'planning, before the first job' : 'planning'));
}
document.getElementById('lanes').append(timeline);

// Jobs running and memory held, against the cap and the memory the cap divided.
const points = D.load;
const chart = (id, value, cap, label, format) => {
  const H = 90, top = Math.max(cap || 0, ...points.map(value), 1);
  const y = v => 10 + (H - 20) * (1 - v / top);
  const svg = el('svg', {width: W, height: H, id});
  let d = 'M' + x(0) + ' ' + y(0);
  for (const p of points) d += ' H' + x(p[0]) + ' V' + y(value(p));
  d += ' H' + x(end);
  svg.append(el('text', {x: 4, y: 20}, label));
  svg.append(el('path', {d, fill: 'none', stroke: '#4e79a7', 'stroke-width': 1.5}));
  if (cap) {
    svg.append(el('line', {x1: LEFT, x2: x(end), y1: y(cap), y2: y(cap), stroke: '#e15759', 'stroke-dasharray': '4 3'}));
    svg.append(el('text', {x: x(end) - 160, y: y(cap) - 3}, 'cap: ' + format(cap)));
  }
  svg.append(el('text', {x: 4, y: H - 6}, 'peak: ' + format(Math.max(...points.map(value)))));
  return svg;
};
document.getElementById('load').append(
  chart('jobs-chart', p => p[1], D.jobs, 'jobs running', v => String(v)),
  chart('memory-chart', p => p[2], D.memory, 'memory held', mib));

// The slowest units.
const slow = document.getElementById('slowest');
const rows = D.units.map((u, i) => [u, i]).filter(([u]) => u.ended !== 'qola-cache')
  .sort((a, b) => b[0].seconds - a[0].seconds).slice(0, 25);
for (const [u, i] of rows) {
  const tr = html('tr', {'data-unit': i});
  const source = html('td', {title: u.source}, base(u.source));
  for (const name of u.holds) source.append(html('div', {class: 'holds'}, base(name)));
  tr.append(source, html('td', {}, words[u.ended]),
            html('td', {class: 'n'}, secs(u.seconds)), html('td', {class: 'n'}, secs(u.cpu)),
            html('td', {class: 'n'}, mib(u.peak)), html('td', {}, u.passes), html('td', {}, u.reason));
  slow.append(tr);
}

// The critical path.
const path = document.getElementById('critical');
for (const i of D.critical) {
  const s = D.spans[i];
  const u = s.unit == null ? null : D.units[s.unit];
  path.append(html('li', {}, (u ? base(u.source) : 'precompiled header') + ': ' + s.label + ', ' + secs(s.seconds)));
}
document.getElementById('critical-words').textContent =
  'The longest chain of jobs each waiting for the one before: ' + secs(D.critical_seconds) +
  ' of the build\'s ' + secs(D.wall) + ' wall time (more slots could not make the build shorter than this).';
document.body.dataset.rendered = 'yes';
"#;

/// Text safe inside HTML elements.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The page of `timeline`.
pub(super) fn page(timeline: &Timeline) -> String {
    let endings: Vec<(Ended, &str)> = Ended::ALL.iter().map(|e| (*e, e.words())).collect();
    let mut data = serde_json::to_value(timeline).expect("a timeline is JSON");
    data["endings"] = serde_json::to_value(endings).expect("endings are JSON");
    data["load"] = serde_json::to_value(load(&timeline.spans)).expect("the load is JSON");
    // Inside <script>, `</` could end the element: JSON allows `<\/`.
    let data = data.to_string().replace("</", "<\\/");
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>qola timings: {library}</title>
<style>{STYLE}{palette}</style>
</head>
<body>
<h1>qola timings: {library}</h1>
<p id="summary">{summary}</p>
<dl class="figures" id="figures"></dl>
<h2>Units over time, by slot</h2>
<div class="legend" id="legend"></div>
<div id="lanes"></div>
<h2>Jobs running and memory held</h2>
<p>{jobs_reason}. Each job holds its measured peak for its whole span (an upper bound).</p>
<div id="load"></div>
<h2>The slowest units</h2>
<table>
<thead><tr><th>source</th><th>ended</th><th>wall</th><th>CPU</th><th>peak</th><th>how</th><th>why</th></tr></thead>
<tbody id="slowest"></tbody>
</table>
<h2>The critical path</h2>
<p id="critical-words"></p>
<ol id="critical"></ol>
<script type="application/json" id="timings">{data}</script>
<script>{SCRIPT}</script>
</body>
</html>
"#,
        library = escape(&timeline.library),
        summary = escape(&timeline.summary),
        jobs_reason = escape(&timeline.jobs_reason),
        palette = palette_style(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bar_label_reads_on_its_colour_at_wcag_aa() {
        for (class, fill) in PALETTE {
            let ratio = contrast(fill, label_on(fill));
            assert!(
                ratio >= 4.5,
                "{class}: {fill} with {} is {ratio:.2}",
                label_on(fill)
            );
        }
        // The yellow of remote storage takes black, not white (white is 1.8 there).
        assert_eq!(label_on("#edc948"), "#111111");
        assert!(contrast("#edc948", "#ffffff") < 2.0);
    }

    #[test]
    fn every_way_a_unit_ends_has_a_colour() {
        for ended in Ended::ALL {
            let class = serde_json::to_value(ended).unwrap();
            assert!(
                PALETTE.iter().any(|(c, _)| class == *c),
                "{class} has no colour"
            );
        }
    }
}
