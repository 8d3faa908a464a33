//go:build !linux

package e2e

import "os/exec"

// dieWithTest: only Linux can tie a child's life to its parent; elsewhere a
// killed test run may leave brokers behind.
func dieWithTest(*exec.Cmd) {}
