// A live session's page, for the students (follow) and the instructor (console): the /ws/classroom/<code>/
// socket, the output, the question card, and the playground's own views (playground_views.js).
import { COLORS, drawFigureSets, plot, plotlySoon } from "./figure_style.js";
import { showCoverage } from "./coverage.js";
import { showJudgement } from "./playground_judgement.js";
import { Views, applyAttentionFrame } from "./playground_views.js";
import { track } from "./settled.js";
import { liveSocket } from "./socket.js";

const $ = (id) => document.getElementById(id);
const strings = JSON.parse($("cr-strings").textContent);
const fill = (text, values) => text.replace(/\{(\w+)\}/g, (_, name) => values[name] ?? "");
const say = (key, values = {}) => fill(strings[key], values);
const page = $("cr-page");
const console_ = page.dataset.role === "console";
const selectors = { layer: $("pg-layer"), encLayer: $("pg-enc-layer"), head: $("pg-head") };
// The console's layer and head go to every screen (a `views` frame); a student's follow the console's.
const views = new Views(strings, selectors, { onView: () => { if (console_) sendViews(); } });

// What the page shows: the session's current request (as the playground's views read it) and its question.
const state = { request: null, shown: [], layer: null, head: "mean", question: null, mine: null, open: false,
                resyncing: false, session: null, ended: false, seeds: null, mySeed: null };

function status(text, isError = false) {
  const line = $("cr-status");
  line.textContent = text;
  line.classList.toggle("error", isError);
}

function errorText(frame) {
  const english = document.documentElement.lang.startsWith("en");
  return (!english && (strings.error_codes[frame.code] || strings.errors[frame.code])) || frame.message;
}

// -- the socket ------------------------------------------------------------------------------------

const socket = liveSocket(page.dataset.socket, {
  onFrame,
  onOpen() {
    state.open = true;
    status(say("live"));
  },
  onClose(event, again) {
    state.open = false;
    if (!again) {
      status(say("ended"), false);
      if (!state.ended) showEnded(""); // it ended while this screen was away: no word of who ended it
    }
    else {
      status(say("reconnecting"), true);
      page.setAttribute("aria-busy", "true"); // until the session's state comes again
    }
  },
});

function send(frame) {
  return socket.send(frame);
}

// A console action whose outcome matters (a plan's step): sent with a number, answered `taken` or an error naming it.
let lastRef = 0;
const awaited = new Map();

function sendAwaited(frame) {
  const ref = ++lastRef;
  return new Promise((resolve) => {
    if (!send({ ...frame, ref })) {
      resolve({ taken: false, message: say("reconnecting") });
      return;
    }
    awaited.set(ref, resolve);
  });
}

function answerAwaited(frame) {
  const resolve = awaited.get(frame.ref);
  if (!resolve) return false;
  awaited.delete(frame.ref);
  resolve(frame.type === "taken" ? { taken: true } : { taken: false, message: errorText(frame) });
  return true;
}

function resync() {
  if (state.resyncing) return;
  state.resyncing = true;
  send({ type: "resync" });
}

const handlers = {
  session(frame) {
    state.session = frame;
    applyViews(frame);
    if (frame.question) showQuestion(frame.question, frame.my_answer, false);
    else hideQuestion();
    if (frame.counts) histogram(frame.counts);
    if (frame.scores) scores(frame.scores);
    if (frame.score != null) $("cr-score").textContent = say("score", { n: frame.score });
    if (!frame.request_id) status(say("waiting"));
    fork(frame);
    if (frame.lesson) showLesson(frame.lesson);
    if (frame.demo) showDemo(frame.demo);
    if (frame.reveal) handlers.reveal(frame.reveal); // the room as it is: the last reveal (an experiment's result)
    state.seeds = frame.seeds || null;
    drawSeeds();
    page.setAttribute("aria-busy", "false"); // the session's state has come: the page shows what it holds
    plotlySoon(); // the charts further down, and the next step's, then wait for their drawing only
  },
  start(frame) {
    begin(frame);
  },
  run(frame) {
    state.session = { ...state.session, ...frame };
    fork(state.session);
  },
  token: step,
  beams: step,
  done(frame) {
    if (!state.request || state.request.start.request_id !== frame.request_id) return resync();
    if (frame.steps != null && frame.steps !== state.request.steps.length) return resync();
    state.request.done = frame;
    showJudgement($("cr-judgement"), frame, say);
    showCoverage($("cr-coverage"), frame, state.session?.source || "", say); // the source words the output lost
    views.schedule(state.request);
    status(say("done", { n: state.request.steps.length }));
  },
  error(frame) {
    if (!frame.request_id) state.stepRunAsked = false; // a refused run: the next Step starts one again
    status(errorText(frame), true);
    if (SEED_CODES.includes(frame.code)) $("cr-seeds-text").textContent = errorText(frame);
    if (frame.ref != null) answerAwaited(frame);
  },
  taken: answerAwaited,
  state(frame) {
    state.resyncing = false;
    state.request = null;
    for (const inner of frame.frames) {
      if (inner.type === "start") begin(inner);
      else if (inner.type === "token" || inner.type === "beams") step(inner, true);
      else if (inner.type === "done" && state.request) state.request.done = inner;
      else if (inner.type === "attention" && state.request) applyAttentionFrame(state.request, inner);
      else if (inner.type === "error") status(errorText(inner), true);
    }
    if (state.request) {
      showJudgement($("cr-judgement"), state.request.done, say);
      showCoverage($("cr-coverage"), state.request.done, state.session?.source || "", say);
      views.schedule(state.request);
      progress();
    }
  },
  views: applyViews,
  attention(frame) { // every step so far in the layers and head the console chose
    if (!state.request || state.request.start.request_id !== frame.request_id) return;
    applyAttentionFrame(state.request, frame);
    views.schedule(state.request);
  },
  question(frame) {
    showQuestion(frame, null, true);
  },
  experiment_progress(frame) {
    if (!state.question || state.question.id !== frame.question || !state.question.experiment) return;
    state.question.experiment.progress = frame;
    experimentProgress();
  },
  options(frame) {
    if (state.question && state.question.id === frame.question) {
      state.question.options = frame.options;
      drawOptions();
    }
  },
  answered(frame) {
    state.mine = frame.choice;
    drawOptions();
    $("cr-q-result").textContent = say("your_answer", { answer: label(frame.choice) });
  },
  answers: histogram,
  reveal(frame) {
    if (!state.question || state.question.id !== frame.question) return;
    state.question.answer = frame.answer;
    drawOptions();
    if (frame.you) $("cr-hist").hidden = false; // counts only, never names; shown before drawn, to take its width
    histogram(frame);
    const result = $("cr-q-result");
    if (frame.labels) state.question.labels = frame.labels;
    // Whose answer it is, said so: the lesson's, the training's (with each arm's last loss), the instructor's, the model's.
    const whose = strings.reveals[frame.reveals] || strings.reveals.model;
    const values = { answer: label(frame.answer), losses: losses(frame) };
    const told = frame.experiment?.sentence || fill(whose, values); // a sweep: its verdict, in this screen's words
    if (frame.you) {
      const key = !frame.you.answered ? "no_answer" : frame.you.correct ? "right" : "wrong";
      result.textContent = say(key, { whose: told });
      result.className = `cr-result ${frame.you.correct ? "right" : "wrong"}`;
      $("cr-score").textContent = say("score", { n: frame.you.score });
    } else {
      result.textContent = told;
      result.className = "cr-result";
    }
    if (console_) {
      status(say("revealed")); // an earlier refusal's line goes
      revealReady();
    }
    if (frame.experiment && !frame.experiment.off_panel) showExperiment(frame); // a comparison predicted: its result
    if (frame.explanation) { // a lesson exercise: why its answer is right
      const why = document.createElement("span");
      why.className = "cr-explanation";
      why.dataset.testid = "explanation";
      why.textContent = ` ${say("explanation", { text: frame.explanation })}`;
      result.append(why);
    }
    if (frame.scores) scores(frame.scores);
  },
  question_closed: hideQuestion,
  seeds(frame) {
    state.seeds = frame;
    drawSeeds();
  },
  seed_queued(frame) { // this student's own seed, on the experiments queue
    state.mySeed = frame;
    drawSeeds();
  },
  seed_added(frame) { // a student's seed ended: its curves join the plot, the verdict counts every seed
    if (!state.question || state.question.id !== frame.question) return;
    state.seeds = frame.seeds;
    if (state.mySeed?.seed === frame.seed) state.mySeed = { ...state.mySeed, status: frame.status };
    const verdict = $("cr-seeds-verdict");
    verdict.textContent = frame.experiment.sentence || "";
    verdict.hidden = !frame.experiment.sentence;
    if (frame.status === "succeeded") showFragment(frame, frame.experiment.url, say("seeds_in_plot"));
    drawSeeds();
  },
  lesson: showLesson,
  demo: showDemo,
  demo_running() {
    $("cr-lesson").hidden = false;
    $("cr-lesson-demo").hidden = false;
    $("cr-demo-status").textContent = say("demo_running");
    $("cr-lesson-demo").setAttribute("aria-busy", "true");
  },
  demo_refused() {
    $("cr-demo-status").textContent = say("demo_refused");
    $("cr-lesson-demo").setAttribute("aria-busy", "false");
  },
  presence(frame) {
    if (!console_) return;
    $("cr-present").textContent = frame.count;
    $("cr-people").replaceChildren(...(frame.names || []).map((name) => {
      const li = document.createElement("li");
      li.textContent = name;
      return li;
    }));
  },
  ended(frame) { // the socket closes next; the page stays, saying who ended the session and where its history is
    status(say("ended"));
    showEnded(frame.reason ?? "instructor");
  },
};

function onFrame(frame) {
  const handler = handlers[frame.type];
  if (handler) handler(frame);
}

// -- the decode ------------------------------------------------------------------------------------

function begin(start) {
  state.stepRunAsked = false;
  state.request = { start, steps: [], done: null };
  views.reset(start);
  showCards();
  selectView();
  $("cr-src").replaceChildren(...(start.src_tokens || start.src_ids.map(String)).map((token) => chip(token, "src")));
  $("cr-tokens").replaceChildren();
  $("cr-text").textContent = "";
  showJudgement($("cr-judgement"), null, say);
  showCoverage($("cr-coverage"), null, "", say);
  progress();
}

function step(frame, replaying = false) {
  const request = state.request;
  if (!request || request.start.request_id !== frame.request_id) return resync();
  if (frame.seq < request.steps.length) return undefined; // seen already (a state crossed a live frame)
  if (frame.seq > request.steps.length) return resync(); // a gap: ask for the whole state
  request.steps.push(frame);
  const token = frame.type === "beams" ? frame.beams[0]?.token : frame.token;
  $("cr-tokens").append(chip(`${frame.seq}: ${token}`, "new"));
  if (frame.text != null) $("cr-text").textContent = frame.text;
  if (!replaying) {
    views.schedule(request);
    progress();
  }
  return undefined;
}

function chip(text, kind) {
  const span = document.createElement("span");
  span.className = `pg-tok ${kind}`;
  span.textContent = text;
  return span;
}

function progress() {
  const request = state.request;
  if (!request) return;
  const n = request.steps.length;
  if (request.done) status(say("done", { n }));
  else status(say(request.start.step_mode ? "stepping" : "running", { n }));
}

// The views the instructor chose, and the layer and head, on every screen.
function applyViews(frame) {
  state.shown = frame.views || [];
  state.layer = frame.layer ?? null;
  state.encoderLayer = frame.encoder_layer ?? null;
  state.head = frame.head ?? "mean";
  showCards();
  for (const box of document.querySelectorAll("#cr-views input")) box.checked = state.shown.includes(box.value);
  selectView();
  if (state.request) views.schedule(state.request);
}

// The cards of the views the console chose, and only those (the playground's reset shows the beam tree by strategy).
function showCards() {
  for (const card of document.querySelectorAll(".pg-view[data-view]")) {
    const hidden = !state.shown.includes(card.dataset.view);
    const appears = card.hidden && !hidden;
    card.hidden = hidden;
    // A chart drawn while its card was hidden took a default width: fit it to the card now shown.
    if (appears && window.Plotly) {
      requestAnimationFrame(() => card.querySelectorAll(".js-plotly-plot").forEach((div) => Plotly.Plots.resize(div)));
    }
  }
}

function selectView() {
  if (state.layer != null && selectors.layer.options.length > state.layer) selectors.layer.value = String(state.layer);
  if (state.encoderLayer != null && selectors.encLayer.options.length > state.encoderLayer) {
    selectors.encLayer.value = String(state.encoderLayer);
  }
  if ([...selectors.head.options].some((o) => o.value === String(state.head))) selectors.head.value = String(state.head);
}

function fork(session) {
  const link = $("cr-fork");
  if (!link) return;
  const query = new URLSearchParams({ model: session.model, source: session.source || "",
                                      strategy: session.params?.strategy || "greedy" });
  link.href = `${location.origin}/playground/?${query}`;
}

// -- the question ----------------------------------------------------------------------------------

function showQuestion(question, mine, arriving) {
  state.question = { ...question, labels: question.labels || {} };
  state.mine = mine ?? null;
  $("cr-question").hidden = false;
  const kind = question.exercise ? "exercise" : question.experiment ? "experiment" : question.kind;
  $("cr-q-title").textContent = strings.kinds[kind] || question.kind;
  if (question.experiment) experimentWaiting();
  experimentProgress();
  $("cr-q-prompt").textContent = question.prompt || "";
  $("cr-q-result").textContent = mine ? say("your_answer", { answer: label(mine) }) : "";
  $("cr-q-result").className = "cr-result";
  $("cr-q-count").textContent = "";
  if (!console_) $("cr-hist").hidden = true;
  const typed = $("cr-q-typed");
  if (typed) typed.hidden = question.kind !== "next_token";
  drawOptions();
  drawSeeds();
  if (console_) histogram({ question: question.id, counts: Object.fromEntries(question.options.map((o) => [o, 0])), total: 0 });
  if (arriving && !console_) questionInView();
}

// A new question off-screen (a phone, scrolled down a long demonstration): brought into view, or, while the reader is
// typing, a notice at the screen's edge that jumps to it.
function questionInView() {
  const card = $("cr-question");
  const box = card.getBoundingClientRect();
  if (box.top >= 0 && box.top < window.innerHeight - 80) return;
  const busy = document.activeElement && ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (!busy) {
    card.scrollIntoView({ block: "start", behavior: "smooth" });
    return;
  }
  const notice = $("cr-q-notice");
  notice.hidden = false;
  notice.onclick = () => { notice.hidden = true; card.scrollIntoView({ block: "start" }); };
}

// The comparison a question predicts, training on a worker: how far it has come on every screen; the console's
// Reveal waits for its result (and says why beside the button).
function experimentProgress() {
  const question = state.question;
  const bar = $("cr-q-progress");
  const line = $("cr-q-progress-text");
  const experiment = question?.experiment;
  const progress = experiment?.progress;
  bar.hidden = line.hidden = !progress || question.answer != null;
  if (progress && question.answer == null) {
    const done = progress.status === "succeeded";
    bar.value = done ? 1 : progress.progress || 0;
    line.textContent = done ? (progress.kept ? say("experiment_in_kept") : say("experiment_in", { s: Math.round(progress.took_s ?? 0) }))
      : progress.status === "failed" ? say("experiment_failed")
      : progress.status === "queued" ? say("experiment_queued")
      : say("experiment_training", { p: Math.round((progress.progress || 0) * 100) });
  }
  revealReady();
}

function revealReady() {
  if (!console_) return;
  const question = state.question;
  const progress = question?.experiment?.progress;
  const waits = Boolean(question && question.answer == null && question.experiment && progress?.status !== "succeeded");
  $("cr-reveal").disabled = waits;
  const why = $("cr-reveal-why");
  why.hidden = !waits;
  why.textContent = waits ? say(progress?.status === "failed" ? "experiment_failed" : "reveal_waits") : "";
}

function hideQuestion() {
  state.question = null;
  $("cr-question").hidden = true;
  drawSeeds();
  if ($("cr-q-notice")) $("cr-q-notice").hidden = true;
  revealReady();
}

// The session ended: the note naming why (instructor, idle, or "" when unknown), with the history's link.
function showEnded(reason) {
  state.ended = true;
  const note = $("cr-ended");
  const lines = [...note.querySelectorAll("[data-reason]")];
  const known = lines.some((line) => line.dataset.reason === reason);
  for (const line of lines) line.hidden = line.dataset.reason !== (known ? reason : "");
  note.hidden = false;
  hideQuestion();
  page.setAttribute("aria-busy", "false");
  note.scrollIntoView({ block: "nearest" });
}

function label(option) {
  const words = state.question?.labels?.[option];
  if (words) return words; // the lesson's words in this reader's language (the option is their English key)
  if (option === "yes") return strings.yes;
  if (option === "no") return strings.no;
  return option;
}


// Add my seed: after the reveal of a comparison over seeds, a student trains one more seed of it; the console
// closes and reopens the window, and both see how many seeds the class added and how many still train.
const SEED_CODES = ["not_revealed", "seeds_closed", "seeds_full", "seed_pending", "quota"];

function drawSeeds() {
  const seeds = state.seeds;
  const question = state.question;
  const shown = Boolean(seeds && question && seeds.question === question.id && question.answer != null);
  $("cr-seeds").hidden = !shown;
  if (!shown) {
    $("cr-seeds-verdict").hidden = true;
    return;
  }
  const lines = [say("seeds_counts", { added: seeds.added, pending: seeds.pending, left: seeds.left })];
  if (!seeds.open) lines.push(say("seeds_closed"));
  const mine = state.mySeed?.question === question.id ? state.mySeed : null;
  const training = mine && (mine.status === "queued" || mine.status === "running");
  if (mine) lines.push(say(training ? "seed_training" : mine.status === "succeeded" ? "seed_in" : "seed_failed", { seed: mine.seed }));
  $("cr-seeds-text").textContent = lines.join(" ");
  if (console_) {
    $("cr-seeds-toggle").textContent = say(seeds.open ? "seeds_close" : "seeds_reopen");
  } else {
    $("cr-add-seed").disabled = !seeds.open || seeds.left <= 0 || Boolean(training);
  }
}

// A comparison's last training losses, as the reveal quotes them: "causal mask 0.81, no mask 0.12".
function losses(frame) {
  const finals = frame.experiment?.finals || [];
  return finals.map((f) => `${label(f.option)} ${f.loss == null ? strings.diverged : f.loss.toFixed(3)}`).join(", ");
}

function drawOptions() {
  const question = state.question;
  if (!question) return;
  const buttons = (question.options || []).map((option) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label(option);
    button.dataset.option = option;
    button.classList.toggle("mine", option === state.mine);
    button.classList.toggle("answer", option === question.answer);
    const closed = question.answer != null || (state.mine != null && !console_);
    // The console reveals a multiple-choice question by naming its right option; an exercise's is the lesson's own.
    const names = console_ && question.kind === "choice" && !question.exercise;
    button.disabled = closed && !(names && question.answer == null);
    button.addEventListener("click", () => {
      if (console_) {
        if (names) send({ type: "reveal", answer: option }); // the right option, revealed
      } else {
        send({ type: "answer", question: question.id, choice: option });
      }
    });
    return button;
  });
  $("cr-q-options").replaceChildren(...buttons);
}

function histogram(frame) {
  const question = state.question;
  if (!question || frame.question !== question.id) return;
  const counts = frame.counts || {};
  const labels = Object.keys(counts);
  $("cr-q-count").textContent = say("answered", { n: frame.total ?? 0 });
  const colors = labels.map((l) => (l === question.answer ? COLORS.chosen || "#2f6fde" : COLORS.other || "#aab4c5"));
  plot("cr-hist", [{ type: "bar", x: labels.map(label), y: labels.map((l) => counts[l]), marker: { color: colors },
                     hovertemplate: "%{x}: %{y}<extra></extra>" }],
       { margin: { l: 40, r: 10, t: 10, b: 60 }, xaxis: { type: "category" },
         yaxis: { title: { text: strings.answer_label }, dtick: 1, rangemode: "tozero" } },
       { config: { displayModeBar: false }, alt: `${strings.answer_label}: ${frame.total ?? 0}` });
  $("cr-hist").dataset.total = String(frame.total ?? 0);
}

function scores(rows) {
  const body = $("cr-scores");
  if (!body) return;
  body.replaceChildren(...rows.map((row) => {
    const tr = document.createElement("tr");
    for (const value of [row.name, row.score, row.answered]) {
      const td = document.createElement("td");
      td.textContent = value;
      tr.append(td);
    }
    return tr;
  }));
}

const typed = $("cr-q-typed");
if (typed) {
  typed.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("cr-q-typed-input").value.trim();
    if (value && state.question) send({ type: "answer", question: state.question.id, choice: value });
  });
}

// -- the lesson, taught live -----------------------------------------------------------------------

// The part of a lesson page the console put on every screen: read from the page itself (in this reader's
// language, the part's fragment the server cut from the page: its heading to the next one, without the page's own
// demonstration forms, as the class's demonstration is the console's, below it). A later part replaces one still
// loading.
let lessonShown = 0;

function partOf(doc, part) {
  const article = doc.querySelector("article.lesson");
  if (!article) return [];
  const start = part ? article.querySelector(`h2[id="${CSS.escape(part)}"]`) : article.firstElementChild;
  const nodes = [];
  for (let node = start; node; node = node.nextElementSibling) {
    if (node !== start && (node.tagName === "H2" || node.matches(".exercises, section"))) break;
    nodes.push(node);
  }
  return nodes;
}

function showLesson(frame) {
  const shown = ++lessonShown;
  $("cr-lesson").hidden = false;
  $("cr-lesson").dataset.page = frame.page;
  $("cr-lesson").dataset.part = frame.part;
  $("cr-lesson-link").href = frame.part ? `${frame.url}#${frame.part}` : frame.url;
  $("cr-lesson-demo").hidden = true; // a new part: the last demonstration was about another one
  const box = $("cr-lesson-part");
  box.setAttribute("aria-busy", "true");
  track(textOf(frame, frame.fragment).then((text) => {
    const doc = new DOMParser().parseFromString(text, "text/html");
    if (shown !== lessonShown) return;
    const nodes = partOf(doc, frame.part).map((node) => document.importNode(node, true));
    for (const node of nodes) node.querySelectorAll(".demo, script:not([type='application/json'])").forEach((e) => e.remove());
    box.replaceChildren(...nodes.filter((node) => !node.matches(".demo")));
    if (!nodes.length) throw new Error("no such part");
    drawFigureSets(box, { lazy: true });
  }).catch(() => {
    if (shown === lessonShown) box.textContent = say("lesson_failed");
  }).finally(() => {
    if (shown === lessonShown) box.setAttribute("aria-busy", "false");
  }));
}

// The demonstration the console ran for the class: drawn from the session (one worker job for everyone); a
// predicted experiment's result goes to the same place at its reveal.
let demoShown = 0;

function showDemo(frame) {
  $("cr-lesson-demo").dataset.n = String(frame.n);
  showFragment(frame, frame.url, say("demo_from", { model: frame.model }), async (root) => queryButtons(root, frame));
}

// The demonstration's query tokens: the console's pick runs it again for every screen; a student's screen follows.
const DEMO_FIELDS = ["sentence", "partner", "layer", "head", "norm"];

function queryButtons(root, frame) {
  const buttons = root.querySelectorAll("button[data-query]");
  for (const button of buttons) {
    if (!console_) {
      button.disabled = true;
      button.title = say("query_console");
      continue;
    }
    button.addEventListener("click", () => {
      const fields = Object.fromEntries(DEMO_FIELDS.filter((k) => frame.params?.[k] != null).map((k) => [k, frame.params[k]]));
      send({ type: "demo", kind: frame.kind, model: frame.model, ...fields, query: Number(button.dataset.query) });
    });
  }
  if (buttons.length && !console_) {
    const note = document.createElement("p");
    note.className = "muted";
    note.dataset.testid = "query-note";
    note.textContent = say("query_console");
    buttons[0].parentElement.after(note);
  }
}

function experimentWaiting() {
  demoShown += 1; // a fragment still loading is not this question's
  $("cr-lesson").hidden = false;
  $("cr-lesson-demo").hidden = false;
  $("cr-demo-status").textContent = say("experiment_waiting");
  $("cr-demo-result").replaceChildren();
}

function showExperiment(reveal) { // a result kept from before the question is said to be one, and what measured it
  const { kept, machine } = reveal.experiment;
  const said = kept && machine ? say("experiment_kept_on", { machine }) : say(kept ? "experiment_kept" : "experiment_result");
  const line = `${said} ${say("replayed")}`;
  showFragment(reveal, reveal.experiment.url, line, replayLoss);
}

// The comparison's loss curves drawn step by step at the reveal, in about three seconds whatever the run took: the
// class watches the training unfold without having seen it before they answered.
const REPLAY_FRAMES = 40;
const REPLAY_MS = 75;

async function replayLoss(root) {
  const set = root.querySelector(".figure-set");
  const div = set?.querySelector(".plot[data-figure=loss]");
  const data = set?.querySelector(":scope > script[type='application/json']");
  if (!div || !data) return;
  const figure = JSON.parse(data.textContent).loss;
  if (!figure) return;
  div.dataset.drawn = "1"; // the other figures are drawn at once; this one here
  const longest = Math.max(...figure.data.map((trace) => trace.x.length));
  const layout = { ...figure.layout, xaxis: { ...(figure.layout.xaxis || {}), range: [1, longest], autorange: false } };
  for (let frame = 1; frame <= REPLAY_FRAMES; frame += 1) {
    const k = Math.ceil((longest * frame) / REPLAY_FRAMES);
    await plot(div, figure.data.map((trace) => ({ ...trace, x: trace.x.slice(0, k), y: trace.y.slice(0, k) })), layout);
    div.dataset.replayed = String(k);
    if (frame < REPLAY_FRAMES) await new Promise((resolve) => { setTimeout(resolve, REPLAY_MS); });
  }
}

// What a frame shows: its own `html` (the server rendered it once, in this screen's language), else read from `url`.
async function textOf(frame, url) {
  if (typeof frame.html === "string") return frame.html;
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new Error(String(response.status));
  return response.text();
}

function showFragment(frame, url, line, before = async () => {}) {
  const shown = ++demoShown;
  const panel = $("cr-lesson-demo");
  $("cr-lesson").hidden = false;
  panel.hidden = false;
  panel.setAttribute("aria-busy", "true");
  $("cr-demo-status").textContent = line;
  track(textOf(frame, url).then((html) => {
    if (shown !== demoShown) return;
    const result = $("cr-demo-result");
    result.innerHTML = html; // the server's own fragment: every value in it escaped by the template
    const replay = before(result);
    drawFigureSets(result, { lazy: true });
    return replay;
  }).catch(() => {
    if (shown === demoShown) $("cr-demo-status").textContent = say("lesson_failed");
  }).finally(() => {
    if (shown === demoShown) panel.setAttribute("aria-busy", "false");
  }));
}

// -- the console -----------------------------------------------------------------------------------

function runFrame(stepMode) {
  const strategy = document.querySelector("input[name=strategy]:checked").value;
  const frame = { type: "run", model: $("cr-model").value, source: $("cr-source").value, strategy,
                  step_mode: stepMode, pace_ms: stepMode ? 0 : Number($("cr-pace").value) };
  if (strategy === "beam") frame.beam_size = Number($("cr-beams").value);
  return frame;
}

// A step-mode run asked for and not yet started counts: its steps wait for it (the worker keeps them).
function stepping() {
  const request = state.request;
  return state.stepRunAsked || (request && !request.done && request.start.step_mode);
}

// -- the lesson plan: the console steps through it, each step sent as the console's own control would send it ---

function setUpPlan(lang) {
  const plans = JSON.parse($("cr-plans").textContent);
  const picker = $("cr-plan-picker");
  const place = { plan: null, at: 0 };
  const key = () => `encdec-plan:${page.dataset.socket}:${place.plan.id}`; // where this console is in it (a reload resumes)
  const optionText = (select, value) => [...$(select).options].find((o) => o.value === value)?.textContent.trim() ?? value;

  function describe(step) {
    switch (step.do) {
      case "lesson": return say("plan_lesson", { what: optionText("cr-part", `${step.page}#${step.part ?? ""}`) });
      case "demo": return say("plan_demo", { kind: demoTitle(step.kind), sentence: step.sentence ?? "" });
      case "exercise": return say("plan_exercise", { what: optionText("cr-exercise", step.exercise) });
      case "experiment": return say("plan_experiment", { what: optionText("cr-experiment", step.kind) });
      case "question": return say("plan_question", { what: step.prompt || strings.kinds[step.kind] || step.kind });
      default: return say(step.step_mode ? "plan_step_mode" : "plan_decode", { what: step.source });
    }
  }

  // A demonstration named as the console's part picker names the part it belongs to (its kind is a code).
  function demoTitle(kind) {
    const option = [...$("cr-part").options].find((o) => o.dataset.demo === kind);
    return option ? option.textContent.trim() : kind;
  }

  function frameOf(step) {
    const { do: what, note, ...fields } = step;
    if (what === "lesson") return { type: "lesson", page: fields.page, part: fields.part ?? "" };
    if (what === "exercise" || what === "experiment") return { type: what, ...fields, lang: lang() };
    if (what === "decode") return { type: "run", ...fields };
    return { type: what, ...fields }; // demo, question
  }

  function show() {
    const { plan, at } = place;
    for (const id of ["cr-plan-prev", "cr-plan-do", "cr-plan-skip"]) $(id).disabled = !plan;
    $("cr-plan-note").textContent = "";
    $("cr-plan-note").classList.remove("error");
    if (!plan) {
      $("cr-plan-next").textContent = say("plan_none");
      return;
    }
    sessionStorage.setItem(key(), String(at));
    $("cr-plan-prev").disabled = at === 0;
    $("cr-plan-do").disabled = $("cr-plan-skip").disabled = at >= plan.steps.length;
    if (at >= plan.steps.length) {
      $("cr-plan-next").textContent = say("plan_done", { total: plan.steps.length });
      return;
    }
    const step = plan.steps[at];
    $("cr-plan-next").textContent = say("plan_step", { n: at + 1, total: plan.steps.length, what: describe(step) });
    $("cr-plan-note").textContent = step.note || "";
  }

  function choose(id) {
    place.plan = plans.find((p) => p.id === id) || null;
    place.at = place.plan ? Math.min(Number(sessionStorage.getItem(key()) || 0), place.plan.steps.length) : 0;
    show();
  }

  picker.addEventListener("change", () => {
    choose(picker.value);
    send({ type: "plan", plan: picker.value || null });
  });
  // The plan moves on only once the server has taken the step; a refused step stays, with the reason beside it.
  $("cr-plan-do").addEventListener("click", async () => {
    const step = place.plan?.steps[place.at];
    if (!step) return;
    if (step.do === "lesson") { // the console's own picker follows, so the part's demonstration is at hand
      $("cr-part").value = `${step.page}#${step.part ?? ""}`;
      $("cr-part").dispatchEvent(new Event("change"));
    }
    if (step.do === "demo" && step.sentence) $("cr-demo-sentence").value = step.sentence;
    const at = place.at;
    $("cr-plan-do").disabled = true;
    $("cr-plan-note").textContent = say("plan_working");
    if (step.do === "decode") state.stepRunAsked = Boolean(step.step_mode); // Step, pressed at once, waits for its start
    const outcome = await sendAwaited(frameOf(step));
    if (step.do === "decode" && !outcome.taken) state.stepRunAsked = false;
    if (place.at !== at) return; // the console moved meanwhile (Skip, Back)
    if (outcome.taken) place.at += 1;
    show();
    if (!outcome.taken) {
      $("cr-plan-note").textContent = say("plan_refused", { why: outcome.message });
      $("cr-plan-note").classList.add("error");
    }
  });
  $("cr-plan-skip").addEventListener("click", () => { place.at += 1; show(); });
  $("cr-plan-prev").addEventListener("click", () => { place.at = Math.max(0, place.at - 1); show(); });
  choose(picker.value);
}

function sendViews() {
  const shown = [...document.querySelectorAll("#cr-views input:checked")].map((box) => box.value);
  const view = views.view();
  send({ type: "views", views: shown, layer: view.layer ?? null, encoder_layer: view.encoder_layer ?? null,
         head: view.head });
}

// End the session: the dialog asks first (without scripts, the button opens the same question as a page).
const endAsk = $("cr-end-ask");
const endDialog = $("cr-end-dialog");
if (endAsk && endDialog && typeof endDialog.showModal === "function") {
  endAsk.addEventListener("submit", (event) => {
    event.preventDefault();
    endDialog.showModal();
  });
  endDialog.querySelector("[data-end-cancel]").addEventListener("click", (event) => {
    event.preventDefault();
    endDialog.close();
  });
}

if (console_) {
  $("cr-seeds-toggle").addEventListener("click", () => {
    if (state.seeds) send({ type: "seeds", open: !state.seeds.open });
  });
} else {
  $("cr-add-seed").addEventListener("click", () => {
    if (state.question) send({ type: "add_seed", question: state.question.id });
  });
}

if (console_) {
  $("cr-run").addEventListener("click", () => {
    state.stepRunAsked = false;
    send(runFrame(false));
  });
  $("cr-step").addEventListener("click", () => {
    if (stepping()) send({ type: "step" });
    else state.stepRunAsked = send(runFrame(true));
  });
  $("cr-cancel").addEventListener("click", () => send({ type: "cancel" }));
  $("cr-reveal").addEventListener("click", () => send({ type: "reveal" }));
  $("cr-close-q").addEventListener("click", () => send({ type: "close_question" }));
  for (const box of document.querySelectorAll("#cr-views input")) box.addEventListener("change", sendViews);
  for (const chipButton of document.querySelectorAll("[data-example]")) {
    chipButton.addEventListener("click", () => { $("cr-source").value = chipButton.dataset.example; });
  }
  const part = $("cr-part");
  const demoOfPart = () => part.selectedOptions[0]?.dataset.demo || "";
  const partChosen = () => { $("cr-demo-controls").hidden = !demoOfPart(); };
  part.addEventListener("change", partChosen);
  partChosen();
  $("cr-lesson-show").addEventListener("click", () => {
    const [pageName, partName] = part.value.split("#");
    send({ type: "lesson", page: pageName, part: partName });
  });
  $("cr-demo-run").addEventListener("click", () => {
    if (demoOfPart()) send({ type: "demo", kind: demoOfPart(), sentence: $("cr-demo-sentence").value });
  });
  const lang = () => (document.documentElement.lang.startsWith("zh") ? "zh-hans" : "en");
  setUpPlan(lang);
  $("cr-exercise-ask").addEventListener("click", () => {
    send({ type: "exercise", exercise: $("cr-exercise").value, lang: lang() });
  });
  $("cr-experiment-ask").addEventListener("click", () => {
    send({ type: "experiment", kind: $("cr-experiment").value, lang: lang() });
  });
  for (const ask of document.querySelectorAll("[data-ask]")) {
    ask.addEventListener("click", () => {
      const frame = { type: "question", kind: ask.dataset.ask };
      if (frame.kind === "choice") {
        frame.prompt = $("cr-choice-prompt").value;
        frame.options = $("cr-choice-options").value.split("\n").map((o) => o.trim()).filter(Boolean);
      }
      send(frame);
    });
  }
}
