//go:build !linux

package supervise

import (
	"fmt"
	"os"
)

// Supervise needs Linux (child subreapers and /proc).
func Supervise([]string) int {
	fmt.Fprintln(os.Stderr, "levers9: the service supervisor runs on Linux only")
	return 125
}
