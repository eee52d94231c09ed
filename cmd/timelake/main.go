// Command timelake loads files from field gateways into Apache Iceberg tables.
package main

import (
	"os"
	_ "time/tzdata" // --assume-timezone works on hosts without a zone database

	"github.com/timelake/timelake/internal/commands"
	_ "github.com/timelake/timelake/internal/decode/pqarrowio" // Parquet read with pqarrow, upload --validate too
	"github.com/timelake/timelake/internal/iostreams"
)

func main() {
	os.Exit(int(commands.Main(os.Args[1:], iostreams.System(), os.LookupEnv)))
}
