// Before a decode: asks the server which words of the source the chosen model does not know, and shows its answer
// (a fragment of registry/partials/knowledge.html) in the panel. The decode itself is the playground's business.
const panel = document.querySelector('[data-knowledge]');
const source = document.getElementById(panel?.dataset.source || '');
const picker = document.getElementById(panel?.dataset.picker || '');
let timer = null;
let asked = 0;

async function check() {
  const model = picker?.value;
  if (!model || !source) return;
  const ticket = ++asked;
  const url = panel.dataset.url.replace('__model__', encodeURIComponent(model)) +
    '?source=' + encodeURIComponent(source.value);
  try {
    const response = await fetch(url, {headers: {'HX-Request': 'true'}, credentials: 'same-origin'});
    const html = await response.text();
    if (ticket === asked) panel.innerHTML = html;  // a slower, older answer never replaces a newer one
  } catch {
    if (ticket === asked) panel.textContent = '';
  }
}

function later() {
  clearTimeout(timer);
  timer = setTimeout(check, 250);
}

if (panel && source) {
  source.addEventListener('input', later);
  picker?.addEventListener('change', later);
  // Example buttons fill the source from script, which fires no input event.
  document.addEventListener('click', (event) => { if (event.target.closest('[data-example]')) later(); });
  check();
}
