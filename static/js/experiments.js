// Experiment pages: draw every figure set, and follow launched runs live over /ws/experiments/<id>/.
import { chartLabel } from "./chart_labels.js";
import { drawFigureSets, liveLoss } from "./figure_style.js";
import { liveSocket } from "./socket.js";

function followRun(panel) {
  if (panel.dataset.following || ["succeeded", "failed"].includes(panel.dataset.status)) return;
  panel.dataset.following = "1";
  const bar = panel.querySelector(".run-progress");
  const status = panel.querySelector(".run-status");
  const live = panel.querySelector(".live-loss");
  const labels = JSON.parse(panel.dataset.statusLabels || "{}");
  // Drawn at the first loss point: a run that trains nothing (gradients at initialisation) shows no empty chart.
  const addLoss = live && liveLoss(live, { margin: { t: 30 }, title: { text: chartLabel("loss") },
                                           xaxis: { title: { text: chartLabel("step") } },
                                           yaxis: { title: { text: chartLabel("loss") } } });
  const setProgress = (p) => { bar.style.width = `${Math.round(p * 100)}%`; bar.parentElement.setAttribute("aria-valuenow", Math.round(p * 100)); };
  const showResult = () => {
    socket.close();
    setProgress(1);
    // The result brings the whole loss curve: the live one goes, not to be read twice.
    htmx.ajax("GET", panel.dataset.resultUrl, { target: panel.querySelector(".run-result"), swap: "innerHTML" })
      .then(() => live?.remove());
  };
  const onFrame = (frame) => {
    if (frame.status) { status.textContent = labels[frame.status] || frame.status; panel.dataset.status = frame.status; }
    if (frame.status === "running" || frame.type === "progress") panel.querySelector("[data-testid=run-queue]")?.remove();
    // After the last step the worker still evaluates and stores the result; between steps it may evaluate too.
    if (frame.type === "progress" && panel.dataset.status !== "succeeded") {
      const phase = frame.progress >= 1 ? "finishing" : frame.evaluates_next ? "evaluating" : "running";
      status.textContent = labels[phase] || labels.running;
    }
    if (typeof frame.progress === "number") setProgress(frame.progress);
    if (frame.type === "progress" && addLoss && frame.arm !== undefined && typeof frame.loss === "number") {
      addLoss(frame.arm, frame.step, frame.loss);
    }
    if (frame.type === "done" || (frame.type === "state" && frame.status === "succeeded")) showResult();
    if (frame.type === "failed" || (frame.type === "state" && frame.status === "failed")) {
      panel.dataset.status = "failed";
      // The program's own words (English, like a traceback's) shown as code beside the translated status.
      const detail = document.createElement("code");
      detail.textContent = frame.message || frame.error || "";
      status.replaceChildren(`${labels.failed || "failed"}: `, detail);
      socket.close();
    }
  };
  const socket = liveSocket(`/ws/experiments/${panel.dataset.runId}/`, { onFrame });
}

function setUp(root) {
  drawFigureSets(root);
  const panels = root.matches?.(".run-panel") ? [root] : [...root.querySelectorAll(".run-panel")];
  panels.forEach(followRun);
}

// htmx.onLoad runs for the page and for every fragment htmx swaps in.
htmx.onLoad(setUp);
