package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/space"
)

// SettingsPlan is --dry-run's report: what would be set, how, and where the
// journal would go.
func SettingsPlan(w io.Writer, p *gpuctl.Plan) {
	d := p.Device
	fmt.Fprintf(w, "dry run: no GPU setting is changed and nothing is tuned\n")
	fmt.Fprintf(w, "device: %s (%s), %s backend; now: SM clock %d MHz, memory clock %d MHz, power limit %g W (settable %g–%g W)\n",
		d.Name, d.UUID, d.Backend, d.SMClockMHz, d.MemClockMHz, d.PowerLimitW, p.MinPowerW, p.MaxPowerW)
	fmt.Fprintln(w, "GPU-setting parameters:")
	for _, q := range p.Params {
		switch q.Name {
		case backend.ParamCoreClock:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetGpuLockedClocks(f, f); nvmlDeviceSetApplicationsClocks where locked clocks are not supported\n", q.Name, describeValues(q, "MHz"))
		case backend.ParamMemClock:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetMemoryLockedClocks(m, m); nvmlDeviceSetApplicationsClocks where not supported\n", q.Name, describeValues(q, "MHz"))
		case backend.ParamPowerLimit:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetPowerManagementLimit\n", q.Name, describeValues(q, "W"))
		}
	}
	fmt.Fprintf(w, "space: %d valid configurations\n", p.SpaceSize)
	if p.SpaceSize > 0 {
		fmt.Fprintf(w, "first setting: %s\n", strings.Join(p.FirstSetting, " "))
	}
	fmt.Fprintf(w, "journal: %s (written before the first change; the originals are restored at exit, or by gtune restore)\n", p.Journal)
	if p.Allowed {
		fmt.Fprintln(w, "permission: --allow-gpu-settings given")
	} else {
		fmt.Fprintln(w, "permission: --allow-gpu-settings not given; a real run would refuse")
	}
}

func describeValues(p space.Param, unit string) string {
	if len(p.Values) <= 6 {
		var vs []string
		for _, v := range p.Values {
			vs = append(vs, v.String())
		}
		return fmt.Sprintf("%s %s", strings.Join(vs, ", "), unit)
	}
	return fmt.Sprintf("%d values, %s .. %s %s", len(p.Values), p.Values[0].String(), p.Values[len(p.Values)-1].String(), unit)
}
