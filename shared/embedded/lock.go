package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrStateDirBusy: another process runs the lifecycle on this state directory.
var ErrStateDirBusy = errors.New("another lifecycle process is using this state directory")

// lockDir takes an exclusive advisory lock on dir/lock for the life of the
// process (released on Close or when the process dies, so a killed process
// never leaves a stale lock).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrStateDirBusy)
		}
		return nil, fmt.Errorf("lock state dir %s: %w", dir, err)
	}
	return f, nil
}
