package rln

import "unsafe"

// aliasBytes returns the bytes of s without copying; they must not be
// modified.
func aliasBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
