package bench

import (
	"os"
	"testing"

	"github.com/couriernet/courier/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
