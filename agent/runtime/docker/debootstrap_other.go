//go:build !linux

package docker

import (
	"context"
	"errors"

	"github.com/levers9/levers9/internal/wire"
)

func (b *buildJob) debootstrap(context.Context, wire.BuildStep, string) error {
	return errors.New("debootstrap bases are built on Linux nodes only")
}
