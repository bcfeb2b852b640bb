// One training job, live: the server's snapshot first, then each step, log line and status change
// from /ws/training/<id>/. Steps at or below the last one drawn are skipped, so a reconnect never doubles a point.
import { chartLabel } from "./chart_labels.js";
import { colorOf, plot } from "./figure_style.js";
import { liveSocket } from "./socket.js";

const root = document.getElementById("job");
const jobId = root.dataset.job;
const FINAL = new Set(["succeeded", "failed", "cancelled"]);
const EVAL_KEYS = ["exact_match", "token_accuracy", "bleu"];
const LABELS = JSON.parse(document.getElementById("status-labels").textContent);  // in the page's language
const el = (role) => root.querySelector(`[data-role="${role}"]`);
let lastStep = 0;
let status = null;

const lossLayout = { margin: { t: 10 }, xaxis: { title: { text: chartLabel("step") } }, yaxis: { title: { text: chartLabel("loss") } },
                     legend: { orientation: "h" } };
const evalLayout = { margin: { t: 10 }, xaxis: { title: { text: chartLabel("step") } },
                     yaxis: { range: [0, 1.05], title: { text: chartLabel("score") } }, legend: { orientation: "h" } };

function evalValue(row, key) {
  return key === "bleu" ? row.bleu / 100 : row[key];  // BLEU is 0..100; the plot shares the 0..1 axis
}

function drawSnapshot(snapshot) {
  const history = snapshot.history || [];
  plot("loss-plot", [{ name: chartLabel("loss"), mode: "lines", x: history.map((p) => p.step), y: history.map((p) => p.loss),
                       line: { color: colorOf("loss") } }], lossLayout);
  const evals = snapshot.evals || [];
  plot("eval-plot", EVAL_KEYS.map((key) => ({
    name: chartLabel(key), mode: "lines+markers", line: { color: colorOf(key) },
    x: evals.map((row) => row.step), y: evals.map((row) => evalValue(row, key)),
  })), evalLayout);
  lastStep = history.length ? history[history.length - 1].step : 0;
  document.getElementById("log").textContent = (snapshot.log || []).join("\n");
  setProgress(snapshot.step, snapshot.steps);
  setStatus(snapshot.status, snapshot);
}

function setProgress(step, steps) {
  const percent = status === "succeeded" ? 100 : Math.floor((100 * step) / Math.max(steps, 1));
  const bar = el("progress");
  bar.setAttribute("aria-valuenow", String(percent));
  bar.firstElementChild.style.width = `${percent}%`;
  el("percent").textContent = `${percent} %`;
  el("step").textContent = String(step);
}

function setStatus(next, frame) {
  const badge = el("status");
  const changed = status !== null && status !== next;
  status = next;
  badge.dataset.status = next;
  badge.className = `badge status-${next}`;
  badge.textContent = LABELS[next] || next;
  if (frame.error) {
    el("error").textContent = frame.error;
    el("error").hidden = false;
  }
  // A finished job's page shows its model link and the Retry button: the server draws those.
  if (changed && (FINAL.has(next) || next === "queued")) setTimeout(() => location.reload(), 400);
}

// Time left, from the steps seen in the last minute on this page (a resumed or queued job has no earlier pace).
const paces = [];
function showTimeLeft(step, steps) {
  const eta = el("eta");
  if (!eta) return;
  if (status !== "running") { eta.textContent = ""; return; }
  paces.push([performance.now(), step]);
  while (paces.length > 2 && paces[paces.length - 1][0] - paces[0][0] > 60000) paces.shift();
  const [t0, s0] = paces[0];
  const [t1, s1] = paces[paces.length - 1];
  if (s1 <= s0 || t1 - t0 < 3000) { eta.textContent = eta.dataset.measuring; return; }
  const left = ((steps - s1) * (t1 - t0)) / (s1 - s0) / 1000;
  eta.textContent = left >= 90 ? eta.dataset.minutes.replace("{n}", String(Math.round(left / 60)))
                               : eta.dataset.seconds.replace("{n}", String(Math.max(1, Math.round(left))));
}

function onStep(frame) {
  if (frame.step <= lastStep) return;
  lastStep = frame.step;
  showTimeLeft(frame.step, frame.steps);
  Plotly.extendTraces("loss-plot", { x: [[frame.step]], y: [[frame.loss]] }, [0]);
  if (frame.eval) {
    Plotly.extendTraces("eval-plot", { x: EVAL_KEYS.map(() => [frame.step]), y: EVAL_KEYS.map((k) => [evalValue(frame.eval, k)]) },
                        EVAL_KEYS.map((_, i) => i));
  }
  setProgress(frame.step, frame.steps);
}

function appendLog(line) {
  const log = document.getElementById("log");
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.textContent += (log.textContent ? "\n" : "") + line;
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function onFrame(frame) {
  if (frame.type === "snapshot") drawSnapshot(frame);
  else if (frame.type === "step") onStep(frame);
  else if (frame.type === "log") appendLog(frame.line);
  else if (frame.type === "status") setStatus(frame.status, frame);
}

drawSnapshot(JSON.parse(document.getElementById("job-snapshot").textContent));
if (!FINAL.has(status)) liveSocket(root.dataset.socket, { onFrame, reconnect: () => !FINAL.has(status) });
