// Lesson pages: draw every figure set a demonstration or a training run brings (htmx swaps them in).
import { plot } from "./figure_style.js";

function draw(root) {
  const sets = root.matches?.(".figure-set") ? [root] : [...root.querySelectorAll(".figure-set")];
  for (const set of sets) {
    const data = set.querySelector(":scope > script[type='application/json']");
    if (!data) continue;
    const figures = JSON.parse(data.textContent);
    for (const div of set.querySelectorAll(".plot[data-figure]")) {
      const figure = figures[div.dataset.figure];
      if (!figure || div.dataset.drawn) continue;
      plot(div, figure.data, figure.layout);
      div.dataset.drawn = "1";
    }
  }
}

draw(document);
document.body.addEventListener("htmx:afterSettle", () => draw(document));

// A token button in a result re-runs its demonstration with that token as the query.
document.body.addEventListener("click", (event) => {
  const chip = event.target.closest?.("button[data-query]");
  if (!chip) return;
  const form = document.querySelector(`[data-testid=demo-form-${chip.dataset.form}]`);
  form.querySelector("input[name=query]").value = chip.dataset.query;
  form.requestSubmit();
});
