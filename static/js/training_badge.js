// The nav badge: how many of my training jobs are queued or running, kept live by /ws/notify/.
const badge = document.querySelector('[data-testid="training-badge"]');

function show(active) {
  badge.textContent = String(active);
  badge.dataset.active = String(active);
  badge.style.display = active === 0 ? "none" : "";
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const socket = new WebSocket(`${scheme}${location.host}/ws/notify/`);
  socket.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    if (frame.type === "training" && typeof frame.active === "number") show(frame.active);
  };
  socket.onclose = () => setTimeout(connect, 5000);
}

if (badge) connect();
