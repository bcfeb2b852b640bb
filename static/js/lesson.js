// Lesson pages: draw every figure set a demonstration brings (htmx swaps them in), and follow a training
// comparison live over /ws/lesson/runs/<id>/ (progress and the loss of each arm), then swap in its result.
import { chartLabel } from "./chart_labels.js";
import { drawFigureSets, liveLoss } from "./figure_style.js";
import { liveSocket } from "./socket.js";

function follow(panel) {
  if (panel.dataset.following || ["succeeded", "failed"].includes(panel.dataset.status)) return;
  panel.dataset.following = "1";
  const status = panel.querySelector(".run-status");
  const names = JSON.parse(panel.dataset.armNames || "{}"); // each arm's label in the page's language
  const bar = panel.querySelector(".progress-bar");
  const addLoss = liveLoss(panel.querySelector(".live-loss"), {
    title: { text: chartLabel("loss") }, xaxis: { title: { text: chartLabel("step") } },
    yaxis: { title: { text: chartLabel("loss") }, type: "log" } });
  const setProgress = (p) => {
    // Training has begun: the queue's place and the no-worker notice no longer hold.
    panel.querySelectorAll("[data-testid=run-queue], [data-testid=run-no-worker]").forEach((e) => e.remove());
    const percent = Math.round(p * 100);
    bar.firstElementChild.style.width = `${percent}%`;
    bar.setAttribute("aria-valuenow", percent);
    status.textContent = `${status.dataset.training} ${percent}%`;
  };
  const finish = () => {
    socket.close();
    htmx.ajax("GET", panel.dataset.runUrl, { target: panel, swap: "outerHTML" });
  };
  const onFrame = (frame) => {
    if (frame.type === "progress") {
      setProgress(frame.progress);
      addLoss(names[frame.arm] || frame.arm, frame.step, frame.loss);
    }
    if (["done", "failed"].includes(frame.type) || ["succeeded", "failed"].includes(frame.status)) finish();
  };
  const socket = liveSocket(`/ws/lesson/runs/${panel.dataset.runId}/`, { onFrame });
}

function setUp() {
  drawFigureSets(document);
  document.querySelectorAll(".run[data-run-id]").forEach(follow);
}

setUp();
document.body.addEventListener("htmx:afterSettle", setUp);

// A token button in a result re-runs its demonstration with that token as the query.
document.body.addEventListener("click", (event) => {
  const chip = event.target.closest?.("button[data-query]");
  if (!chip) return;
  const form = document.getElementById(`demo-${chip.dataset.form}-form`);
  form.querySelector("input[name=query]").value = chip.dataset.query;
  form.requestSubmit();
});

// A request refused at the web process's door (429: this browser asked too often) says so where its answer would
// go, in the page's language: the door answers in plain text, a line in English, then one in Chinese.
document.body.addEventListener("htmx:responseError", (event) => {
  const { xhr, target } = event.detail;
  if (xhr.status !== 429 || !target) return;
  const lines = xhr.responseText.trim().split("\n");
  const note = document.createElement("p");
  note.className = "demo-error";
  note.setAttribute("role", "alert");
  note.dataset.code = "rate_limited";
  note.textContent = document.documentElement.lang.startsWith("zh") ? lines[lines.length - 1] : lines[0];
  target.replaceChildren(note);
});
