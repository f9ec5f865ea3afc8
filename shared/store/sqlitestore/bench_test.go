package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/openprogram/lifecycle/shared/store"
)

// The benchmark measures every store operation against a store holding 1k
// and 100k actions. An "action" is what one pass through the lifecycle
// leaves behind: the action item (~1 KB, indexed in GSI1 by session), its
// result receipt (~1 KB), three log entries (~256 B each) in its execution's
// partition, and a counter member in its session's counter. Executions hold
// benchActionsPerExec actions plus META, CKPT and LEASE; sessions hold
// benchExecsPerSession executions. One action in benchOpenEvery is still
// open (in the sparse GSI2).
//
// Reads pick any stored item, uniformly: recovery and the UI read old
// executions as readily as new ones. Writes go to the executions in flight,
// the newest benchWindow of them, as the lifecycle's writes do: a store of
// 100k actions is 100 live executions on top of a long history, not 10k
// live ones. Both stores have the same number in flight, so the comparison
// isolates what the stored history costs each operation.
//
//	go test -run '^$' -bench . -benchmem -benchtime 2000x ./shared/store/sqlitestore/
const (
	benchActionsPerExec   = 10
	benchExecsPerSession  = 10
	benchLogPerAction     = 3
	benchOpenEvery        = 100
	benchBodyBytes        = 1000
	benchLogBytes         = 256
	benchFixtureRevision  = 4 // bump when the fixture's shape (or the page size) changes
	benchLeaseTTL         = time.Minute
	benchPopulateBatchLen = 10_000
	benchWindow           = 100 // executions in flight at once while populating
)

type benchFixture struct {
	name     string
	actions  int
	s        *Store
	execs    []string  // execution ids
	sessions []string  // session ids
	actionIn []string  // action ids, actionIn[i] belongs to execs[i/benchActionsPerExec]
	ckpt     []int64   // current CKPT version per execution
	live     int       // execs[len(execs)-live:] are in flight
	now      time.Time // lease clock: every acquisition is a takeover after expiry
	rng      *rand.Rand
	seq      int
}

func BenchmarkOps(b *testing.B) {
	fixtures := []*benchFixture{
		openBenchFixture(b, "1k", 1_000),
		openBenchFixture(b, "100k", 100_000),
	}
	ctx := context.Background()
	ops := []struct {
		name string
		run  func(b *testing.B, f *benchFixture)
	}{
		{"Get", func(b *testing.B, f *benchFixture) {
			for b.Loop() {
				i := f.rng.IntN(len(f.actionIn))
				k := store.Key{PK: store.ExecPK(f.execs[i/benchActionsPerExec]), SK: "ACTION#" + f.actionIn[i]}
				if _, err := f.s.Get(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"CompareAndSwap", func(b *testing.B, f *benchFixture) {
			body := benchBody(f.rng, benchBodyBytes)
			for b.Loop() {
				i := f.liveExec()
				it := store.Item{PK: store.ExecPK(f.execs[i]), SK: "CKPT", Version: f.ckpt[i] + 1, Body: body}
				if err := f.s.CompareAndSwap(ctx, it, f.ckpt[i], 0); err != nil {
					b.Fatal(err)
				}
				f.ckpt[i]++
			}
		}},
		{"Query", func(b *testing.B, f *benchFixture) {
			// The whole partition of one execution: ~55 items, ~25 KB.
			for b.Loop() {
				p, err := f.s.Query(ctx, store.ExecPK(f.execs[f.rng.IntN(len(f.execs))]), store.QueryOptions{})
				if err != nil || len(p.Items) < benchActionsPerExec*(2+benchLogPerAction) {
					b.Fatalf("query: %d items, %v", len(p.Items), err)
				}
			}
		}},
		{"QueryIndex", func(b *testing.B, f *benchFixture) {
			// The newest 20 actions of one session, by GSI1.
			for b.Loop() {
				s := f.sessions[f.rng.IntN(len(f.sessions))]
				p, err := f.s.QueryIndex(ctx, store.IndexSession, store.SessionPK(s),
					store.QueryOptions{SKPrefix: "ACTION#", Descending: true, Limit: 20})
				if err != nil || len(p.Items) != 20 {
					b.Fatalf("query index: %d items, %v", len(p.Items), err)
				}
			}
		}},
		{"QueryOpen", func(b *testing.B, f *benchFixture) {
			// The sweeper's page of the sparse open-work index, resuming
			// after a random open action (the same page size at both sizes).
			for b.Loop() {
				const page = 5
				i := f.rng.IntN(len(f.actionIn)/benchOpenEvery-page) * benchOpenEvery
				p, err := f.s.QueryIndex(ctx, store.IndexOpen, "OPEN#ACTION", store.QueryOptions{After: f.openSK(i), Limit: page})
				if err != nil || len(p.Items) != page {
					b.Fatalf("query open: %d items, %v", len(p.Items), err)
				}
			}
		}},
		{"PutOnce", func(b *testing.B, f *benchFixture) {
			body := benchBody(f.rng, benchBodyBytes)
			for b.Loop() {
				f.seq++
				e := f.execs[f.liveExec()]
				it := store.Item{PK: store.ExecPK(e), SK: fmt.Sprintf("RECEIPT#bench-%d-%d", os.Getpid(), f.seq), Version: 1, Body: body}
				if err := f.s.PutOnce(ctx, it); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"AcquireLease", func(b *testing.B, f *benchFixture) {
			// Every acquisition is a takeover of an expired lease (fence+1).
			for b.Loop() {
				f.seq++
				f.now = f.now.Add(benchLeaseTTL)
				req := store.LeaseRequest{Resource: store.ExecPK(f.execs[f.liveExec()]), AttemptID: fmt.Sprintf("bench-%d", f.seq), TTL: benchLeaseTTL, Now: f.now}
				if _, err := f.s.AcquireLease(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"ApplyCounter", func(b *testing.B, f *benchFixture) {
			for b.Loop() {
				f.seq++
				k := store.CounterKey{SessionID: f.liveSession(), Epoch: "1"}
				if _, applied, err := f.s.ApplyCounter(ctx, k, fmt.Sprintf("bench-%d-%d", os.Getpid(), f.seq), store.CounterBlock); err != nil || !applied {
					b.Fatalf("apply counter: applied=%v %v", applied, err)
				}
			}
		}},
		{"Append", func(b *testing.B, f *benchFixture) {
			body := benchBody(f.rng, benchLogBytes)
			for b.Loop() {
				if _, err := f.s.Append(ctx, store.ExecPK(f.execs[f.liveExec()]), body); err != nil {
					b.Fatal(err)
				}
			}
		}},
	}
	// Reads run first: PutOnce and Append add rows to the partitions the
	// queries read, and would make the small store's partitions grow
	// where the large store's barely change.
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			for _, f := range fixtures {
				b.Run("stored="+f.name, func(b *testing.B) {
					b.ReportAllocs()
					before := processCPU()
					op.run(b, f)
					// Wall time per op depends on how much of the (shared)
					// machine the benchmark got; CPU time per op does not,
					// so the two sizes compare fairly on a busy machine.
					b.ReportMetric(float64((processCPU()-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}

// openBenchFixture copies the cached database of n actions (building it on
// first use) into a temporary directory and opens it, so runs never see
// each other's writes.
func openBenchFixture(b *testing.B, name string, n int) *benchFixture {
	b.Helper()
	cached := filepath.Join(os.TempDir(), fmt.Sprintf("lifecycle-sqlitestore-bench-s%d-f%d-%d.db", SchemaVersion, benchFixtureRevision, n))
	if _, err := os.Stat(cached); err != nil {
		if err := buildBenchFixture(cached, n); err != nil {
			b.Fatalf("build %d-action fixture: %v", n, err)
		}
	}
	path := filepath.Join(b.TempDir(), "state.db")
	if err := copyFile(cached, path); err != nil {
		b.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	{
		// Touch every page through every read connection first: the
		// figures are for a running store whose file is mapped, not for
		// the first access to each page after a copy.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				var n int64
				if err := s.r.QueryRow(`SELECT sum(length(body)) FROM items`).Scan(&n); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	f := &benchFixture{name: name, actions: n, s: s, rng: rand.New(rand.NewPCG(1, uint64(n)))}
	f.execs, f.sessions, f.actionIn = benchIDs(n)
	f.live = min(benchWindow, len(f.execs))
	f.now = time.Date(2032, 1, 1, 0, 0, 0, 0, time.UTC) // after every fixture lease expired
	f.ckpt = make([]int64, len(f.execs))
	for i := range f.ckpt {
		f.ckpt[i] = 1
	}
	return f
}

// benchIDs derives the fixture's identifiers deterministically, so a
// cached database and a fresh run agree on them. They are ULIDs, as the
// lifecycle's are: time-ordered, so new executions land at the end of the
// key space as they do in production.
func benchIDs(n int) (execs, sessions, actions []string) {
	rng := rand.New(rand.NewPCG(42, 42))
	entropy := ulidEntropy{rng}
	t := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	id := func() string {
		t = t.Add(time.Millisecond)
		return ulid.MustNew(ulid.Timestamp(t), entropy).String()
	}
	nExec := n / benchActionsPerExec
	for range nExec / benchExecsPerSession {
		sessions = append(sessions, id())
	}
	for range nExec {
		execs = append(execs, id())
	}
	for range n {
		actions = append(actions, id())
	}
	return execs, sessions, actions
}

func benchActionTime(i int) time.Time {
	return time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
}

func benchOpenSK(i int, actionID string) string {
	return benchActionTime(i).Format(time.RFC3339) + "#" + actionID
}

func (f *benchFixture) openSK(i int) string { return benchOpenSK(i, f.actionIn[i]) }

// liveExec picks an execution in flight, by index into execs.
func (f *benchFixture) liveExec() int { return len(f.execs) - 1 - f.rng.IntN(f.live) }

// liveSession picks the session of an execution in flight.
func (f *benchFixture) liveSession() string { return f.sessions[f.liveExec()/benchExecsPerSession] }

type ulidEntropy struct{ r *rand.Rand }

func (e ulidEntropy) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e.r.Uint32())
	}
	return len(p), nil
}

func benchBody(rng *rand.Rand, n int) []byte {
	// JSON-looking, not compressible to nothing: SQLite stores it as is.
	var sb strings.Builder
	sb.WriteString(`{"args":"`)
	for sb.Len() < n-2 {
		sb.WriteByte(byte('a' + rng.IntN(26)))
	}
	sb.WriteString(`"}`)
	return []byte(sb.String())
}

// buildBenchFixture writes n actions through the store's own schema in a
// few large transactions with prepared statements, then renames the file
// into place so a half-built fixture is never reused.
func buildBenchFixture(path string, n int) error {
	tmp := path + ".building"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	s, err := Open(tmp)
	if err != nil {
		return err
	}
	execs, sessions, actions := benchIDs(n)
	rng := rand.New(rand.NewPCG(7, 7))
	body := benchBody(rng, benchBodyBytes)
	logBody := benchBody(rng, benchLogBytes)
	leaseUntil := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

	const insItem = `INSERT INTO items (pk, sk, version, fence, gsi1pk, gsi1sk, gsi2pk, gsi2sk, expires_at, body, attempt_id, lease_until, at, consecutive, total)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	const insMember = `INSERT INTO counter_members (pk, sk, member) VALUES (?, ?, ?)`
	var (
		tx      *sql.Tx
		item    *sql.Stmt
		member  *sql.Stmt
		pending int
	)
	begin := func() error {
		if tx, err = s.w.Begin(); err != nil {
			return err
		}
		if item, err = tx.Prepare(insItem); err != nil {
			return err
		}
		member, err = tx.Prepare(insMember)
		return err
	}
	flush := func() error {
		if err := tx.Commit(); err != nil {
			return err
		}
		pending = 0
		return begin()
	}
	put := func(args ...any) error {
		pending++
		_, err := item.Exec(args...)
		return err
	}
	if err := begin(); err != nil {
		return err
	}
	// Executions run benchWindow at a time and their actions interleave,
	// as they do in production, so an execution's rows are not written
	// next to each other.
	for g := 0; g < len(execs); g += benchWindow {
		group := execs[g:min(g+benchWindow, len(execs))]
		for j, e := range group {
			pk := store.ExecPK(e)
			spk := store.SessionPK(sessions[(g+j)/benchExecsPerSession])
			if err := put(pk, "META", 1, 0, spk, "EXEC#"+e, nil, nil, nil, body[:200], nil, nil, nil, nil, nil); err != nil {
				return err
			}
			if err := put(pk, "CKPT", 1, 1, nil, nil, nil, nil, nil, body[:300], nil, nil, nil, nil, nil); err != nil {
				return err
			}
			if err := put(pk, store.LeaseSK, 1, 1, nil, nil, nil, nil, nil, nil, "attempt-0", leaseUntil, nil, nil, nil); err != nil {
				return err
			}
		}
		for k := range benchActionsPerExec {
			for j, e := range group {
				ei := g + j
				ai := ei*benchActionsPerExec + k
				a := actions[ai]
				pk := store.ExecPK(e)
				spk := store.SessionPK(sessions[ei/benchExecsPerSession])
				at := benchActionTime(ai)
				g1sk := "ACTION#" + at.Format(time.RFC3339) + "#" + a
				var g2pk, g2sk any
				if ai%benchOpenEvery == 0 {
					g2pk, g2sk = "OPEN#ACTION", benchOpenSK(ai, a)
				}
				if err := put(pk, "ACTION#"+a, 3, 1, spk, g1sk, g2pk, g2sk, nil, body, nil, nil, nil, nil, nil); err != nil {
					return err
				}
				if err := put(pk, "RECEIPT#"+a, 1, 1, nil, nil, nil, nil, at.Add(90*24*time.Hour).Unix(), body, nil, nil, nil, nil, nil); err != nil {
					return err
				}
				for l := range benchLogPerAction {
					seq := int64(k*benchLogPerAction + l + 1)
					if err := put(pk, store.LogSK(seq), 1, 0, nil, nil, nil, nil, nil, logBody, nil, nil, at.UnixMicro(), nil, nil); err != nil {
						return err
					}
				}
				if _, err := member.Exec(spk, store.CounterSKPrefix+"1", store.CounterMember(store.CounterAllow, a)); err != nil {
					return err
				}
			}
			if pending >= benchPopulateBatchLen {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	for _, session := range sessions {
		spk := store.SessionPK(session)
		if err := put(spk, store.CounterSKPrefix+"1", benchActionsPerExec*benchExecsPerSession, 0, nil, nil, nil, nil, nil, nil, nil, nil, nil, 0, 0); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if err := s.Close(); err != nil { // checkpoints the WAL into the file
		return err
	}
	return os.Rename(tmp, path)
}

// processCPU is the CPU time (user + system) of the whole process so far:
// the operation's goroutine plus what it causes elsewhere (GC, the WAL
// checkpointer).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
