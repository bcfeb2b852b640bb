// Chart words in the page's language: base.html's <script id="chart-labels"> (webapp/site_pages/templatetags/chart_labels.py).
const node = document.getElementById("chart-labels");
const LABELS = node ? JSON.parse(node.textContent) : {};

export const chartLabel = (key) => LABELS[key] ?? key;
