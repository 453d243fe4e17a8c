package blueprints_test

import (
	"os"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
