// Package python embeds the levers9 Python package (standard library
// only), so that the agent can put it into every function container and
// the CLI can run scripts that import it without an install.
package python

import "embed"

// Package holds levers9/*.py, the importable package.
//
//go:embed levers9/*.py
var Package embed.FS
