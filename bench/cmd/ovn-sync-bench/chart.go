package main

import (
	"image/color"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colors of the chart's series.
var (
	colorOvnSync   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorServer    = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colorPerObject = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorFull      = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// writeChart plots time against ports, log-log: ovn-sync's cold start and
// the server's CPU for it, and the per-object pattern, each at every size.
// The per-object pattern's cumulative time along its measured part at the
// largest size is drawn too, and the extrapolated rest dashed. The file's
// extension picks the format.
func writeChart(path string, results []sizeResult) error {
	p := plot.New()
	p.Title.Text = "Writing N new ports into an empty OVN NB"
	p.X.Label.Text = "ports (N)"
	p.Y.Label.Text = "seconds"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())

	var cold, cpu, per, full plotter.XYs
	for _, r := range results {
		x := float64(r.Ports)
		cold = append(cold, plotter.XY{X: x, Y: secs(r.Cold.Wall)})
		cpu = append(cpu, plotter.XY{X: x, Y: secs(r.Cold.ServerCPU)})
		per = append(per, plotter.XY{X: x, Y: secs(r.PerObject.Estimate)})
		if r.PerObjectFull != nil {
			full = append(full, plotter.XY{X: x, Y: secs(r.PerObjectFull.Estimate)})
		}
	}
	for _, s := range []struct {
		name  string
		xys   plotter.XYs
		color color.Color
		glyph draw.GlyphDrawer
	}{
		{"ovn-sync cold start", cold, colorOvnSync, draw.CircleGlyph{}},
		{"ovsdb-server CPU for it (floor)", cpu, colorServer, draw.SquareGlyph{}},
		{"per-object, 1 txn/port" + extrapolatedAt(results, names), per, colorPerObject, draw.TriangleGlyph{}},
		{"per-object, Logical_Switch.ports monitored" + extrapolatedAt(results, fullMonitor), full, colorFull, draw.PyramidGlyph{}},
	} {
		if err := addSeries(p, s.name, s.xys, s.color, s.glyph); err != nil {
			return err
		}
	}
	if len(results) > 0 {
		if err := addCurve(p, results[len(results)-1].PerObject); err != nil {
			return err
		}
	}
	// Head room for the legend above the series, which all rise to the right.
	p.Y.Max *= 20
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// addSeries adds a line through points with a glyph at each. A time of zero
// is a real reading (ovsdb-server's CPU for a small cold start can be under
// one clock tick, 10ms) that a log scale cannot show: such points are left
// out and the legend names their sizes. A series with no point left is only
// named in the legend.
func addSeries(p *plot.Plot, name string, xys plotter.XYs, c color.Color, g draw.GlyphDrawer) error {
	var drawn plotter.XYs
	var zero []string
	for _, xy := range xys {
		if xy.Y > 0 {
			drawn = append(drawn, xy)
		} else {
			zero = append(zero, strconv.Itoa(int(xy.X)))
		}
	}
	if len(zero) > 0 {
		name += " (0 s, not drawn, at " + strings.Join(zero, ", ") + ")"
	}
	if len(drawn) == 0 {
		if len(zero) > 0 {
			p.Legend.Add(name)
		}
		return nil
	}
	l, s, err := plotter.NewLinePoints(drawn)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	s.Color, s.Shape, s.Radius = c, g, vg.Points(3.5)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// addCurve adds the per-object pattern's cumulative time along the part
// measured from an empty NB, and a dashed line to the estimate when the
// rest was extrapolated.
func addCurve(p *plot.Plot, r perObjectResult) error {
	var measured plotter.XYs
	for _, pt := range r.Curve {
		if pt.Ports > 0 && pt.Elapsed > 0 {
			measured = append(measured, plotter.XY{X: float64(pt.Ports), Y: secs(pt.Elapsed)})
		}
	}
	if len(measured) < 2 {
		return nil
	}
	l, err := plotter.NewLine(measured)
	if err != nil {
		return err
	}
	l.Color, l.Width = colorPerObject, vg.Points(0.75)
	p.Add(l)
	p.Legend.Add("per-object, cumulative as it ran", l)
	if r.Complete {
		return nil
	}
	last := measured[len(measured)-1]
	rest, err := plotter.NewLine(plotter.XYs{last, {X: float64(r.Ports), Y: secs(r.Estimate)}})
	if err != nil {
		return err
	}
	rest.Color, rest.Width, rest.Dashes = colorPerObject, vg.Points(0.75), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(rest)
	p.Legend.Add("per-object, extrapolated", rest)
	return nil
}

// names and fullMonitor pick a per-object result of a size.
func names(r sizeResult) *perObjectResult       { return &r.PerObject }
func fullMonitor(r sizeResult) *perObjectResult { return r.PerObjectFull }

// extrapolatedAt is a legend suffix naming the sizes whose per-object time
// was extrapolated, "" when all were measured.
func extrapolatedAt(results []sizeResult, pick func(sizeResult) *perObjectResult) string {
	var sizes []string
	for _, r := range results {
		if p := pick(r); p != nil && !p.Complete {
			sizes = append(sizes, strconv.Itoa(r.Ports))
		}
	}
	if len(sizes) == 0 {
		return ""
	}
	return " (extrapolated at " + strings.Join(sizes, ", ") + ")"
}

func secs(d time.Duration) float64 { return d.Seconds() }
