//go:build !unix

package knowledge

// oNonblock is 0 where there are no FIFOs to open.
const oNonblock = 0
