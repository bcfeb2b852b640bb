// A model card's alignment heatmap (registry/partials/alignment.html): the figure the server built, with its text alternative.
import { plot } from "./figure_style.js";

const figure = JSON.parse(document.getElementById("alignment-data").textContent);
plot("alignment", figure.data, figure.layout, { alt: figure.alt });
