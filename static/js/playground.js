// The playground page: the form, the /ws/decode/ socket, the output, and the views (playground_views.js).
import { showCoverage } from "./coverage.js";
import { showJudgement } from "./playground_judgement.js";
import { Views, applyAttentionFrame, beamPath } from "./playground_views.js";
import { track } from "./settled.js";
import { liveSocket } from "./socket.js";

const $ = (id) => document.getElementById(id);
const strings = JSON.parse($("pg-strings").textContent);
const say = (key, values = {}) => strings[key].replace(/\{(\w+)\}/g, (_, name) => values[name] ?? "");

const form = $("pg-form");
const buttons = { run: $("pg-run"), step: $("pg-step"), cancel: $("pg-cancel") };
const views = new Views(strings, { layer: $("pg-layer"), encLayer: $("pg-enc-layer"), head: $("pg-head") },
                        { onView: () => askView(state.request) });

// What the page shows: the request it started last (older ones are cancelled and ignored).
const state = { tag: null, tagCount: 0, request: null, stepFirst: false, open: false };

// The frame's message is English; a page in another language says what the code means instead.
function errorReason(frame) {
  const english = document.documentElement.lang.startsWith("en");
  return (!english && strings.errors[frame.code]) || frame.message;
}

// An error's code stays on the line for developers (data-code, and the tooltip), out of the sentence.
function status(text, isError = false, code = "") {
  const line = $("pg-status");
  line.textContent = text;
  line.classList.toggle("error", isError);
  line.dataset.code = code;
  line.title = code;
}

// -- the socket ------------------------------------------------------------------------------------

let socket = null;

function connect() {
  socket = liveSocket(form.dataset.socket, {
    onFrame,
    onOpen() {
      state.open = true;
      status(say("ready"));
      refreshButtons();
    },
    onClose(event, again) {
      state.open = false;
      state.request = null;
      viewLanded();
      refreshButtons();
      status(again ? say("reconnecting") : say("closed"), true, String(event.code));
    },
  });
}

function send(frame) {
  if (state.open) socket.send(frame);
}

// -- the form --------------------------------------------------------------------------------------

function strategy() {
  return form.querySelector("input[name=strategy]:checked").value;
}

function number(name) {
  const input = form.elements[name];
  return input.value === "" ? null : Number(input.value);
}

// What every decode asks for besides the form's fields (protocol.PAGE_REQUEST; bench/stream.py sends the same).
const PAGE_REQUEST = JSON.parse($("pg-request").textContent);

function decodeFrame(stepMode) {
  const chosen = strategy();
  const frame = {
    type: "decode", model: form.elements.model.value, source: form.elements.source.value, strategy: chosen,
    ...PAGE_REQUEST, view: views.view(), step_mode: stepMode,
    pace_ms: stepMode ? 0 : Number(form.elements.pace_ms.value),
  };
  const wanted = { beam: ["beam_size", "length_penalty"], sample: ["temperature", "top_k", "top_p", "seed"] };
  for (const name of ["max_len", ...(wanted[chosen] || [])]) {
    const value = number(name);
    if (value !== null) frame[name] = value;
  }
  return frame;
}

// A second press within this long of the first, while the first is still unanswered or running, is the same press
// (a double-click): one decode, not two. Once the first was refused or has finished, a press is a new one.
const SAME_PRESS_MS = 600;

function start(stepMode) {
  const now = performance.now();
  const unanswered = Boolean(state.tag) && !state.request?.done;
  if (unanswered && now - (state.startedAt ?? -Infinity) < SAME_PRESS_MS) return;
  state.startedAt = now;
  if (state.request && !state.request.done) send({ type: "cancel", request_id: state.request.id });
  state.tag = `pg-${++state.tagCount}`;
  state.request = null;
  state.stepFirst = stepMode;
  const frame = decodeFrame(stepMode);
  state.sentSource = frame.source; // the done frame's coverage underlines the words of what was sent
  send({ ...frame, tag: state.tag });
  status(say("queued"));
  refreshButtons();
  showOutput();
}

// On a narrow screen the output sits below the form: bring it into view, or pressing Run seems to do nothing.
function showOutput() {
  const card = $("pg-output-card");
  const box = card.getBoundingClientRect();
  if (box.top < 0 || box.top > window.innerHeight - 80) {
    const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    card.scrollIntoView({ block: "start", behavior: smooth ? "smooth" : "auto" });
  }
}

function refreshButtons() {
  const running = Boolean(state.request && !state.request.done);
  const waiting = Boolean(state.tag && !state.request); // sent, no `start` yet
  buttons.run.disabled = !state.open;
  buttons.step.disabled = !state.open;
  buttons.cancel.disabled = !state.open || !(running || waiting);
}

function showStrategyFields() {
  for (const block of form.querySelectorAll(".pg-when")) block.hidden = block.dataset.when !== strategy();
}

buttons.run.addEventListener("click", () => start(false));
buttons.step.addEventListener("click", () => {
  const request = state.request;
  if (request && request.stepMode && !request.done) send({ type: "step", request_id: request.id });
  else start(true);
});
buttons.cancel.addEventListener("click", () => {
  if (state.request && !state.request.done) send({ type: "cancel", request_id: state.request.id });
  else if (state.tag && !state.request) send({ type: "cancel" }); // not started yet: cancel this socket's requests
});
form.addEventListener("change", (event) => {
  if (event.target.name === "strategy") showStrategyFields();
});
form.addEventListener("submit", (event) => {
  if (state.open) event.preventDefault(); // without a socket the form still works as a GET picker
});
// Enter runs and Shift+Enter breaks the line; Enter that confirms an input method's composition (pinyin) is left alone.
form.elements.source.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
  event.preventDefault();
  if (state.open) start(false);
});
// The source's limit, said aloud: a paste longer than the limit says how much of it was kept.
const source = form.elements.source;
const limit = Number(source.maxLength);
function countChars() {
  $("pg-source-count").textContent = say("count", { n: [...source.value].length, max: limit });
}
source.addEventListener("input", countChars);
source.addEventListener("paste", (event) => {
  const pasted = event.clipboardData?.getData("text") ?? "";
  const room = limit - (source.value.length - (source.selectionEnd - source.selectionStart));
  $("pg-source-note").textContent = pasted.length > room
    ? say("trimmed", { pasted: pasted.length, kept: Math.max(0, room), max: limit }) : "";
});
// What the student typed and chose outlives a reload of the tab (sessionStorage: this tab only, gone when it closes).
const KEPT = "pg-form";
function keepForm() {
  const fields = {};
  for (const element of form.elements) {
    // The model stays the page's own (its card and examples are drawn for it by the server).
    if (!element.name || element.name === "model" || element.type === "hidden" || element.type === "submit") continue;
    if (element.type === "radio") { if (element.checked) fields[element.name] = element.value; }
    else fields[element.name] = element.value;
  }
  try { sessionStorage.setItem(KEPT, JSON.stringify(fields)); } catch { /* storage off: nothing kept */ }
}
function restoreForm() {
  let fields = {};
  try { fields = JSON.parse(sessionStorage.getItem(KEPT) || "{}"); } catch { return; }
  for (const [name, value] of Object.entries(fields)) {
    const field = form.elements[name];
    if (!field || typeof value !== "string") continue;
    if (field instanceof RadioNodeList) {
      const radio = [...field].find((each) => each.value === value);
      if (radio) radio.checked = true;
    } else if (field.tagName !== "SELECT" || [...field.options].some((option) => option.value === value)) {
      field.value = field.maxLength > 0 ? value.slice(0, field.maxLength) : value;
    }
  }
}
form.addEventListener("input", keepForm);
form.addEventListener("change", keepForm);
// A live session's Fork opens this page with the session's source and strategy (?source=&strategy=).
const forked = new URLSearchParams(location.search);
if (!forked.has("source")) restoreForm();
if (forked.has("source")) source.value = forked.get("source").slice(0, limit);
const forkedStrategy = [...form.elements.strategy].find((radio) => radio.value === forked.get("strategy"));
if (forkedStrategy) forkedStrategy.checked = true;
countChars();
$("pg-model-card").addEventListener("click", (event) => {
  const chip = event.target.closest("[data-example]");
  if (!chip) return;
  form.elements.source.value = chip.dataset.example;
  keepForm();
});
// A new model brings its own examples: swap the source only if it was an example of the old one (or empty).
let examples = new Set([...document.querySelectorAll("#pg-model-card [data-example]")].map((b) => b.dataset.example));
document.body.addEventListener("htmx:afterSwap", (event) => {
  if (event.target.id !== "pg-model-card") return;
  const source = form.elements.source;
  const offered = [...event.target.querySelectorAll("[data-example]")].map((b) => b.dataset.example);
  if ((source.value === "" || examples.has(source.value)) && offered.length) source.value = offered[0];
  examples = new Set(offered);
  keepForm();
});

// -- frames ----------------------------------------------------------------------------------------

function onFrame(frame) {
  if (frame.type === "start") {
    if (frame.tag !== state.tag) return;
    state.request = { id: frame.request_id, stepMode: frame.step_mode, start: frame, steps: [], done: null,
                      paths: [[]], source: state.sentSource };
    views.reset(frame);
    showSource(frame);
    $("pg-output").textContent = "";
    $("pg-tokens").replaceChildren();
    $("pg-facts").replaceChildren();
    showJudgement($("pg-judgement"), null, say);
    showCoverage($("pg-coverage"), null, "", say);
    if (state.stepFirst) send({ type: "step", request_id: frame.request_id });
    viewLanded();
    askView(state.request); // the server clamps a layer or head this model lacks: ask for what the selectors show
    progress();
  } else if (frame.type === "error") {
    if (frame.code === "catching_up") { // behind, not ended: the server catches this screen up once its link is back
      if (state.request && frame.request_id === state.request.id) status(errorReason(frame), true, frame.code);
      return;
    }
    if (frame.code === "not_running" && state.request?.viewAsked) { // the ended request's attention is gone
      state.request.viewAsked = null;
      viewLanded();
      return;
    }
    const mine = frame.tag === state.tag || (state.request && frame.request_id === state.request.id)
      || (!frame.request_id && !frame.tag);
    if (!mine) return;
    if (state.request) state.request.done = frame;
    else state.tag = null; // refused before it started
    viewLanded();
    status(say("error", { message: errorReason(frame).replace(/[.。]$/, "") }), true, frame.code);
  } else {
    const request = state.request;
    if (!request || frame.request_id !== request.id) return;
    if (frame.type === "token" && inOrder(request, frame)) onToken(request, frame);
    else if (frame.type === "beams" && inOrder(request, frame)) onBeams(request, frame);
    else if (frame.type === "state") onState(request, frame);
    else if (frame.type === "attention") onAttention(request, frame);
    else if (frame.type === "done") {
      if (request.resyncing || drawnDisagrees(request, frame)) resync(request);
      onDone(request, frame);
      request.viewAsked = null; // a view asked of the running request may go unanswered: ask the kept copy
      viewLanded();
      askView(request);
    }
  }
  refreshButtons();
}

// `seq` counts a request's steps from 0: a jump means frames were lost on the way, so ask for the
// request's state (docs/protocol.md, "Gaps"); until it comes, later steps wait (the state holds them).
function inOrder(request, frame) {
  if (request.resyncing || frame.seq < request.steps.length) return false;
  if (frame.seq > request.steps.length) {
    resync(request);
    return false;
  }
  return true;
}

// The student picked another layer or head: frames carry one view, so ask for the request's attention in
// this one (an `attention` frame: every step so far; later frames follow it). Once at a time per view.
function askView(request) {
  if (!request || !request.start.encoder_attention || views.showsSelected(request)) return;
  const view = views.view();
  const key = JSON.stringify(view);
  if (request.viewAsked === key) return;
  request.viewAsked = key;
  send({ type: "view", request_id: request.id, ...view });
  if (!viewWaiting) track(new Promise((landed) => { viewWaiting = landed; }));
}

// A view asked of the server is work in flight (settled.js) until its weights arrive or the ask is dropped: the
// views meanwhile may show nothing for the new layer or head.
let viewWaiting = null;

function viewLanded() {
  if (viewWaiting) viewWaiting();
  viewWaiting = null;
}

function onAttention(request, frame) {
  applyAttentionFrame(request, frame);
  request.viewAsked = null;
  viewLanded();
  askView(request); // the student may have moved on meanwhile
  views.schedule(request);
}

function resync(request) {
  request.resyncing = true;
  send({ type: "resync", request_id: request.id });
}

// A `done` whose ids are not the tokens drawn (greedy, sampling): the screen missed a step.
function drawnDisagrees(request, done) {
  if (request.start.params.strategy === "beam") return false;
  const drawn = request.steps.map((step) => step.id);
  return done.ids.some((id, i) => drawn[i] !== id);
}

// Every frame the worker sent for the request, in order: redraw from it, so the screen equals its output.
function onState(request, frame) {
  request.resyncing = false;
  request.steps = [];
  request.paths = [[]];
  views.reset(request.start);
  $("pg-output").textContent = "";
  $("pg-tokens").replaceChildren();
  for (const step of frame.frames) {
    if (step.type === "token") onToken(request, step);
    else if (step.type === "beams") onBeams(request, step);
    else if (step.type === "done") onDone(request, step);
  }
  askView(request); // the state holds the frames as sent, perhaps in a view the student has left since
}

function showSource(frame) {
  $("pg-src-tokens").replaceChildren(...(frame.src_tokens || []).map((token) => chip(token, null, "src")));
}

function chip(token, prob, kind) {
  const element = document.createElement("span");
  element.className = `pg-tok ${kind || ""}`;
  element.textContent = token;
  if (prob !== null) {
    const small = document.createElement("small");
    small.textContent = prob.toFixed(2);
    element.append(small);
  }
  return element;
}

function onToken(request, frame) {
  request.steps.push(frame);
  $("pg-output").textContent = frame.text;
  const tokens = $("pg-tokens");
  tokens.querySelector(".new")?.classList.remove("new");
  tokens.append(chip(frame.token, frame.prob, "new"));
  progress();
}

function onBeams(request, frame) {
  request.steps.push(frame);
  // Each live beam's path, parent by parent: the best one's tokens are the output so far.
  request.paths = frame.beams.map((beam) => [...(request.paths[beam.parent] || []), beam]);
  $("pg-output").textContent = request.paths[0].map((beam) => beam.token).filter((t) => t !== "<eos>").join(" ");
  showPath(request.paths[0]);
  progress();
}

// The chips of the hypothesis shown: the best beam's path, whose earlier tokens can change from step to step.
function showPath(path) {
  $("pg-tokens").replaceChildren(...path.map((beam, i) => chip(beam.token, beam.prob, i === path.length - 1 ? "new" : "")));
}

function onDone(request, frame) {
  request.done = frame;
  $("pg-output").textContent = frame.text ?? "";
  showJudgement($("pg-judgement"), frame, say);
  showCoverage($("pg-coverage"), frame, request.source ?? "", say);
  if (request.start.params.strategy === "beam") showPath(beamPath(request.steps, frame));
  const reason = strings[`reason_${frame.reason}`] || frame.reason;
  // Beam search runs more steps than its best hypothesis has tokens: count that hypothesis's (and its <eos>), as greedy does.
  const beam = request.start.params.strategy === "beam";
  const n = beam ? frame.ids.length + (frame.reason === "eos" ? 1 : 0) : frame.steps;
  status(say("done", { n, reason }));
  const timings = frame.timings || {};
  const facts = [
    [say("first_token"), timings.first_token_ms != null ? `${timings.first_token_ms.toFixed(0)} ms` : "—"],
    [say("total"), `${(timings.decode_ms || 0).toFixed(0)} ms`],
  ];
  $("pg-facts").replaceChildren(...facts.flatMap(([term, value]) => {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = term;
    dd.textContent = value;
    return [dt, dd];
  }));
  views.schedule(request);
}

function progress() {
  const request = state.request;
  const n = request.steps.length;
  status(say(request.stepMode ? "stepping" : "running", { n }));
  views.schedule(request);
}

showStrategyFields();
refreshButtons();
connect();
