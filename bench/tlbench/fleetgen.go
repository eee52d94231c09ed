package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The fleet's gateways: each reads fleetDevices devices every
// fleetReadingEvery and drops one CSV file a minute, 100 rows.
const (
	fleetDevices      = 5
	fleetReadingEvery = 3 * time.Second
	fleetRowsPerFile  = fleetDevices * int(time.Minute/fleetReadingEvery)
)

// fleetDataStart is the reading time of simulated minute 0: midnight UTC,
// so a day-long run fills one day partition. The day before is the seeded
// day (fleetSeed), which goes cold an hour into the run.
var fleetDataStart = time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)

// fleetSeedMinutes are the minutes of the seeded day: minutes -1440 to -1.
const fleetSeedMinutes = 24 * 60

// fleetKey is the landing key of gateway gw's file of simulated minute m.
func fleetKey(gw, m int) string {
	return fmt.Sprintf("gateway-%02d/%s.csv", gw, fleetDataStart.Add(time.Duration(m)*time.Minute).Format("20060102T1504Z"))
}

// fleetDevice names device d of gateway gw (the table's series key).
func fleetDevice(gw, d int) string { return fmt.Sprintf("dev-%02d-%02d", gw, d) }

// fleetFile is gateway gw's file of simulated minute m, the same bytes
// every time (seeded by gateway and minute): readings of its devices every
// 3 s, temperatures following the time of day with a per-device offset and
// sensor noise at 0.1 °C, humidity moving against them, batteries draining
// slowly, in the column layout of the other cases.
func fleetFile(gw, m int) []byte {
	rng := rand.New(rand.NewPCG(uint64(gw)<<32|uint64(m), 7))
	t0 := fleetDataStart.Add(time.Duration(m) * time.Minute)
	row := func(j int) (time.Time, string, float64, float64, float64) {
		d, slot := j%fleetDevices, j/fleetDevices
		t := t0.Add(time.Duration(slot) * fleetReadingEvery)
		dev := rand.New(rand.NewPCG(uint64(gw), uint64(d))) // the device's own constants
		offset, humOffset := dev.Float64()*4-2, dev.Float64()*10-5
		hours := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
		temp := 11 + 7*math.Sin(2*math.Pi*(hours-9)/24) + offset + rng.NormFloat64()*0.1
		hum := min(100, max(5, 80-2.2*(temp-11)+humOffset+rng.NormFloat64()*0.5))
		bat := 4.1 - 0.02*float64(d) - 0.00005*float64(m) + rng.NormFloat64()*0.005
		return t, fleetDevice(gw, d), math.Round(temp*10) / 10, math.Round(hum*10) / 10, math.Round(bat*100) / 100
	}
	var b bytes.Buffer
	_ = writeCSVTo(&b, fleetRowsPerFile, row) // a bytes.Buffer does not fail
	return b.Bytes()
}

// fleetHourKey is the landing key of gateway gw's file of the seeded day's
// hour h (0-23).
func fleetHourKey(gw, h int) string {
	return fmt.Sprintf("gateway-%02d/%s-1h.csv", gw, fleetDataStart.Add(time.Duration(h-24)*time.Hour).Format("20060102T1504Z"))
}

// fleetHourFile is gateway gw's file of the seeded day's hour h: the rows
// of its 60 minute files (minutes 60h-1440 to 60h-1381), the same rows a
// run through those minutes would load.
func fleetHourFile(gw, h int) []byte {
	var b bytes.Buffer
	for i := range 60 {
		f := fleetFile(gw, 60*h-fleetSeedMinutes+i)
		if i > 0 {
			f = f[bytes.IndexByte(f, '\n')+1:] // one header
		}
		b.Write(f)
	}
	return b.Bytes()
}
