// Before a decode: asks the server which words of the source the chosen model does not know, and shows its answer
// (a fragment of registry/partials/knowledge.html) in the panel. The decode itself is the page's business.
// A page may hold several panels (the lesson's demonstrations): each finds its source box and model picker by id
// (data-source, data-picker) or by name inside its own form (data-source-name, data-picker-name).

function field(panel, id, name) {
  if (id) return document.getElementById(id);
  return name ? panel.closest('form')?.elements.namedItem(name) : null;
}

function watch(panel) {
  const {source: sourceId, picker: pickerId, sourceName, pickerName} = panel.dataset;
  const source = field(panel, sourceId, sourceName);
  const picker = field(panel, pickerId, pickerName);
  const busy = (yes) => panel.setAttribute('aria-busy', String(yes));  // rendered busy: its first answer is on its way
  if (!source) return busy(false);
  let timer = null;
  let asked = 0;

  async function check() {
    const model = picker?.value;
    if (!model) return busy(false);
    const ticket = ++asked;
    busy(true);
    const url = panel.dataset.url.replace('__model__', encodeURIComponent(model)) +
      '?source=' + encodeURIComponent(source.value);
    try {
      const response = await fetch(url, {headers: {'HX-Request': 'true'}, credentials: 'same-origin'});
      const html = await response.text();
      if (ticket === asked) panel.innerHTML = html;  // a slower, older answer never replaces a newer one
    } catch {
      if (ticket === asked) panel.textContent = '';
    } finally {
      if (ticket === asked) busy(false);
    }
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(check, 250);
  }

  source.addEventListener('input', later);
  picker?.addEventListener('change', later);
  // Example buttons fill the source from script, which fires no input event.
  document.addEventListener('click', (event) => { if (event.target.closest('[data-example]')) later(); });
  check();
}

document.querySelectorAll('[data-knowledge]').forEach(watch);
