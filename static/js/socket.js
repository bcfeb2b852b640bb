// Every page's live WebSocket, and the one way it comes back after a drop: a first retry after
// about half a second, each next one waiting twice as long, up to 8 s, each wait drawn between half and one and a
// half times that (a class whose Wi-Fi comes back does not knock all at once); a socket that opens starts over.
// Final: close(), and a close with 4404 (what the socket follows does not exist: a retry cannot help).
// Other closes come back, 4401 too (rights ended: the handshake checks them again).
const FIRST_RETRY_MS = 500;
const LONGEST_RETRY_MS = 8000;
const GONE = 4404;

// path: "/ws/..."; onFrame(frame) gets each JSON frame; onOpen() and onClose(event) are optional;
// reconnect() (optional) says whether a dropped socket should come back; onClose learns whether it will.
export function liveSocket(path, { onFrame, onOpen = () => {}, onClose = () => {}, reconnect = () => true }) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  let socket = null;
  let retry = FIRST_RETRY_MS;
  let stopped = false;

  function connect() {
    socket = new WebSocket(`${scheme}://${location.host}${path}`);
    socket.addEventListener("open", () => {
      retry = FIRST_RETRY_MS;
      onOpen();
    });
    socket.addEventListener("message", (event) => onFrame(JSON.parse(event.data)));
    socket.addEventListener("close", (event) => {
      const again = !stopped && event.code !== GONE && reconnect();
      onClose(event, again);
      if (!again) return;
      setTimeout(connect, retry * (0.5 + Math.random()));
      retry = Math.min(retry * 2, LONGEST_RETRY_MS);
    });
  }

  connect();
  return {
    // Sends a frame when the socket is open; false when it is not.
    send(frame) {
      if (socket.readyState !== WebSocket.OPEN) return false;
      socket.send(JSON.stringify(frame));
      return true;
    },
    close() {
      stopped = true;
      socket.close();
    },
  };
}
