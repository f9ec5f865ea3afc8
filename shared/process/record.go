package process

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/ids"
	"github.com/openprogram/lifecycle/shared/store"
)

// Status of a managed process.
type Status string

const (
	// Running: its supervisor started it and has not reported its end.
	Running Status = "running"
	// Exited: it ended on its own; ExitCode says how.
	Exited Status = "exited"
	// Stopped: it ended after a stop request (its own stop, or its
	// execution's Cancel); ExitCode says how (-1: killed by a signal).
	Stopped Status = "stopped"
	// Lost: its supervisor is gone, so nobody can say whether it still
	// runs or stop it; it is never signalled from a saved PID.
	Lost Status = "lost"
)

// Terminal reports whether st is an end status.
func (st Status) Terminal() bool { return st == Exited || st == Stopped || st == Lost }

// Streams of a process's output.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// ValidStream reports whether s names an output stream.
func ValidStream(s string) bool { return s == Stdout || s == Stderr }

// Retention of output, per stream.
const (
	// ChunkBytes is the size of one stored chunk (the last one of a
	// stream fills up before the next starts).
	ChunkBytes = 16 << 10
	// RetainChunks is how many chunks of a stream are kept (slots).
	RetainChunks = 16
	// RetainBytes is what a stream keeps: its last 240 to 256 KiB.
	RetainBytes = ChunkBytes * RetainChunks
	// MaxReportBytes bounds the output of one stream in one report.
	MaxReportBytes = 64 << 10
)

// Timing of supervision.
const (
	// PollEvery is how often a supervisor reads its processes' records
	// (a stop request takes effect within it) and flushes their output.
	PollEvery = time.Second
	// HeartbeatEvery is how often a supervisor reports a silent process
	// (its heartbeat).
	HeartbeatEvery = 10 * time.Second
	// LostAfter: a running process whose supervisor has not reported for
	// this long is lost (Sweep).
	LostAfter = 60 * time.Second
	// StopGrace is how long a stopped process group has between SIGTERM
	// and SIGKILL.
	StopGrace = 5 * time.Second
)

// Supervisor is the host worker instance that runs a process.
type Supervisor struct {
	// ID is the instance (sup_…), new each time a worker starts.
	ID string `json:"id"`
	// Host names the worker across its restarts: "embedded" for the
	// in-process worker of `lifecycle serve`, else the remote worker's
	// name. At start-up an instance reports what it runs (Recover), and
	// the processes of the same Host's earlier instances are lost.
	Host string `json:"host"`
	// AttemptID is the host task attempt that started the process.
	AttemptID ids.AttemptID `json:"attempt_id,omitempty"`
}

// StopRequest is a request to stop a process, saved on its record.
type StopRequest struct {
	CommandID ids.CommandID `json:"command_id"`
	// By is who asked: a principal's subject, or "execution_cancelled".
	By   string    `json:"by"`
	Role string    `json:"role,omitempty"`
	At   time.Time `json:"at"`
}

// StreamState is what a record knows of one output stream.
type StreamState struct {
	// Bytes the process wrote to the stream (all of them, not only kept).
	Bytes int64 `json:"bytes"`
	// Chunks written so far (the last one may still fill up).
	Chunks int64 `json:"chunks"`
}

// Record is one managed process.
type Record struct {
	ProcessID   string          `json:"process_id"`
	SessionID   ids.SessionID   `json:"session_id"`
	ExecutionID ids.ExecutionID `json:"execution_id"`
	ActionID    ids.ActionID    `json:"action_id"`
	Command     string          `json:"command"`
	Description string          `json:"description,omitempty"`
	Status      Status          `json:"status"`
	// ExitCode is set when it exited or was stopped (-1: by a signal).
	ExitCode  *int       `json:"exit_code,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Supervisor is the worker instance that runs it.
	Supervisor Supervisor `json:"supervisor"`
	// RegisteredBy is the identity that recorded it: the subject of the
	// token a remote supervisor used (set by the API from the verified
	// token, never from the body); empty for the in-process worker. Only
	// reports and start-up recoveries under the same identity touch it:
	// the supervisor id is not a credential (any reader of the record
	// sees it).
	RegisteredBy string `json:"registered_by,omitempty"`
	// PID is informational (the process group leader on its host). It is
	// never used to send a signal: only the supervisor, which holds the
	// process itself, signals it.
	PID int `json:"pid,omitempty"`
	// HeartbeatAt is the supervisor's last report.
	HeartbeatAt time.Time    `json:"heartbeat_at"`
	Stop        *StopRequest `json:"stop,omitempty"`
	// LostReason says why it is lost.
	LostReason string                 `json:"lost_reason,omitempty"`
	Streams    map[string]StreamState `json:"streams"`
	Version    int64                  `json:"version"`
}

const (
	pkPrefix  = "PROC#"
	linkSK    = "PROC#"
	chunkSK   = "OUT#"
	openIndex = "OPEN#PROC"
)

func metaKey(id string) store.Key { return store.Key{PK: pkPrefix + id, SK: "META"} }

func chunkKey(id, stream string, slot int64) store.Key {
	return store.Key{PK: pkPrefix + id, SK: fmt.Sprintf("%s%s#%02d", chunkSK, stream, slot)}
}

func linkKey(exec ids.ExecutionID, id string) store.Key {
	return store.Key{PK: store.ExecPK(string(exec)), SK: linkSK + id}
}

func item(r Record) store.Item {
	k := metaKey(r.ProcessID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: r.Version}
	it.Body, _ = json.Marshal(r)
	it.GSI1PK, it.GSI1SK = store.SessionPK(string(r.SessionID)), pkPrefix+r.StartedAt.Format(time.RFC3339Nano)+"#"+r.ProcessID
	if r.Status == Running {
		it.GSI2PK, it.GSI2SK = openIndex, r.StartedAt.Format(time.RFC3339Nano)+"#"+r.ProcessID
	}
	return it
}

func decodeRecord(it store.Item) (Record, error) {
	var r Record
	if err := json.Unmarshal(it.Body, &r); err != nil {
		return r, fmt.Errorf("decode process %s: %w", it.Key(), err)
	}
	r.Version = it.Version
	if r.Streams == nil {
		r.Streams = map[string]StreamState{}
	}
	return r, nil
}

// chunk is one stored piece of a stream.
type chunk struct {
	Stream string `json:"stream"`
	// N is the chunk's number in its stream (1-based); it lives in slot
	// (N-1) mod RetainChunks.
	N int64 `json:"n"`
	// Offset is the stream byte offset of Data's first byte.
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

func chunkItem(id string, c chunk, version int64) store.Item {
	k := chunkKey(id, c.Stream, (c.N-1)%RetainChunks)
	it := store.Item{PK: k.PK, SK: k.SK, Version: version}
	it.Body, _ = json.Marshal(c)
	return it
}
