package gen

import "flag"

// update makes golden tests rewrite their golden files instead of comparing.
var update = flag.Bool("update", false, "rewrite golden files")
