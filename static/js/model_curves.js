// Training curves of one registered model: each numeric field of metrics.history against its step.
import { chartLabel } from "./chart_labels.js";
import { colorOf, plot } from "./figure_style.js";

const history = JSON.parse(document.getElementById("history-data").textContent);
const keys = new Set();
for (const row of history) for (const [key, value] of Object.entries(row)) if (key !== "step" && typeof value === "number") keys.add(key);
const traces = [...keys].map((key) => {
  const rows = history.filter((row) => typeof row[key] === "number");
  return { name: chartLabel(key), x: rows.map((row) => row.step), y: rows.map((row) => row[key]), mode: "lines+markers",
           yaxis: key.includes("loss") ? "y" : "y2", line: { color: colorOf(key) } };
});
// The right axis is titled by what it carries (the learning rate, say), not "metric".
const right = traces.filter((trace) => trace.yaxis === "y2").map((trace) => trace.name).join(" · ");
plot("curves", traces, {
  margin: { t: 20 }, xaxis: { title: { text: chartLabel("step") } }, yaxis: { title: { text: chartLabel("loss") } },
  yaxis2: { title: { text: right }, overlaying: "y", side: "right", rangemode: "tozero", exponentformat: "power" },
});
