// etcd: the etcd server's own entry point. go.etcd.io/etcd/server/v3 cannot be built with `go
// install` (its go.mod replaces its sibling modules with relative paths), so this main calls the
// package its upstream main calls.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
