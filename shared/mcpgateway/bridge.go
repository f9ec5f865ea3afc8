package mcpgateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeConfig names the gateway a stdio client is bridged to.
type BridgeConfig struct {
	// URL is the gateway's endpoint (http://127.0.0.1:8080/mcp).
	URL string
	// Token is the agent's bearer token, sent on every request.
	Token string
	// HTTPClient defaults to one without a timeout (calls are held while a
	// human decides).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Bridge serves an MCP client on local (stdio, for clients that launch a
// command) by pumping its messages, unchanged, to the gateway's streamable
// HTTP endpoint and the gateway's messages back: request ids, progress
// tokens and cancellations pass through, so a retried request id is still
// one action and a cancelled call still cancels its approval. Nothing is
// decided here. It returns when the local client closes.
func Bridge(ctx context.Context, local mcp.Transport, cfg BridgeConfig) error {
	if cfg.URL == "" {
		return errors.New("mcp bridge: no gateway URL")
	}
	if cfg.Token == "" {
		return errors.New("mcp bridge: no token (an agent token: lifecycle token --role agent --session ID)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	base := http.DefaultTransport
	if cfg.HTTPClient != nil && cfg.HTTPClient.Transport != nil {
		base = cfg.HTTPClient.Transport
	}
	b := &bridge{cfg: cfg, rt: &bridgeTransport{token: cfg.Token, base: base}}
	b.client = &http.Client{Transport: b.rt}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	if b.local, err = local.Connect(ctx); err != nil {
		return fmt.Errorf("mcp bridge: open the local transport: %w", err)
	}
	defer b.local.Close()
	remote := &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: b.client}
	if b.remote, err = remote.Connect(ctx); err != nil {
		return fmt.Errorf("mcp bridge: connect to %s: %w", cfg.URL, err)
	}
	// Closing ends the gateway's MCP session (DELETE): its held calls are
	// cancelled, as when an HTTP client goes away.
	defer b.remote.Close()
	// A failed gateway connection does not end the bridge: every request
	// the client sends after it is answered with the failure, and the
	// client decides when to close.
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.inbound(ctx); err != nil {
			cfg.Logger.Error("mcp bridge: the gateway connection failed; requests are answered with the failure", "error", err)
		}
	}()
	err = b.outbound(ctx)
	cancel()
	b.wg.Wait()
	return err
}

type bridge struct {
	cfg    BridgeConfig
	rt     *bridgeTransport
	client *http.Client
	local  mcp.Connection
	remote mcp.Connection
	wg     sync.WaitGroup // in-flight writes and the notification stream

	mu      sync.Mutex
	initIDs map[any]bool // ids of initialize requests
	started atomic.Bool  // the notification stream is open
}

// outbound sends the local client's messages to the gateway. A request
// is sent on its own goroutine, because the gateway holds a call's POST
// until its outcome; initialize, notifications and responses go in order.
func (b *bridge) outbound(ctx context.Context) error {
	for {
		msg, err := b.local.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil // the client closed
			}
			return fmt.Errorf("mcp bridge: read the local client: %w", err)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if isReq && req.IsCall() && req.Method == "initialize" {
			b.mu.Lock()
			if b.initIDs == nil {
				b.initIDs = map[any]bool{}
			}
			b.initIDs[req.ID.Raw()] = true
			b.mu.Unlock()
		}
		if isReq && req.IsCall() && req.Method != "initialize" {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.send(ctx, msg)
			}()
			continue
		}
		b.send(ctx, msg)
	}
}

// send writes one message to the gateway; a request that could not be
// sent is answered locally, so the client never waits for nothing.
func (b *bridge) send(ctx context.Context, msg jsonrpc.Message) {
	err := b.remote.Write(ctx, msg)
	if err == nil || ctx.Err() != nil {
		return
	}
	b.cfg.Logger.Warn("mcp bridge: message not delivered to the gateway", "error", err)
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	resp := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "the lifecycle gateway at " + b.cfg.URL + " did not take the request: " + err.Error()}}
	if werr := b.local.Write(ctx, resp); werr != nil {
		b.cfg.Logger.Warn("mcp bridge: error reply not written", "error", werr)
	}
}

// inbound relays the gateway's messages to the local client; the answer
// to initialize fixes the protocol version and opens the stream that
// carries notifications outside any call (tools/list_changed).
func (b *bridge) inbound(ctx context.Context) error {
	for {
		msg, err := b.remote.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("mcp bridge: read the gateway: %w", err)
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil && b.isInit(resp.ID) {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(resp.Result, &r) == nil && r.ProtocolVersion != "" {
				b.rt.version.Store(r.ProtocolVersion)
			}
			if b.started.CompareAndSwap(false, true) {
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					b.listen(ctx)
				}()
			}
		}
		if err := b.local.Write(ctx, msg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mcp bridge: write the local client: %w", err)
		}
	}
}

func (b *bridge) isInit(id jsonrpc.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.initIDs[id.Raw()]
}

// listen keeps the gateway's standalone SSE stream (GET) open and relays
// what arrives on it, reconnecting after a drop, until ctx ends or the
// gateway says it offers none (405).
func (b *bridge) listen(ctx context.Context) {
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.cfg.URL, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		if id := b.remote.SessionID(); id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := b.client.Do(req)
		if err == nil {
			if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
				resp.Body.Close()
				return
			}
			if resp.StatusCode == http.StatusOK {
				b.relaySSE(ctx, resp.Body)
			}
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// relaySSE relays the JSON-RPC messages of an event stream.
func (b *bridge) relaySSE(ctx context.Context, body io.Reader) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				if msg, err := jsonrpc.DecodeMessage([]byte(data.String())); err == nil {
					if b.local.Write(ctx, msg) != nil {
						return
					}
				}
				data.Reset()
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// bridgeTransport adds the token to every request, and the negotiated
// protocol version once known (the SDK's transport sets it only for its
// own client sessions).
type bridgeTransport struct {
	token   string
	base    http.RoundTripper
	version atomic.Value // string
}

func (t *bridgeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	if v, _ := t.version.Load().(string); v != "" && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", v)
	}
	return t.base.RoundTrip(r)
}
