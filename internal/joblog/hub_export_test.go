package joblog

// SetWindow bounds hubs' windows to n lines, for tests of followers that
// fall behind; it returns the restore.
func SetWindow(n int) func() {
	old := windowLines.Swap(int64(n))
	return func() { windowLines.Store(old) }
}
