// The page's HTTP client of the /v1 API. It sends the bearer token in the
// Authorization header (never in a URL) and X-Lifecycle-Origin: ui, which
// the server records as provenance and which grants nothing.
//
// It tells two kinds of failure apart, because the page treats them
// differently: an HttpError is a confirmed answer from the server (its
// status and error body are known); a NetworkError means the outcome is
// unknown — the request may or may not have reached the server — so a
// write is retried with the very same request, never reported as failed.

export class HttpError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || "HTTP " + status);
    this.name = "HttpError";
    this.status = status;
    this.code = err.code || "";
    this.field = err.field || "";
    this.current = err.current;
  }
}

export class NetworkError extends Error {
  constructor(cause) {
    super("no answer from the server" + (cause && cause.message ? " (" + cause.message + ")" : ""));
    this.name = "NetworkError";
    this.cause = cause;
  }
}

const DEFAULT_TIMEOUT_MS = 20000;

export class Client {
  constructor(token) {
    this.token = token;
  }

  headers(extra) {
    return Object.assign({ "Authorization": "Bearer " + this.token, "X-Lifecycle-Origin": "ui" }, extra || {});
  }

  // request resolves to {status, data} for a 2xx answer, rejects with an
  // HttpError for any other answer, with a NetworkError when there was no
  // complete answer, and with the signal's reason when the caller aborted.
  async request(method, path, body, opts) {
    const { signal, timeout = DEFAULT_TIMEOUT_MS } = opts || {};
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(new DOMException("timed out", "TimeoutError")), timeout);
    const forward = () => ctl.abort(signal.reason);
    if (signal) {
      if (signal.aborted) throw signal.reason;
      signal.addEventListener("abort", forward, { once: true });
    }
    try {
      let res;
      try {
        res = await fetch(path, {
          method,
          headers: this.headers(body === undefined ? {} : { "Content-Type": "application/json" }),
          body: body === undefined ? undefined : JSON.stringify(body),
          cache: "no-store",
          credentials: "omit",
          signal: ctl.signal,
        });
      } catch (e) {
        if (signal && signal.aborted) throw signal.reason;
        throw new NetworkError(e);
      }
      let data = null;
      try {
        data = await res.json();
      } catch (e) {
        if (signal && signal.aborted) throw signal.reason;
        // A 2xx whose body did not arrive whole is not a known success.
        if (res.ok) throw new NetworkError(e);
      }
      if (!res.ok) throw new HttpError(res.status, data);
      return { status: res.status, data };
    } finally {
      clearTimeout(timer);
      if (signal) signal.removeEventListener("abort", forward);
    }
  }
}

// newID makes a fresh identifier for a command (letters, digits, _ only).
export function newID(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + "_" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// claims decodes a JWT's payload for display. The server verifies the
// token on every request; nothing here is trusted for authorization.
export function claims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const padded = part + "=".repeat((4 - (part.length % 4)) % 4);
    const json = new TextDecoder().decode(Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)));
    const c = JSON.parse(json);
    return c && typeof c === "object" ? c : null;
  } catch (e) {
    return null;
  }
}
