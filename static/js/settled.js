// The page says when the work it started has landed: <html data-settled="yes"> once it has loaded and no htmx
// request, chart drawing or other tracked work is in flight, "no" while any is. The browser tests wait on it
// instead of pausing for a guessed time.
//
// One count per page: a module imported under two addresses (the hashed one in a template, the plain one in an
// import) runs twice, so the count lives on window.
const work = (window.encdecWork ??= { pending: 0, listening: false });

function mark() {
  document.documentElement.dataset.settled = work.pending === 0 && document.readyState === "complete" ? "yes" : "no";
}

function begin() {
  work.pending += 1;
  mark();
}

function end() {
  work.pending -= 1;
  mark();
}

// Count `promise` (or a value) as work in flight until it settles; returns it.
export function track(promise) {
  begin();
  return Promise.resolve(promise).finally(end);
}

if (!work.listening) {
  work.listening = true;
  mark();
  window.addEventListener("load", mark);
  document.addEventListener("htmx:beforeRequest", begin);
  // htmx swaps the answer in, then settles it 20 ms later, when the fragment's own scripts start their charts:
  // the request counts as done only after that, so the charts are counted before it stops.
  document.addEventListener("htmx:afterRequest", () => setTimeout(end, 100));
}
