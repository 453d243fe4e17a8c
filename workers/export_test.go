package workers

// ForgetPasses drops what rc remembers of waiting passes, as time would.
func ForgetPasses(rc *Clients) {
	rc.passes.mu.Lock()
	defer rc.passes.mu.Unlock()
	rc.passes.until = nil
}
