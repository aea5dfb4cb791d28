package main

import (
	"os"
	"testing"

	"github.com/couriernet/courier/internal/pgtest"
)

// TestMain stops the PostgreSQL server the end-to-end tests start (see
// internal/pgtest) once they are done.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
