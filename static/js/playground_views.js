// The playground's Plotly views; each grows with every step of the request being shown.
import { COLORS, plot, WEIGHT_SCALE } from "./figure_style.js";
import { track } from "./settled.js";

const CONFIG = { displayModeBar: false };
const MARGIN = { l: 80, r: 10, t: 10, b: 60 };
const ACCENT = COLORS.chosen || "#2f6fde";
const OTHER = COLORS.other || "#aab4c5";

// -- compact attention (docs/protocol.md, "Attention"): one view, one byte per weight, base64 ---------------

// base64 of bytes -> the weights, byte / scale (the frame states the scale: 255, so each is within 1/510).
export function decodeWeights(data, scale) {
  const bytes = atob(data);
  const weights = new Array(bytes.length);
  for (let i = 0; i < bytes.length; i += 1) weights[i] = bytes.charCodeAt(i) / scale;
  return weights;
}

// A token frame's (or a beam's) `attention` -> { self: [T weights], cross: [S weights] }, decoded once.
export function stepAttention(attention) {
  if (!attention.decoded) {
    attention.decoded = { self: decodeWeights(attention.self, attention.scale),
                          cross: decodeWeights(attention.cross, attention.scale) };
  }
  return attention.decoded;
}

// A `start` (or `attention`) frame's `encoder_attention` -> S rows of S weights.
export function encoderAttention(encoder) {
  if (!encoder.decoded) {
    const flat = decodeWeights(encoder.weights, encoder.scale);
    encoder.decoded = Array.from({ length: encoder.size }, (_, r) => flat.slice(r * encoder.size, (r + 1) * encoder.size));
  }
  return encoder.decoded;
}

// Whether an attention object (decoder rows or the encoder's matrix) holds this layer and head.
export function showsView(attention, layer, head) {
  return Boolean(attention) && attention.layer === layer && String(attention.head) === String(head);
}

// An `attention` frame (the answer to `view`) put in place: each step's rows, each beam's, and the encoder's.
export function applyAttentionFrame(request, frame) {
  frame.steps.forEach((rows, k) => {
    const step = request.steps[k];
    if (!step) return;
    if (Array.isArray(rows)) step.beams.forEach((beam, i) => { beam.attention = rows[i]; });
    else step.attention = rows;
  });
  if (frame.encoder_attention) request.start.encoder_attention = frame.encoder_attention;
}

// Beam search: the beams, one per step, of the hypothesis the output shows. Once done, that is the best
// finished hypothesis (found by its ids, parent by parent); before, the best live beam traced back.
export function beamPath(steps, done) {
  if (done?.ids?.length && done.ids.length <= steps.length) {
    let reach = [0]; // beam indices of the previous step on a path that matches the ids so far
    const back = [];
    done.ids.forEach((id, k) => {
      const here = new Map();
      steps[k].beams.forEach((beam, i) => {
        if (beam.id === id && (k === 0 || reach.includes(beam.parent))) here.set(i, beam.parent);
      });
      back.push(here);
      reach = [...here.keys()];
    });
    if (reach.length) return follow(steps, back, done.ids.length - 1, reach[0]);
  }
  const last = steps.length - 1;
  return last < 0 ? [] : follow(steps, null, last, 0);
}

function follow(steps, back, k, index) {
  const path = [];
  for (let s = k, i = index; s >= 0; s -= 1) {
    const beam = steps[s].beams[i];
    path.unshift(beam);
    i = back ? back[s].get(i) : beam.parent;
  }
  return path;
}

// The rows the attention views draw: each token frame, or the beams of the shown hypothesis.
function shownRows(request) {
  const steps = request.steps;
  if (request.start.params.strategy !== "beam") return steps;
  return beamPath(steps, request.done).map((beam, k) => ({ token: beam.token, attention: beam.attention, seq: steps[k].seq }));
}

function attentionOf(step) {
  return step.attention;
}

function stepToken(step) {
  return step.token;
}

// A view whose layer or head is on its way from the server shows nothing meanwhile, never the old one's weights.
function clear(id, frames) {
  if (window.Plotly && frames.some((frame) => attentionOf(frame) || frame.encoder_attention)) {
    Plotly.purge(document.getElementById(id));
  }
}

function axis(labels, extra = {}) {
  return { tickvals: labels.map((_, i) => i), ticktext: labels, tickfont: { size: 11 }, zeroline: false, showgrid: false, ...extra };
}

function heatmap(element, z, xLabels, yLabels, hover, titles) {
  const trace = {
    type: "heatmap", z, x: xLabels.map((_, i) => i), y: yLabels.map((_, i) => i), zmin: 0, zmax: 1,
    colorscale: WEIGHT_SCALE, hoverongaps: false, hovertemplate: hover, customdata: yLabels.map((y) => xLabels.map(
      (x) => [y, x])),
  };
  const layout = {
    margin: MARGIN, xaxis: axis(xLabels, { tickangle: -45, title: { text: titles.x } }),
    yaxis: axis(yLabels, { autorange: "reversed", title: { text: titles.y } }),
    plot_bgcolor: "#e9ebf0", // masked cells stay empty: this grey shows through
  };
  plot(element, [trace], layout, { config: CONFIG, alt: titles.alt });
}

export class Views {
  // onView(view): the student picked another layer or head (the page asks the server for it).
  constructor(strings, selectors, { onView = null } = {}) {
    this.s = strings;
    this.selectors = selectors;
    this.request = null;
    this.pending = false;
    this.stepPicker = document.getElementById("pg-topk-step"); // which step's probabilities to show
    for (const select of [...Object.values(selectors), this.stepPicker]) {
      select.addEventListener("change", () => {
        if (select !== this.stepPicker && onView) onView(this.view());
        this.schedule(this.request);
      });
    }
  }

  // The view the selectors show, as a `decode` or `view` frame names it.
  view() {
    const index = (select) => (select.value === "" ? undefined : Number(select.value));
    const head = this.selectors.head.value || "mean";
    return { layer: index(this.selectors.layer), encoder_layer: index(this.selectors.encLayer),
             head: head === "mean" ? "mean" : Number(head) };
  }

  // Whether every attention the request holds is in the view the selectors show (else the page asks for it).
  showsSelected(request) {
    const view = this.view();
    const rows = shownRows(request).map(attentionOf).filter(Boolean);
    const encoder = request.start.encoder_attention;
    return rows.every((a) => showsView(a, view.layer, view.head))
      && (!encoder || showsView(encoder, view.encoder_layer, view.head));
  }

  // The step the probability chart shows: the latest unless the student picked one; new steps join the list.
  pickedStep(steps) {
    const picker = this.stepPicker;
    for (let i = picker.options.length - 1; i < steps.length; i += 1) {
      picker.append(new Option(`${this.s.step} ${i}: ${stepToken(steps[i])}`, String(i)));
    }
    return picker.value === "" ? steps[steps.length - 1] : steps[Number(picker.value)] || steps[steps.length - 1];
  }

  reset(start) {
    const config = start.model_config;
    const options = (select, count, label) => {
      const previous = select.value;
      select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(label(i), String(i))));
      select.value = previous && Number(previous) < count ? previous : String(count - 1);
    };
    const layer = (i) => this.s.layer.replace("{n}", i + 1);
    options(this.selectors.layer, config.n_decoder_layers, layer);
    options(this.selectors.encLayer, config.n_encoder_layers, layer);
    const head = this.selectors.head;
    const keep = head.value || "mean";
    head.replaceChildren(new Option(this.s.mean, "mean"),
      ...Array.from({ length: config.n_heads }, (_, i) => new Option(this.s.head.replace("{n}", i + 1), String(i))));
    head.value = keep === "mean" || Number(keep) < config.n_heads ? keep : "mean";
    document.getElementById("pg-beam-card").hidden = start.params.strategy !== "beam";
    this.stepPicker.replaceChildren(this.stepPicker.options[0]); // back to "the latest step" for a new request
    document.getElementById("pg-topk-step-label").hidden = start.params.strategy === "beam"; // beam: every token shown
  }

  // Draw at most once per animation frame, however fast tokens arrive.
  schedule(request) {
    this.request = request;
    if (this.pending || !request) return;
    this.pending = true;
    track(new Promise((drawn) => requestAnimationFrame(() => {
      this.pending = false;
      this.render(this.request);
      drawn();
    })));
  }

  render(request) {
    const layer = Number(this.selectors.layer.value || 0);
    const encLayer = Number(this.selectors.encLayer.value || 0);
    const head = this.selectors.head.value || "mean";
    const steps = request.steps;
    const rows = shownRows(request);
    const src = request.start.src_tokens || request.start.src_ids.map(String);
    const out = rows.map((step, i) => `${i}: ${stepToken(step)}`);
    this.cross(rows, src, out, layer, head);
    this.self(rows, out, layer, head);
    this.encoder(request.start, src, encLayer, head);
    if (request.start.params.strategy === "beam") {
      const path = beamPath(steps, request.done);
      this.pathProbs(path, Boolean(request.done));
      this.beams(steps, path);
    } else {
      this.topk(this.pickedStep(steps));
    }
    this.cache(steps);
  }

  cross(steps, src, out, layer, head) {
    const rows = steps.map(attentionOf).filter((a) => showsView(a, layer, head));
    if (!rows.length) return clear("view-cross", steps);
    const z = rows.map((attention) => stepAttention(attention).cross);
    heatmap("view-cross", z, src, out.slice(0, z.length),
      `${this.s.output} %{customdata[0]}<br>${this.s.source} %{customdata[1]}: %{z:.3f}<extra></extra>`,
      { x: this.s.source, y: this.s.output, alt: this.s.alt_cross });
  }

  self(steps, out, layer, head) {
    const rows = steps.map(attentionOf).filter((a) => showsView(a, layer, head));
    if (!rows.length) return clear("view-self", steps);
    const width = rows.length; // step t looks at positions 0..t: <bos>, then the outputs before it
    const z = rows.map((attention) => {
      const row = stepAttention(attention).self;
      return Array.from({ length: width }, (_, j) => (j < row.length ? row[j] : null));
    });
    const columns = ["<bos>", ...steps.slice(0, width - 1).map(stepToken)];
    heatmap("view-self", z, columns, out.slice(0, z.length),
      `${this.s.output} %{customdata[0]}<br>${this.s.prefix} %{customdata[1]}: %{z:.3f}<extra></extra>`,
      { x: this.s.prefix, y: this.s.output, alt: this.s.alt_self });
  }

  encoder(start, src, layer, head) {
    if (!showsView(start.encoder_attention, layer, head)) return clear("view-encoder", [start]);
    heatmap("view-encoder", encoderAttention(start.encoder_attention), src, src,
      `%{customdata[0]} → %{customdata[1]}: %{z:.3f}<extra></extra>`,
      { x: this.s.source_key, y: this.s.source_query, alt: this.s.alt_encoder });
  }

  topk(step) {
    if (!step) return;
    const bars = step.alternatives.map((alt) => ({ token: alt.token, prob: alt.prob, chosen: alt.id === step.id }));
    this.bars(bars, `${this.s.step} ${step.seq}`);
  }

  // Beam search has no one distribution to show: each token of the shown hypothesis and its probability given
  // the tokens before it, titled as the live top beam while the search runs and the best hypothesis once done.
  pathProbs(path, done) {
    if (!path.length) return;
    const bars = path.map((beam, k) => ({ token: `${k}: ${beam.token}`, prob: beam.prob, chosen: true }));
    this.bars(bars, done ? this.s.best_hypothesis : this.s.top_beam, { long: true });
  }

  // A long caption (beam search's) is the chart's title, which wraps to the chart's width; an axis title is cut.
  bars(bars, title, { long = false } = {}) {
    const trace = {
      type: "bar", x: bars.map((b) => b.token), y: bars.map((b) => b.prob),
      marker: { color: bars.map((b) => (b.chosen ? ACCENT : OTHER)) },
      hovertemplate: `%{x}: %{y:.3f}<extra></extra>`,
    };
    const layout = { margin: { ...MARGIN, l: 50 }, yaxis: { range: [0, 1], title: { text: this.s.probability } },
                     xaxis: { type: "category", title: { text: long ? "" : title } }, ...(long ? { title } : {}) };
    plot("view-topk", [trace], layout, { config: CONFIG, alt: `${this.s.probability}: ${title}` });
  }

  // The tree: every live beam a point (hover for its token), the shown hypothesis's tokens written out, and each
  // finished hypothesis a star beside the beam it ended from, so no mark sits on a row the search never had.
  beams(steps, path) {
    const lines = { x: [], y: [] };
    const nodes = { x: [], y: [], text: [] };
    const shown = { x: [], y: [], text: [] };
    const ends = { x: [], y: [], text: [] };
    let ids = [[]]; // each live beam's token ids, parent by parent
    steps.forEach((step, s) => {
      const previous = ids;
      step.finished.forEach((hyp) => {
        const from = previous.findIndex((row) => row.length === hyp.ids.length && row.every((id, k) => id === hyp.ids[k]));
        const row = Math.max(0, from);
        ends.x.push(s), ends.y.push(row + 0.4);
        ends.text.push(`${hyp.text} (${hyp.score.toFixed(2)})`);
        if (s > 0 && from >= 0) lines.x.push(s - 1, s, null), lines.y.push(row, row + 0.4, null);
      });
      ids = step.beams.map((beam) => [...(previous[beam.parent] || []), beam.id]);
      step.beams.forEach((beam, i) => {
        nodes.x.push(s), nodes.y.push(i), nodes.text.push(beam.token);
        if (s > 0) lines.x.push(s - 1, s, null), lines.y.push(beam.parent, i, null);
        if (path[s] === beam) shown.x.push(s), shown.y.push(i), shown.text.push(beam.token);
      });
    });
    const traces = [
      { type: "scatter", mode: "lines", ...lines, line: { color: OTHER, width: 1 }, hoverinfo: "skip" },
      { type: "scatter", mode: "markers", ...nodes, marker: { color: OTHER, size: 7 },
        hovertemplate: "%{text}<extra></extra>" },
      { type: "scatter", mode: "markers+text", ...shown, textposition: "top center", textfont: { size: 11 },
        marker: { color: ACCENT, size: 9 }, hovertemplate: "%{text}<extra></extra>" },
      { type: "scatter", mode: "markers", ...ends, marker: { symbol: "star", size: 11, color: "#13795b" },
        hovertemplate: "%{text}<extra></extra>" },
    ];
    const rows = Math.max(...steps.map((step) => step.beams.length), 1);
    const height = Math.max(260, 80 + rows * 42); // a row of labels for each beam, up to 8
    document.getElementById("view-beams").style.height = `${height}px`;
    const layout = { margin: { ...MARGIN, l: 50 }, showlegend: false, height,
                     xaxis: { title: { text: this.s.step }, dtick: 1, range: [-0.6, steps.length - 0.4] },
                     yaxis: { title: { text: this.s.beam_rank }, dtick: 1, tickformat: "d",
                              range: [rows - 0.4, -0.6] } };
    plot("view-beams", traces, layout, { config: CONFIG, alt: this.s.alt_beams });
  }

  cache(steps) {
    const last = steps[steps.length - 1];
    if (!last) return;
    const info = last.cache;
    const kb = info.bytes >= 1024 ? `${(info.bytes / 1024).toFixed(1)} KB` : `${info.bytes} B`;
    document.getElementById("pg-kv-summary").textContent = this.s.kv_summary
      .replace("{layers}", info.layers).replace("{self}", info.self_positions)
      .replace("{cross}", info.cross_positions).replace("{bytes}", kb);
    const layers = Array.from({ length: info.layers }, (_, i) => this.s.layer.replace("{n}", i + 1));
    const stacked = [
      { type: "bar", name: this.s.cache_self, x: layers, y: layers.map(() => info.self_positions), marker: { color: ACCENT } },
      { type: "bar", name: this.s.cache_cross, x: layers, y: layers.map(() => info.cross_positions),
        marker: { color: OTHER } },
    ];
    // The legends sit in a top margin of their own, above the plot, never on its bars or points.
    const legend = { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" };
    plot("view-kv-layers", stacked, { barmode: "stack", margin: { ...MARGIN, l: 50, b: 30, t: 40 },
                                      yaxis: { title: { text: this.s.positions }, rangemode: "tozero" }, legend },
         { config: CONFIG, alt: this.s.kv_summary_alt });
    const x = steps.map((step) => step.seq);
    const timed = [
      { type: "scatter", mode: "lines+markers", name: this.s.with_cache, x, y: steps.map((s) => s.timing.step_ms),
        line: { color: ACCENT } },
    ];
    if (steps.some((s) => s.timing.recompute_ms != null)) {
      timed.push({ type: "scatter", mode: "lines+markers", name: this.s.recompute, x,
                   y: steps.map((s) => s.timing.recompute_ms ?? null), line: { color: COLORS.recompute } });
    }
    plot("view-kv-time", timed, { margin: { ...MARGIN, l: 50, b: 40, t: 56 }, // room for a legend on two lines
                                  yaxis: { title: { text: this.s.ms }, rangemode: "tozero", autorange: true },
                                  xaxis: { title: { text: this.s.step }, tickformat: "d", dtick: x.length <= 12 ? 1 : undefined },
                                  legend }, { config: CONFIG, alt: this.s.ms });
  }
}
