// follow reads a session's event log live: GET /v1/sessions/{id}/events as
// server-sent events, read with fetch() so the bearer token travels in the
// Authorization header (EventSource cannot send one, and a token in a URL
// ends up in logs and history). It resumes after every disconnection with
// Last-Event-ID, the position of the last event it delivered, so no event
// is lost or delivered twice across reconnects.
//
// Where the server answers the route with JSON batches instead of a stream
// (API Gateway cannot stream), it long-polls ?wait= batches from the same
// position.
//
// It never reports an error for a disconnection: it says "reconnecting"
// and tries again with a growing delay. Only a refused token (401) stops it.

const MIN_DELAY_MS = 250;

class Unauthorized extends Error {}
const MAX_DELAY_MS = 10000;

function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

// follow({client, session, after, signal, onEvent, onState, onUnauthorized})
// onState receives "connecting", "live" or "reconnecting".
export async function follow(o) {
  let last = o.after || 0;
  let delay = MIN_DELAY_MS;
  let connected = false;
  const path = "/v1/sessions/" + encodeURIComponent(o.session) + "/events";
  while (!o.signal.aborted) {
    o.onState(connected ? "reconnecting" : "connecting");
    try {
      const res = await fetch(path, {
        headers: o.client.headers({ "Accept": "text/event-stream", "Last-Event-ID": String(last) }),
        cache: "no-store",
        credentials: "omit",
        signal: o.signal,
      });
      if (res.status === 401) {
        o.onUnauthorized();
        return;
      }
      if (res.ok) {
        connected = true;
        delay = MIN_DELAY_MS;
        o.onState("live");
        const type = res.headers.get("Content-Type") || "";
        if (type.startsWith("text/event-stream")) {
          last = await readStream(res, last, o, (ms) => { delay = Math.max(MIN_DELAY_MS, ms); });
        } else {
          last = deliverBatch(await res.json(), last, o);
          last = await longPoll(path, last, o);
        }
      } else {
        await res.body?.cancel();
      }
    } catch (e) {
      if (o.signal.aborted) return;
      if (e instanceof Unauthorized) return;
    }
    if (o.signal.aborted) return;
    o.onState("reconnecting");
    await sleep(delay + Math.random() * delay * 0.3, o.signal);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }
}

function deliver(ev, last, o) {
  if (typeof ev.seq === "number" && ev.seq <= last) return last; // already delivered
  if (typeof ev.seq === "number") last = ev.seq;
  o.onEvent(ev);
  return last;
}

function deliverBatch(batch, last, o) {
  for (const ev of (batch && batch.events) || []) last = deliver(ev, last, o);
  return batch && typeof batch.next === "number" && batch.next > last ? batch.next : last;
}

async function longPoll(path, last, o) {
  for (;;) {
    const res = await fetch(path + "?wait=25&after=" + last, {
      headers: o.client.headers({ "Accept": "application/json" }),
      cache: "no-store",
      credentials: "omit",
      signal: o.signal,
    });
    if (res.status === 401) {
      o.onUnauthorized();
      throw new Unauthorized();
    }
    if (!res.ok) return last;
    last = deliverBatch(await res.json(), last, o);
  }
}

// readStream parses text/event-stream (the WHATWG format: "field: value"
// lines, a blank line ends an event, ":" starts a comment) and returns the
// last delivered position when the stream ends.
async function readStream(res, last, o, setRetry) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let data = [];
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      if (buf[nl] === "\r" && nl === buf.length - 1) break; // maybe half of \r\n
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (data.length) {
          let ev = null;
          try {
            ev = JSON.parse(data.join("\n"));
          } catch (e) {
            ev = null;
          }
          if (ev) {
            if (id !== null && typeof ev.seq !== "number") ev.seq = Number(id);
            last = deliver(ev, last, o);
          }
        }
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "data") data.push(val);
      else if (field === "id") id = val;
      else if (field === "retry" && /^\d+$/.test(val)) setRetry(Number(val));
    }
  }
}
