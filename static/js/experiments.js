// Experiment pages: draw every figure set, and follow launched runs live over /ws/experiments/<id>/.
import { chartLabel } from "./chart_labels.js";
import { colorOf, describe, drawFigureSets, plot } from "./figure_style.js";
import { liveSocket } from "./socket.js";

function followRun(panel) {
  if (panel.dataset.following || ["succeeded", "failed"].includes(panel.dataset.status)) return;
  panel.dataset.following = "1";
  const bar = panel.querySelector(".run-progress");
  const status = panel.querySelector(".run-status");
  const live = panel.querySelector(".live-loss");
  const labels = JSON.parse(panel.dataset.statusLabels || "{}");
  const arms = new Map(); // arm label -> trace index of the live loss chart
  // Rendered hidden and drawn at the first loss point: a run that trains nothing (gradients at initialisation)
  // shows no empty chart.
  const liveLayout = { margin: { t: 30 }, title: { text: chartLabel("loss") }, xaxis: { title: { text: chartLabel("step") } },
                       yaxis: { title: { text: chartLabel("loss") } } };
  const setProgress = (p) => { bar.style.width = `${Math.round(p * 100)}%`; bar.parentElement.setAttribute("aria-valuenow", Math.round(p * 100)); };
  const showResult = () => {
    socket.close();
    setProgress(1);
    htmx.ajax("GET", panel.dataset.resultUrl, { target: panel.querySelector(".run-result"), swap: "innerHTML" });
  };
  const onFrame = (frame) => {
    if (frame.status) { status.textContent = labels[frame.status] || frame.status; panel.dataset.status = frame.status; }
    if (typeof frame.progress === "number") setProgress(frame.progress);
    if (frame.type === "progress" && live && frame.arm !== undefined && typeof frame.loss === "number") {
      if (live.hidden) {
        live.hidden = false;
        plot(live, [], liveLayout);
      }
      if (!arms.has(frame.arm)) {
        arms.set(frame.arm, arms.size);
        Plotly.addTraces(live, { x: [], y: [], mode: "lines", name: chartLabel(frame.arm), line: { color: colorOf(frame.arm) } });
        live.setAttribute("aria-label", describe(live.data, liveLayout));  // drawn with no series: now it names them
      }
      Plotly.extendTraces(live, { x: [[frame.step]], y: [[frame.loss]] }, [arms.get(frame.arm)]);
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
