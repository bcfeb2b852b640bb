// What a `done` frame's `coverage` says (docs/protocol.md): the source with each word the output lost underlined,
// and one plain sentence naming them ("上海 and 不 are not in the translation"). The playground shows it under the
// output; any screen that has a done frame and the source it was decoded from can call it the same way.

// `element`: where to draw (emptied, and hidden when there is nothing to show); `frame`: a done frame, or null;
// `source`: the text that was decoded; `say(key, values)`: the page's strings (webapp/playground/strings.py:
// coverage_label, coverage_one, coverage_many, coverage_and, coverage_none).
export function showCoverage(element, frame, source, say) {
  element.replaceChildren();
  const words = (frame && frame.coverage) || null;
  element.hidden = !words || !words.length || !source;
  if (element.hidden) return;
  const missing = words.filter((w) => !w.covered);
  element.classList.toggle("warned", missing.length > 0);

  const line = document.createElement("p");
  line.className = "cov-source";
  line.dataset.testid = "coverage-source";
  line.lang = "zh";
  line.append(...underlined(source, missing));

  const said = document.createElement("p");
  said.className = "cov-sentence";
  said.dataset.testid = "coverage-sentence";
  const names = [...new Set(missing.map((w) => w.word))];
  if (!names.length) {
    said.textContent = say("coverage_none");
  } else {
    const and = say("coverage_and");
    const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")}${and}${names[names.length - 1]}`;
    said.textContent = say(names.length === 1 ? "coverage_one" : "coverage_many", { words: list });
  }
  const label = document.createElement("span");
  label.className = "muted";
  label.textContent = say("coverage_label");
  element.append(label, line, said);
}

// The source as text nodes, each missing word (in source order) as <u> with what was looked for in its title.
function underlined(source, missing) {
  const parts = [];
  let at = 0;
  for (const word of missing) {
    const found = source.indexOf(word.word, at);
    if (found < 0) continue;
    if (found > at) parts.push(document.createTextNode(source.slice(at, found)));
    const mark = document.createElement("u");
    mark.className = `cov-missing cov-${word.kind}`;
    mark.dataset.word = word.word;
    mark.textContent = word.word;
    mark.title = (word.looked_for || []).join(" / ");
    parts.push(mark);
    at = found + word.word.length;
  }
  if (at < source.length) parts.push(document.createTextNode(source.slice(at)));
  return parts;
}
