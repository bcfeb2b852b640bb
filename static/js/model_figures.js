// A model card's figures (its alignment heatmap, its learning curve): each element with data-figure names the
// json_script holding the figure the server built, with its text alternative.
import { plot } from "./figure_style.js";

document.querySelectorAll("[data-figure]").forEach((element) => {
  const figure = JSON.parse(document.getElementById(element.dataset.figure).textContent);
  plot(element.id, figure.data, figure.layout, { alt: figure.alt });
});
