package database

import (
	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/audit"
)

// newClient is the ent client on drv with the hooks every client carries,
// inside transactions too: they must hold whichever front door or domain
// function writes, so they are registered here, once, and nowhere else.
func newClient(drv dialect.Driver) *ent.Client {
	c := ent.NewClient(ent.Driver(drv))
	c.Use(audit.Hook())
	return c
}
