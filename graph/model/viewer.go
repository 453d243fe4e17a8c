// Package model holds GraphQL types that are not ent entities.
package model

import "github.com/levers9/levers9/internal/viewer"

// Viewer is the GraphQL view of the acting identity.
type Viewer struct {
	*viewer.Viewer
}
