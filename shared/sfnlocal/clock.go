package sfnlocal

import (
	"sort"
	"sync"
	"time"
)

// Clock is the engine's source of time: Wait states, retry delays, task
// timeouts and heartbeats all run on it, so tests can drive them with a
// FakeClock instead of sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed and returns
	// a function that cancels the call (reporting whether it did).
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock is the wall clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// FakeClock is a Clock that only moves when told to. Timers fire, each in
// its own goroutine like time.AfterFunc, when Advance or Set reaches their
// due time.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers map[int]*fakeTimer
}

type fakeTimer struct {
	due time.Time
	f   func()
}

// NewFakeClock returns a FakeClock showing t.
func NewFakeClock(t time.Time) *FakeClock {
	return &FakeClock{now: t, timers: map[int]*fakeTimer{}}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d. A non-positive d fires at once.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	if d <= 0 {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.seq++
	id := c.seq
	c.timers[id] = &fakeTimer{due: c.now.Add(d), f: f}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// Advance moves the clock forward by d and fires the timers that are due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fireLocked()
}

// Set moves the clock to t (never backwards) and fires the timers that are due.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.fireLocked()
}

// AdvanceToNext moves the clock to the earliest pending timer and fires it
// (and any other timer due at the same time). It reports false when no
// timer is pending.
func (c *FakeClock) AdvanceToNext() bool {
	due, ok := c.NextDue()
	if ok {
		c.Set(due)
	}
	return ok
}

// NextDue returns the due time of the earliest pending timer.
func (c *FakeClock) NextDue() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	found := false
	for _, t := range c.timers {
		if !found || t.due.Before(first) {
			first, found = t.due, true
		}
	}
	return first, found
}

// Pending returns the number of timers not yet fired or stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func (c *FakeClock) fireLocked() {
	type due struct {
		id int
		t  *fakeTimer
	}
	var fire []due
	for id, t := range c.timers {
		if !t.due.After(c.now) {
			fire = append(fire, due{id, t})
			delete(c.timers, id)
		}
	}
	c.mu.Unlock()
	sort.Slice(fire, func(i, j int) bool { return fire[i].t.due.Before(fire[j].t.due) })
	for _, f := range fire {
		go f.t.f()
	}
}
