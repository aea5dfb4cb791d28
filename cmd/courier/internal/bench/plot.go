package bench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot files WritePlots writes into its directory.
const (
	HeapPlot       = "heap.png"
	LatencyPlot    = "latency.png"
	ThroughputPlot = "throughput.png"
)

// ErrNoTrace is returned by WritePlots when no row recorded a trace.
var ErrNoTrace = errors.New("bench: no scenario of the run records series to plot")

// plotDPI keeps the PNG files small enough to sit in a repository.
const plotDPI = 96

// WritePlots writes PNG charts of rows into dir, creating it if needed:
//
//   - HeapPlot: the live heap over time of each row with a Trace, warm-up
//     included, and as a dashed line of the same colour the bytes its
//     gossipsub message caches hold by protocol (Trace.CacheBoundBytes);
//   - LatencyPlot: the latency distribution (CDF) of each such row;
//   - ThroughputPlot: msg/s and CPU µs per message of every row, side by side.
//
// It returns ErrNoTrace when no row has a Trace.
func WritePlots(dir string, rows []Row) error {
	var traced []Row
	for _, r := range rows {
		if r.Trace != nil {
			traced = append(traced, r)
		}
	}
	if len(traced) == 0 {
		return ErrNoTrace
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	heap, err := heapPlot(traced)
	if err != nil {
		return err
	}
	if err := savePNG(filepath.Join(dir, HeapPlot), 8*vg.Inch, 4.5*vg.Inch, [][]*plot.Plot{{heap}}); err != nil {
		return err
	}
	lat, err := latencyPlot(traced)
	if err != nil {
		return err
	}
	if err := savePNG(filepath.Join(dir, LatencyPlot), 8*vg.Inch, 4.5*vg.Inch, [][]*plot.Plot{{lat}}); err != nil {
		return err
	}
	rate, cpu, err := throughputPlots(rows)
	if err != nil {
		return err
	}
	return savePNG(filepath.Join(dir, ThroughputPlot), 10*vg.Inch, 4.5*vg.Inch, [][]*plot.Plot{{rate, cpu}})
}

func heapPlot(rows []Row) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Live heap (after the last GC)"
	p.X.Label.Text = "seconds since the first message"
	p.Y.Label.Text = "MB"
	p.Legend.Top, p.Legend.Left = true, true
	top, entries := 0.0, 0
	for i, r := range rows {
		pts := make(plotter.XYs, len(r.Trace.Heap))
		for k, s := range r.Trace.Heap {
			pts[k] = plotter.XY{X: s.Seconds, Y: float64(s.LiveBytes) / 1e6}
			top = max(top, pts[k].Y)
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(r.Scenario, l)
		entries++
		if b := r.Trace.CacheBoundBytes; !math.IsNaN(b) {
			end := pts[len(pts)-1].X
			bound, err := plotter.NewLine(plotter.XYs{{X: 0, Y: b / 1e6}, {X: end, Y: b / 1e6}})
			if err != nil {
				return nil, err
			}
			bound.Color, bound.Dashes = plotutil.Color(i), []vg.Length{vg.Points(4), vg.Points(3)}
			top = max(top, b/1e6)
			p.Add(bound)
			p.Legend.Add(r.Scenario+": gossipsub cache bound", bound)
			entries++
		}
	}
	// Room above the lines for the legend.
	p.Y.Min, p.Y.Max = 0, top*(1.2+0.08*float64(entries))
	return p, nil
}

func latencyPlot(rows []Row) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Latency, publish to done (CDF)"
	p.X.Label.Text = "ms (log scale)"
	p.Y.Label.Text = "fraction of messages"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false // the empty corner of a CDF
	for i, r := range rows {
		var pts plotter.XYs
		for _, q := range r.Trace.Latency {
			if q.Ns > 0 {
				pts = append(pts, plotter.XY{X: float64(q.Ns) / 1e6, Y: q.Quantile})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(r.Scenario, l)
	}
	p.Y.Min, p.Y.Max = 0, 1
	return p, nil
}

// throughputPlots returns bar charts of msg/s and CPU µs per message.
func throughputPlots(rows []Row) (rate, cpu *plot.Plot, err error) {
	var names []string
	var rates, cpus plotter.Values
	for _, r := range rows {
		if math.IsNaN(r.MsgPerS) {
			continue
		}
		names = append(names, r.Scenario)
		rates = append(rates, r.MsgPerS)
		c := r.CPUNsPerMsg / 1e3
		if math.IsNaN(c) {
			c = 0
		}
		cpus = append(cpus, c)
	}
	bars := func(title, unit string, v plotter.Values, colour int) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text, p.Y.Label.Text = title, unit
		if len(v) == 0 {
			return p, nil
		}
		b, err := plotter.NewBarChart(v, vg.Points(18))
		if err != nil {
			return nil, err
		}
		b.Color = plotutil.Color(colour)
		p.Add(b)
		p.NominalX(names...)
		p.X.Tick.Label.Rotation, p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = math.Pi/5, draw.XRight, draw.YCenter
		return p, nil
	}
	if rate, err = bars("Throughput", "msg/s", rates, 0); err != nil {
		return nil, nil, err
	}
	if cpu, err = bars("CPU per message (user+system, whole process)", "µs", cpus, 1); err != nil {
		return nil, nil, err
	}
	return rate, cpu, nil
}

// savePNG draws plots as a grid onto one PNG file of w × h.
func savePNG(path string, w, h vg.Length, plots [][]*plot.Plot) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j, p := range plots[i] {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return f.Close()
}
