// The nav badge: how many of my training jobs are queued or running, kept live by /ws/notify/.
import { liveSocket } from "./socket.js";

const badge = document.getElementById("training-badge");

function show(active) {
  badge.textContent = String(active);
  badge.dataset.active = String(active);
  badge.style.display = active === 0 ? "none" : "";
}

function onFrame(frame) {
  if (frame.type === "training" && typeof frame.active === "number") show(frame.active);
}

if (badge) liveSocket("/ws/notify/", { onFrame });
