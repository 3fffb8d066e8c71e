// Command etcd is etcd's server, as etcd's own main.go builds it (go.etcd.io/etcd/v3 main.go).
//
// The version etcd reports (`etcd --version`) is go.etcd.io/etcd/api/v3/version.Version, which the
// v3.5.21 module already sets to "3.5.21"; GitSHA is set by ldflags (tools.py).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
