// Command timelake-gateway puts files from field gateways into the landing
// bucket that timelake loads; it links neither the lake nor iceberg-go.
package main

import (
	"os"
	_ "time/tzdata" // --assume-timezone works on hosts without a zone database

	"github.com/timelake/timelake/internal/commands/gateway"
	"github.com/timelake/timelake/internal/iostreams"
)

func main() {
	os.Exit(int(gateway.Main(os.Args[1:], iostreams.System(), os.LookupEnv)))
}
