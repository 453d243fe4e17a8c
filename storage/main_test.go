package storage

import (
	"os"
	"testing"

	"github.com/levers9/levers9/internal/objtest"
)

func TestMain(m *testing.M) { os.Exit(objtest.Main(m)) }
