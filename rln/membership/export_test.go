package membership

import "context"

// Poll runs one poll of m, as its loop does every PollInterval.
func Poll(m *Manager) { m.poll(context.Background()) }

// RedactError is redactError, for the fuzz test.
var RedactError = redactError

// ShowAddress is showAddress, for the fuzz test.
var ShowAddress = showAddress
