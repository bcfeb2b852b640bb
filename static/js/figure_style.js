// Every chart of the app is drawn through plot(): one Plotly template and a colour per concept
// (webapp/site_pages/figure_style.py, read from base.html's <script id="figure-style">), readable log axes,
// and a text alternative for screen readers.
import { chartLabel } from "./chart_labels.js";
import { track } from "./settled.js";

const node = document.getElementById("figure-style");
const STYLE = node ? JSON.parse(node.textContent) : { colors: {}, colorway: [], template: { layout: {} } };
const CONFIG = { responsive: true, displaylogo: false };

export const COLORS = STYLE.colors;
// Attention weights, 0 light to 1 dark, on every heatmap of them.
export const WEIGHT_SCALE = STYLE.weight_scale;

const SUPERSCRIPT = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };

// 0.02, 0.5, 3, 2×10⁻⁵: plain decimals where they stay short, powers of ten beyond (never 1μ, 1n, 1p).
export function logTickText(value) {
  const exponent = Math.floor(Math.log10(value) + 1e-9);
  const mantissa = Math.round(value / 10 ** exponent);
  if (exponent >= -3 && exponent <= 4) return String(Number(value.toPrecision(1)));
  const power = `10${String(exponent).replace(/./g, (c) => SUPERSCRIPT[c])}`;
  return mantissa === 1 ? power : `${mantissa}×${power}`;
}

// Ticks at 1, 2 and 5 of each decade the data span (only the powers of ten over many decades).
function logTicks(values) {
  const positive = values.filter((v) => typeof v === "number" && v > 0 && Number.isFinite(v));
  if (!positive.length) return null;
  const low = Math.floor(Math.log10(Math.min(...positive)));
  const high = Math.ceil(Math.log10(Math.max(...positive)));
  const steps = high - low > 4 ? [1] : [1, 2, 5];
  const ticks = [];
  for (let e = low; e <= high; e += 1) for (const m of steps) ticks.push(m * 10 ** e);
  const min = Math.min(...positive) / 1.5;
  const max = Math.max(...positive) * 1.5;
  const shown = ticks.filter((t) => t >= min && t <= max);
  return { tickvals: shown, ticktext: shown.map(logTickText) };
}

function axisValues(data, axisName) {
  const letter = axisName[0]; // "x" or "y"
  const id = axisName.length > 5 ? `${letter}${axisName.slice(5)}` : letter; // yaxis2 -> y2
  return data.filter((trace) => (trace[`${letter}axis`] || letter) === id)
    .flatMap((trace) => (Array.isArray(trace[letter]) ? trace[letter].flat(2) : []));
}

function styleAxes(data, layout) {
  for (const name of Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key))) {
    const axis = layout[name];
    if (axis.type === "log" && !axis.tickvals) Object.assign(axis, logTicks(axisValues(data, name)) || {});
    // One point (a single validation at step 200): an axis from 0, not one from 199 to 201 (and it still suits
    // the points a live chart adds later).
    const values = [...new Set(axisValues(data, name).filter((v) => typeof v === "number"))];
    if (name.startsWith("x") && values.length === 1 && values[0] > 0 && !axis.tickvals && !axis.range) {
      axis.rangemode = "tozero";
    }
  }
}

function titleText(title) {
  return typeof title === "string" ? title : title?.text || "";
}

// What a screen reader says for the chart: its title, its axes and its series.
export function describe(data, layout, alt = "") {
  const axes = Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key))
    .map((key) => titleText(layout[key].title)).filter(Boolean);
  const names = data.map((trace) => trace.name).filter(Boolean);
  return [alt || titleText(layout.title), axes.length ? axes.join(" · ") : "", names.join(", ")]
    .filter(Boolean).join(". ");
}

// Plotly draws a subset of HTML in every label it writes (<a href>, <span style>, <b>, <br>, <sub>…), so a string a
// user typed (a student's answer, a token, a name) would be drawn as markup. plotText() writes & < > as entities,
// which Plotly shows as the characters themselves: the text, never a link or a style.
export function plotText(value) {
  return typeof value === "string" ? value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;") : value;
}

// The keys whose strings Plotly draws as text: values and category labels, names, titles, tick and hover text,
// annotations. Templates (hovertemplate, texttemplate) are the page's own words and keep their markup.
const TEXT_KEYS = new Set(["x", "y", "text", "name", "title", "ticktext", "hovertext", "customdata", "labels", "header",
                           "values"]);

// A copy of a figure's data or layout with every string under TEXT_KEYS passed through plotText.
export function plotTexts(value, drawn = false) {
  if (typeof value === "string") return drawn ? plotText(value) : value;
  if (Array.isArray(value)) return value.map((item) => plotTexts(item, drawn));
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plotTexts(item, drawn || TEXT_KEYS.has(key))]));
  }
  return value;
}

// Below this width (a phone) the chart has no toolbar: it would sit on the title, and a page zooms by pinching.
const NARROW_PX = 600;
const TITLE_PX = 18; // Plotly's title size: 1.4 × the template's 13 px
const AXIS_PX = 16; // an axis title's: 1.2 × 13 px
const ANNOTATION_PX = 13; // an annotation's: the template's size
const CJK = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]/;

// About how wide `text` (escaped: &lt; is one character) is drawn at `px` pixels: a Chinese character takes the full
// size, any other about half of it.
function textWidth(text, px) {
  return [...text.replace(/&[a-z]+;/g, "x")].reduce((sum, c) => sum + (CJK.test(c) ? 1 : 0.55), 0) * px;
}

// Lines of at most `room` pixels, broken between words (or between Chinese characters): Plotly neither wraps nor
// shrinks a title, it cuts both ends off. `text` is escaped already (&lt; counts as one character).
export function wrapTitle(text, room, px = TITLE_PX) {
  const units = text.match(/[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef][，。：；、）」]?|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]+|\s+/g) || [];
  const width = (unit) => textWidth(unit, px);
  const lines = [];
  let line = "";
  for (const unit of units) {
    if (/^\s+$/.test(unit)) { if (line) line += " "; continue; }
    if (line.trim() && width(line + unit) > room) { lines.push(line.trim()); line = ""; }
    line += unit;
  }
  if (line.trim()) lines.push(line.trim());
  return lines;
}

function fitTitle(layout, width, toolbar) {
  const title = layout.title;
  const text = typeof title === "string" ? title : title?.text;
  if (!text || !width) return;
  const room = width - 24 - (toolbar ? 160 : 0); // the toolbar takes the top right corner when it shows
  const lines = wrapTitle(text, room);
  layout.title = { ...(typeof title === "object" ? title : {}), text: lines.join("<br>"), x: 0.02, xanchor: "left",
                   // Plotly anchors a wrapped title by its first line: the lines below it push the top out.
                   y: 1, yref: "container", yanchor: "top", pad: { t: 10 + 18 * (lines.length - 1) } };
  const top = 20 + 24 * lines.length;
  layout.margin = { ...(layout.margin || {}), t: Math.max(layout.margin?.t || 0, top + 10) };
}

// An axis title longer than its side of the plot: Plotly neither wraps nor shrinks it, and a long y-axis title runs
// out of the chart at the top and the bottom. What to change so that each axis title fits its side of the plot (a
// subplot's share of it, by its domain), in lines: each axis's title text, and a legend below the plot (the
// template's, at y -0.22) moved down by the lines the x-axis title gained. `titles`: each axis's title, unbroken.
function axisTitleUpdates(layout, titles, sides, legendOwn) {
  const updates = {};
  for (const [name, text] of Object.entries(titles)) {
    const domain = layout[name].domain || [0, 1];
    const room = Math.max(60, sides[name[0]] * (domain[1] - domain[0]));
    const lines = textWidth(text, AXIS_PX) <= room ? [text] : wrapTitle(text, room, AXIS_PX);
    if (lines.join("<br>") !== titleText(layout[name].title)) updates[`${name}.title.text`] = lines.join("<br>");
    if (name === "xaxis" && !legendOwn && sides.y > 0) {
      const y = -0.22 - (lines.length - 1) * AXIS_PX * 1.3 / sides.y;
      if (Math.abs(y - (layout.legend?.y ?? -0.22)) > 1e-3) updates["legend.y"] = y;
    }
  }
  return updates;
}

function applyUpdates(layout, updates) {
  for (const [path, value] of Object.entries(updates)) {
    const [name, ...rest] = path.split(".");
    layout[name] = { ...(layout[name] || {}) };
    let node = layout[name];
    for (const key of rest.slice(0, -1)) node = node[key] = typeof node[key] === "object" ? { ...node[key] } : {};
    node[rest[rest.length - 1]] = value;
  }
}

// First from the chart's size less the margins (so the chart is drawn right at once, mostly), then from the plot's
// size as Plotly laid it out, its margins grown for ticks, legends and titles.
function fitAxisTitles(div, layout, width, height) {
  const titles = Object.fromEntries(Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key))
    .map((key) => [key, titleText(layout[key].title)]).filter(([, text]) => text && !text.includes("<br>")));
  if (!Object.keys(titles).length) return () => undefined;
  const margin = { l: 80, r: 80, t: 100, b: 80, ...(layout.margin || {}) };
  const legendOwn = layout.legend?.y !== undefined; // a legend the figure placed itself stays where it is
  applyUpdates(layout, axisTitleUpdates(layout, titles, { x: width - margin.l - margin.r,
                                                          y: (layout.height || height) - margin.t - margin.b }, legendOwn));
  return () => {
    const size = div._fullLayout?._size;
    if (!size) return undefined;
    const updates = axisTitleUpdates(layout, titles, { x: size.w, y: size.h }, legendOwn);
    if (!Object.keys(updates).length) return undefined;
    applyUpdates(layout, updates);
    return Plotly.relayout(div, updates);
  };
}

// Subplot titles (annotations side by side above the plot, as every head of a layer): each one broken into lines
// where it is wider than the room between it and its neighbours, once the plot's width is known (a colour bar and
// the margins take their share of a phone's); the top margin grows by the lines they gained.
function fitAnnotations(div, layout) {
  const notes = (layout.annotations || []).map((note, i) => ({ note, i }))
    .filter(({ note }) => note.xref === "paper" && note.yref === "paper" && typeof note.text === "string");
  if (notes.length < 2) return () => undefined;
  const texts = notes.map(({ note }) => note.text);
  return () => {
    const width = div._fullLayout?._size?.w;
    if (!width) return undefined;
    const updates = {};
    let gained = 0;
    notes.forEach(({ note, i }, k) => {
      const row = notes.filter((other) => other.note.y === note.y && other.i !== i);
      const gap = Math.min(...row.map((other) => Math.abs(other.note.x - note.x)), 1) * width;
      const room = Math.max(20, gap - 6);
      const lines = textWidth(texts[k], ANNOTATION_PX) <= room ? [texts[k]] : wrapTitle(texts[k], room, ANNOTATION_PX);
      if (lines.join("<br>") !== note.text) updates[`annotations[${i}].text`] = lines.join("<br>");
      gained = Math.max(gained, lines.length - 1);
    });
    if (!Object.keys(updates).length) return undefined;
    if (gained) updates["margin.t"] = (div._fullLayout.margin?.t ?? layout.margin?.t ?? 100) + gained * ANNOTATION_PX * 1.3;
    return Plotly.relayout(div, updates);
  };
}

// A legend below the plot that the x axis title runs into (tick labels turned to fit long category names push the
// title down, a phone's short plot brings the legend up): moved down past the title, as drawn.
function clearLegend(div, tries = 3) {
  const legend = div.querySelector(".legend")?.getBoundingClientRect();
  const title = div.querySelector(".xtitle")?.getBoundingClientRect();
  const size = div._fullLayout?._size;
  const height = size?.h;
  if (!legend?.height || !title?.height || !height) return undefined;
  const below = div.getBoundingClientRect().top + size.t + height - 1; // the plot area's bottom edge
  if (legend.top < below || title.top < below) return undefined; // only a legend and a title both under the plot
  const across = legend.left < title.right && title.left < legend.right;
  const overlap = title.bottom + 4 - legend.top;
  if (!across || overlap <= 0) return undefined;
  // The legend's room comes out of the plot's height, which moves the title: measured again after each move.
  return Plotly.relayout(div, { "legend.y": (div._fullLayout.legend?.y ?? -0.22) - overlap / height,
                                "legend.yanchor": "top" }).then(() => (tries > 1 ? clearLegend(div, tries - 1) : undefined));
}

// Plotly itself: a global the page loads. A page that loads it `async` (the console's: its socket and its words come
// first, the library after) draws once it has run; one that only preloads it (a student's live session: on a phone the
// charts sit below the fold, and running the library costs the throttled main thread a second) runs it when the first
// chart needs it; the others have it already.
let loading = null;

export function plotlyLoaded() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (loading) return loading;
  let script = document.querySelector("script[data-plotly]");
  if (!script) {
    const preload = document.querySelector("link[data-plotly]");
    if (!preload) return Promise.reject(new Error("this page loads no Plotly"));
    script = Object.assign(document.createElement("script"), { src: preload.href, async: true });
    script.dataset.plotly = "";
    document.head.append(script);
  }
  loading = new Promise((resolve, reject) => {
    script.addEventListener("load", () => resolve(window.Plotly), { once: true });
    script.addEventListener("error", () => { loading = null; reject(new Error("Plotly did not load")); }, { once: true });
    if (window.Plotly) resolve(window.Plotly); // it ran between the first look and the listeners
  });
  return loading;
}

// Plotly run ahead of need, so a reader who then scrolls to a chart waits for the drawing only. On a wide screen at
// once: the room's charts are mostly in view, and running the library overlaps the fetch of the room's fragments. On
// a narrow one (a phone, whose charts sit below the fold and whose main thread is slow) once the page has settled
// (what it started is on screen) and the main thread is idle.
export function plotlySoon() {
  if (window.Plotly || loading) return;
  if (window.innerWidth >= NARROW_PX) {
    plotlyLoaded().catch(() => {});
    return;
  }
  const idle = () => (window.requestIdleCallback
    ? requestIdleCallback(() => plotlyLoaded().catch(() => {}), { timeout: 2000 })
    : setTimeout(() => plotlyLoaded().catch(() => {}), 200));
  const root = document.documentElement;
  if (root.dataset.settled === "yes") { idle(); return; }
  const watch = new MutationObserver(() => {
    if (root.dataset.settled !== "yes") return;
    watch.disconnect();
    idle();
  });
  watch.observe(root, { attributes: true, attributeFilter: ["data-settled"] });
}

export function plot(element, data, layout = {}, { alt = "", config = {} } = {}) {
  if (!window.Plotly) return track(plotlyLoaded().then(() => plot(element, data, layout, { alt, config })));
  const div = typeof element === "string" ? document.getElementById(element) : element;
  const styled = { ...plotTexts(layout), template: STYLE.template };
  styleAxes(data, styled);
  const narrow = (div.clientWidth || window.innerWidth) < NARROW_PX;
  const settings = { ...CONFIG, ...(narrow ? { displayModeBar: false } : {}), ...config };
  fitTitle(styled, div.clientWidth || window.innerWidth, settings.displayModeBar !== false);
  const refit = fitAxisTitles(div, styled, div.clientWidth || window.innerWidth, div.clientHeight || 360);
  const refitNotes = fitAnnotations(div, styled);
  div.setAttribute("role", "img");
  div.setAttribute("aria-label", describe(data, layout, alt));
  return track(Plotly.react(div, plotTexts(data), styled, settings).then(refit).then(refitNotes)
    .then(() => clearLegend(div)).then(() => div));
}

// A colour for a concept the data names (an arm's label, a metric's key), or none to take the colourway's next.
export function colorOf(concept) {
  return COLORS[concept];
}

// Every figure set under root (a .figure-set: its figures as JSON once, one .plot[data-figure] each):
// each plot drawn once; a plot whose figure the set lacks is hidden. Experiments and lesson pages.
// The plots in view (or about to be) are drawn at once. The others: with `lazy`, each as it scrolls near the view (a
// live session's screen: a demonstration is thousands of pixels tall on a phone, and a late joiner reads the top
// first); without, one at a time after them, each in a task of its own, so the page stays responsive. Returns when
// the plots drawn now are.
const NEAR_PX = 400;
let nearby = null; // one IntersectionObserver for every lazy plot: div -> its figure
const lazyFigures = new WeakMap();

function drawWhenNear(div, figure) {
  nearby ??= new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      nearby.unobserve(entry.target);
      const waiting = lazyFigures.get(entry.target);
      lazyFigures.delete(entry.target);
      if (waiting && entry.target.isConnected) plot(entry.target, waiting.data, waiting.layout);
    }
  }, { rootMargin: `${NEAR_PX}px 0px` });
  lazyFigures.set(div, figure);
  nearby.observe(div);
}

export function drawFigureSets(root, { lazy = false } = {}) {
  const sets = root.matches?.(".figure-set") ? [root] : [...root.querySelectorAll(".figure-set")];
  const pending = [];
  for (const set of sets) {
    const data = set.querySelector(":scope > script[type='application/json']");
    if (!data) continue;
    const figures = JSON.parse(data.textContent);
    for (const div of set.querySelectorAll(".plot[data-figure]")) {
      const figure = figures[div.dataset.figure];
      if (!figure) { div.hidden = true; continue; }
      if (div.dataset.drawn) continue;
      div.dataset.drawn = "1";
      pending.push([div, figure]);
    }
  }
  const near = (div) => {
    const box = div.getBoundingClientRect();
    return box.bottom > -NEAR_PX && box.top < window.innerHeight + NEAR_PX;
  };
  const now = pending.filter(([div]) => near(div));
  const later = pending.filter(([div]) => !near(div));
  const drawn = now.map(([div, figure]) => plot(div, figure.data, figure.layout));
  if (lazy) {
    later.forEach(([div, figure]) => drawWhenNear(div, figure));
    return track(Promise.all(drawn));
  }
  const rest = later.reduce((before, [div, figure]) => before.then(() => new Promise((resolve) => {
    setTimeout(() => resolve(plot(div, figure.data, figure.layout)), 0);
  })), Promise.all(drawn));
  return track(rest);
}

// A training run's loss, live (experiment and lesson run panels): the element, rendered hidden, is shown and drawn at
// the first point; each arm gets its series (its label and colour) when its first point comes, and the text
// alternative then names it. Returns add(arm, step, loss).
export function liveLoss(element, layout) {
  const arms = new Map(); // arm -> trace index
  return (arm, step, loss) => {
    if (element.hidden) {
      element.hidden = false;
      plot(element, [], layout);
    }
    if (!arms.has(arm)) {
      arms.set(arm, arms.size);
      Plotly.addTraces(element, { x: [], y: [], mode: "lines", name: plotText(chartLabel(arm)), line: { color: colorOf(arm) } });
      element.setAttribute("aria-label", describe(element.data, layout));
    }
    Plotly.extendTraces(element, { x: [[step]], y: [[loss]] }, [arms.get(arm)]);
  };
}
