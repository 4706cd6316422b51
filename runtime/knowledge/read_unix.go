//go:build unix

package knowledge

import "syscall"

// oNonblock opens a FIFO without waiting for a writer.
const oNonblock = syscall.O_NONBLOCK
