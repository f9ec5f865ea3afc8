package sqlitestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
	"github.com/openprogram/lifecycle/shared/store/sqlitestore"
)

var errDisk = errors.New("injected: disk I/O error")

// faults is a switchable Fault: armed with a substring of a statement (or
// "BEGIN" / "COMMIT"), it fails the first statement containing it, once.
type faults struct {
	match atomic.Pointer[string]
	hits  atomic.Int32
}

func (f *faults) fault(query string) error {
	m := f.match.Load()
	if m != nil && strings.Contains(query, *m) && f.match.CompareAndSwap(m, nil) {
		f.hits.Add(1)
		return errDisk
	}
	return nil
}

func (f *faults) arm(s string) { f.match.Store(&s) }

// TestFailedWriteLeavesNothing fails each statement of each multi-statement
// write in turn and checks that the write reports ErrUnavailable, that the
// stored state is exactly what it was, and that a retry then applies once.
func TestFailedWriteLeavesNothing(t *testing.T) {
	ctx := t.Context()
	exec := store.ExecPK("e1")
	meta := store.Item{PK: exec, SK: "META", Version: 3, Body: []byte("meta")}
	ckpt := store.Item{PK: exec, SK: "CKPT", Version: 1, Body: []byte("ckpt v1")}
	counterKey := store.CounterKey{SessionID: "s1", Epoch: "1"}
	lease := store.LeaseRequest{Resource: exec, AttemptID: "att-1", TTL: time.Minute, Now: time.Unix(2_000_000_000, 0)}

	cases := []struct {
		name string
		fail string // statement substring, BEGIN or COMMIT
		// do runs the operation once; the same call is the retry.
		do func(s store.Store) error
		// check verifies the state after the retry (which must have applied exactly once).
		check func(t *testing.T, s store.Store)
	}{
		{name: "put once, insert fails", fail: "INSERT INTO items",
			do: func(s store.Store) error {
				return s.PutOnce(ctx, store.Item{PK: exec, SK: "RECEIPT#a1", Version: 1, Body: []byte("r")})
			},
			check: func(t *testing.T, s store.Store) { mustGetBody(t, s, store.Key{PK: exec, SK: "RECEIPT#a1"}, "r") }},
		{name: "put once, begin fails", fail: "BEGIN",
			do: func(s store.Store) error {
				return s.PutOnce(ctx, store.Item{PK: exec, SK: "RECEIPT#a2", Version: 1, Body: []byte("r")})
			},
			check: func(t *testing.T, s store.Store) { mustGetBody(t, s, store.Key{PK: exec, SK: "RECEIPT#a2"}, "r") }},
		{name: "compare-and-swap, commit fails", fail: "COMMIT",
			do: func(s store.Store) error {
				return s.CompareAndSwap(ctx, store.Item{PK: exec, SK: "CKPT", Version: 2, Body: []byte("ckpt v2")}, 1, 0)
			},
			check: func(t *testing.T, s store.Store) { mustGetBody(t, s, ckpt.Key(), "ckpt v2") }},
		{name: "put once if version, insert after the guard check fails", fail: "INSERT INTO items",
			do: func(s store.Store) error {
				return s.PutOnceIfVersion(ctx, store.Item{PK: exec, SK: "CMD#c1", Version: 1, Body: []byte("pause")}, meta.Key(), 3)
			},
			check: func(t *testing.T, s store.Store) { mustGetBody(t, s, store.Key{PK: exec, SK: "CMD#c1"}, "pause") }},
		{name: "acquire lease, commit fails", fail: "COMMIT",
			do: func(s store.Store) error { _, err := s.AcquireLease(ctx, lease); return err },
			check: func(t *testing.T, s store.Store) {
				l, err := s.GetLease(ctx, exec)
				if err != nil || l.Fence != 1 || l.AttemptID != "att-1" {
					t.Fatalf("lease after retry: %+v %v, want fence 1", l, err)
				}
			}},
		{name: "apply counter, counter write after the member insert fails", fail: "ON CONFLICT (pk, sk) DO UPDATE",
			do: func(s store.Store) error {
				_, applied, err := s.ApplyCounter(ctx, counterKey, "a1", store.CounterBlock)
				if err == nil && !applied {
					return errors.New("retry found the member of the failed attempt: not applied")
				}
				return err
			},
			check: func(t *testing.T, s store.Store) {
				c, err := s.GetCounter(ctx, counterKey)
				if err != nil || c != (store.Counter{Consecutive: 1, Total: 1}) {
					t.Fatalf("counter after retry: %+v %v, want 1/1", c, err)
				}
			}},
		{name: "apply counter, commit fails", fail: "COMMIT",
			do: func(s store.Store) error {
				_, applied, err := s.ApplyCounter(ctx, counterKey, "a2", store.CounterBlock)
				if err == nil && !applied {
					return errors.New("retry found the member of the failed attempt: not applied")
				}
				return err
			},
			check: func(t *testing.T, s store.Store) {
				c, err := s.GetCounter(ctx, counterKey)
				if err != nil || c != (store.Counter{Consecutive: 2, Total: 2}) {
					t.Fatalf("counter after retry: %+v %v, want 2/2", c, err)
				}
			}},
		{name: "append, insert fails", fail: "INSERT INTO items",
			do:    func(s store.Store) error { _, err := s.Append(ctx, exec, []byte("e1")); return err },
			check: func(t *testing.T, s store.Store) { mustLog(t, s, exec, "e1") }},
		{name: "append, commit fails", fail: "COMMIT",
			do:    func(s store.Store) error { _, err := s.Append(ctx, exec, []byte("e2")); return err },
			check: func(t *testing.T, s store.Store) { mustLog(t, s, exec, "e1", "e2") }},
		{name: "transact, the last part's insert fails after the others were applied", fail: "body, at, digest, prev)",
			do: func(s store.Store) error {
				_, err := s.Transact(ctx, []store.Write{
					store.CASOf(store.Item{PK: exec, SK: "META", Version: 4, Body: []byte("meta v4")}, 3, 0),
					store.PutOnceWrite(store.Item{PK: exec, SK: "RECEIPT#t1", Version: 1, Body: []byte("t")}),
					store.AppendOf(exec, []byte("t1")),
				})
				return err
			},
			check: func(t *testing.T, s store.Store) {
				mustGetBody(t, s, meta.Key(), "meta v4")
				mustGetBody(t, s, store.Key{PK: exec, SK: "RECEIPT#t1"}, "t")
				mustLog(t, s, exec, "e1", "e2", "t1")
			}},
	}

	var f faults
	s := openTemp(t, sqlitestore.WithFault(f.fault))
	if err := s.PutOnce(ctx, meta); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOnce(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, s)
			f.arm(tc.fail)
			hits := f.hits.Load()
			err := tc.do(s)
			if f.hits.Load() != hits+1 {
				t.Fatalf("the fault %q was never reached (err %v)", tc.fail, err)
			}
			if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, errDisk) {
				t.Fatalf("got %v, want ErrUnavailable wrapping the injected error", err)
			}
			var ue *store.UnavailableError
			if !errors.As(err, &ue) {
				t.Fatalf("got %T, want *store.UnavailableError", err)
			}
			if after := snapshot(t, s); after != before {
				t.Fatalf("a failed write changed the store:\nbefore %s\nafter  %s", before, after)
			}
			if err := tc.do(s); err != nil {
				t.Fatalf("retry: %v", err)
			}
			tc.check(t, s)
		})
	}

	t.Run("a failing read is ErrUnavailable", func(t *testing.T) {
		f.arm("SELECT pk, sk")
		_, err := s.Get(ctx, meta.Key())
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("got %v, want ErrUnavailable", err)
		}
	})
}

// snapshot is every row of the database, as text: the state a failed write
// must not change.
func snapshot(t *testing.T, s *sqlitestore.Store) string {
	t.Helper()
	rows, err := sqlitestore.DumpForTest(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(rows, "\n")
}

func mustGetBody(t *testing.T, s store.Store, k store.Key, body string) {
	t.Helper()
	it, err := s.Get(t.Context(), k)
	if err != nil || string(it.Body) != body {
		t.Fatalf("get %s: %q %v, want %q", k, it.Body, err, body)
	}
}

func mustLog(t *testing.T, s store.Store, stream string, bodies ...string) {
	t.Helper()
	entries, err := s.ReadLog(t.Context(), stream, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("log has a gap: entry %d is seq %d", i, e.Seq)
		}
		got = append(got, string(e.Body))
	}
	if strings.Join(got, ",") != strings.Join(bodies, ",") {
		t.Fatalf("log %v, want %v", got, bodies)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"put once": func() error { return s.PutOnce(ctx, store.Item{PK: "EXEC#e", SK: "A", Version: 1}) },
		"get":      func() error { _, err := s.Get(ctx, store.Key{PK: "EXEC#e", SK: "A"}); return err },
		"append":   func() error { _, err := s.Append(ctx, "EXEC#e", nil); return err },
		"query":    func() error { _, err := s.Query(ctx, "EXEC#e", store.QueryOptions{}); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want ErrUnavailable", name, err)
		}
	}
}

// TestKilledProcessKeepsCommittedWrites runs the writes in a child process,
// SIGKILLs it after they returned, and reopens the file: everything the
// child was told was committed must be there (WAL + synchronous=NORMAL).
func TestKilledProcessKeepsCommittedWrites(t *testing.T) {
	const n = 50
	if path := os.Getenv("SQLITESTORE_KILL_CHILD"); path != "" {
		killChild(path, n)
		return
	}
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessKeepsCommittedWrites$")
	cmd.Env = append(os.Environ(), "SQLITESTORE_KILL_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "committed" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not report its writes: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("child exited cleanly; it was meant to be killed")
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no WAL file after the kill (the child closed cleanly?): %v", err)
	}

	re, err := sqlitestore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	ctx := t.Context()
	for i := range n {
		mustGetBody(t, re, store.Key{PK: store.ExecPK("e1"), SK: fmt.Sprintf("RECEIPT#a%03d", i)}, fmt.Sprint(i))
	}
	entries, err := re.ReadLog(ctx, store.ExecPK("e1"), 0, 0)
	if err != nil || len(entries) != n {
		t.Fatalf("log after kill: %d entries %v, want %d", len(entries), err, n)
	}
	l, err := re.GetLease(ctx, store.ExecPK("e1"))
	if err != nil || l.Fence != 1 {
		t.Fatalf("lease after kill: %+v %v", l, err)
	}
}

// killChild is the child side: write, report, then wait to be killed
// without ever closing the store.
func killChild(path string, n int) {
	s, err := sqlitestore.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	if _, err := s.AcquireLease(ctx, store.LeaseRequest{Resource: store.ExecPK("e1"), AttemptID: "child", TTL: time.Hour, Now: time.Now()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := range n {
		it := store.Item{PK: store.ExecPK("e1"), SK: fmt.Sprintf("RECEIPT#a%03d", i), Version: 1, Body: []byte(fmt.Sprint(i))}
		if err := s.PutOnce(ctx, it); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if _, err := s.Append(ctx, it.PK, it.Body); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Println("committed")
	time.Sleep(time.Minute) // the parent kills us long before this
	os.Exit(3)
}
