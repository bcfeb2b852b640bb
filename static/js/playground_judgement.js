// What a `done` frame says of its output (docs/protocol.md): how sure the model is, and each warning in plain words.
// The playground and the classroom's screens both show it beside the output.

const percent = (x) => `${Math.round(100 * x)}`;

// `frame` is a done frame (or null: nothing to show); `say(key, values)` gives the page's strings.
export function showJudgement(element, frame, say) {
  element.replaceChildren();
  const judged = frame && frame.confidence != null;
  element.hidden = !judged;
  element.classList.toggle("warned", Boolean(judged && frame.warnings.length));
  if (!judged) return;
  const line = document.createElement("p");
  line.className = "pg-confidence";
  line.dataset.testid = "confidence";
  line.textContent = say(frame.calibrated ? "confidence" : "confidence_uncalibrated", { p: percent(frame.confidence) });
  const words = (frame.unknown_words || []).join(document.documentElement.lang.startsWith("zh") ? "、" : ", ");
  const values = { p: percent(frame.confidence), t: percent(frame.confidence_threshold ?? 0.5), words };
  const items = frame.warnings.map((code) => {
    const item = document.createElement("li");
    item.dataset.code = code;
    item.textContent = say(`warn_${code}`, values);
    return item;
  });
  if (!items.length) {
    const none = document.createElement("li");
    none.textContent = say("no_warning");
    items.push(none);
  }
  const list = document.createElement("ul");
  list.dataset.testid = "warnings";
  list.append(...items);
  element.append(line, list);
}
