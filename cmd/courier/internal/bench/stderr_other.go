//go:build !linux

package bench

// withoutStderr runs f; standard error stays as it is (see the Linux
// version).
func withoutStderr(f func() error) error { return f() }
